/**
 * The page's palette, in one place: the reward modes' colours, line dashes and marker shapes (the same
 * on the lesson's charts, its table, the live charts and the inspector, so "orange, dashed, triangles"
 * means outcome reward wherever a reader meets it), the per-agent lines' colour-blind-safe colours and
 * dashes, the heat maps' ramp, and the muted text greys. Every colour here holds WCAG 2.2 AA on white:
 * text 4.5:1 or more, lines and markers 3:1 or more (test/unit/ui/colours.test.ts measures each).
 * Process and outcome differ by more than hue (1.4:1 in luminance): solid with circles against dashed
 * with triangles, so a greyscale print or a washed-out projector still tells them apart.
 *
 * For: any component that draws a run. Not for: deciding what to draw.
 * Example: MODE_COLOUR[config.rewards.mode] -> '#1e40af' for a process-reward run;
 *          MODE_STYLE.outcome -> { dash: [6, 3], marker: 'triangle' }; markerPath('square', 10, 10, 2) -> 'M8.2,8.2h3.6v3.6h-3.6Z'
 */

/** Each reward mode's colour: text on white 4.5:1 or more (process 8.7:1, outcome 5.2:1). */
export const MODE_COLOUR = { process: '#1e40af', outcome: '#c2410c', mixed: '#7c3aed', counterfactual: '#0f766e', groups: '#a16207' } as const;
export type RewardModeName = keyof typeof MODE_COLOUR;

/** The shapes a series' points are drawn as (markerPath). */
export type MarkerShape = 'circle' | 'triangle' | 'square' | 'diamond' | 'plus' | 'triangleDown';

/** A line's look beside its colour: its dash in CSS pixels (none: solid) and its points' shape. */
export interface LineStyle { dash?: number[]; marker: MarkerShape }

/** Each reward mode's dash and marker: no two alike, so the modes are told apart without their hue. */
export const MODE_STYLE: Record<RewardModeName, LineStyle> = {
  process: { marker: 'circle' },
  outcome: { dash: [6, 3], marker: 'triangle' },
  mixed: { dash: [2, 2], marker: 'diamond' },
  counterfactual: { dash: [9, 3, 2, 3], marker: 'plus' },
  groups: { dash: [4, 2], marker: 'triangleDown' },
};

/** The untrained team (iteration 0) where it is drawn apart from the runs: a dark grey (6.0:1), dotted, with squares. */
export const BASE_COLOUR = '#5b6474';
export const BASE_STYLE: LineStyle = { dash: [1, 2], marker: 'square' };

/** Neutral lines (a mean reward, a prediction): 7.6:1. */
export const NEUTRAL_COLOUR = '#4b5563';

/** Muted text (captions, "no data yet"): 6.9:1 on white, 6.3:1 on the page's grey, 4.7:1 or more on the inspector's tinted cards. */
export const MUTED_TEXT = '#525b6b';

/** Signed bars (a credit above or below zero): blue and vermillion, apart for every colour vision (the sign is also written). */
export const POSITIVE_COLOUR = '#0072b2';
export const NEGATIVE_COLOUR = '#d55e00';

/**
 * The palette as CSS custom properties, set on <html> once at start (main.ts), so a component's style
 * writes `color: var(--text-muted)` and never a colour of its own.
 */
export const CSS_COLOURS: Record<string, string> = {
  '--text-muted': MUTED_TEXT,
  '--mode-process': MODE_COLOUR.process,
  '--mode-outcome': MODE_COLOUR.outcome,
  '--base': BASE_COLOUR,
  '--neutral': NEUTRAL_COLOUR,
  '--positive': POSITIVE_COLOUR,
  '--negative': NEGATIVE_COLOUR,
};
export function applyCssColours(root: HTMLElement): void {
  for (const [k, v] of Object.entries(CSS_COLOURS)) root.style.setProperty(k, v);
}

/**
 * Per-agent lines (executor, verifier, agent 1...): Okabe and Ito's colour-blind-safe palette, its light
 * members darkened to 3:1 on white (orange, sky blue, yellow), each with its own dash: neighbours
 * differ in hue for every colour vision, and in dash for none at all.
 */
export const AGENT_COLOURS = ['#0072b2', '#d55e00', '#009e73', '#aa3377', '#1f2937', '#9a6700', '#2b7bb0', '#6b6b00'] as const;
export const AGENT_DASHES: (number[] | undefined)[] = [undefined, [6, 3], [2, 2], [9, 3, 2, 3], [4, 2], [1, 3], [12, 3], [5, 2, 1, 2]];
const AGENT_MARKERS: MarkerShape[] = ['circle', 'triangle', 'square', 'diamond', 'plus', 'triangleDown'];

/** The i-th agent line's colour, dash and marker (cycling; with 8 colours and 6 markers no two of the first 24 agree in all three). */
export function agentStyle(i: number): LineStyle & { colour: string } {
  return { colour: AGENT_COLOURS[i % AGENT_COLOURS.length], dash: AGENT_DASHES[i % AGENT_DASHES.length], marker: AGENT_MARKERS[i % AGENT_MARKERS.length] };
}

/** A mode's colour, for a mode read from a saved run's settings (unknown: process, the default). */
export function modeColour(mode: unknown): string {
  return MODE_COLOUR[modeName(mode)];
}
/** A mode's dash and marker (unknown: process's). */
export function modeStyle(mode: unknown): LineStyle {
  return MODE_STYLE[modeName(mode)];
}
function modeName(mode: unknown): RewardModeName {
  return (typeof mode === 'string' && mode in MODE_COLOUR ? mode : 'process') as RewardModeName;
}

/** A dash as an SVG stroke-dasharray ('6 3'; solid: undefined). */
export const dashArray = (dash: number[] | undefined): string | undefined => (dash?.length ? dash.join(' ') : undefined);

const f = (v: number) => String(+v.toFixed(2));
/**
 * A marker as an SVG path of radius about `r` centred on (x, y): drawn by the SVG charts as a <path> and by
 * the canvas charts as a Path2D, so both draw the same shapes. The triangles and the diamond are a little
 * larger than `r`, so each shape covers about the same area.
 */
export function markerPath(shape: MarkerShape, x: number, y: number, r: number): string {
  switch (shape) {
    case 'circle': return `M${f(x - r)},${f(y)}a${f(r)},${f(r)} 0 1,0 ${f(2 * r)},0a${f(r)},${f(r)} 0 1,0 ${f(-2 * r)},0Z`;
    case 'square': return `M${f(x - 0.9 * r)},${f(y - 0.9 * r)}h${f(1.8 * r)}v${f(1.8 * r)}h${f(-1.8 * r)}Z`;
    case 'diamond': return `M${f(x)},${f(y - 1.3 * r)}L${f(x + 1.3 * r)},${f(y)}L${f(x)},${f(y + 1.3 * r)}L${f(x - 1.3 * r)},${f(y)}Z`;
    case 'triangle': return `M${f(x)},${f(y - 1.35 * r)}L${f(x + 1.2 * r)},${f(y + 0.85 * r)}L${f(x - 1.2 * r)},${f(y + 0.85 * r)}Z`;
    case 'triangleDown': return `M${f(x)},${f(y + 1.35 * r)}L${f(x + 1.2 * r)},${f(y - 0.85 * r)}L${f(x - 1.2 * r)},${f(y - 0.85 * r)}Z`;
    case 'plus': {
      const a = 1.3 * r;
      const b = 0.4 * r;
      return `M${f(x - b)},${f(y - a)}h${f(2 * b)}v${f(a - b)}h${f(a - b)}v${f(2 * b)}h${f(b - a)}v${f(a - b)}h${f(-2 * b)}v${f(b - a)}`
        + `h${f(b - a)}v${f(-2 * b)}h${f(a - b)}Z`;
    }
  }
}

/**
 * A legend's swatch as a small SVG (a stretch of the line in its dash, its marker in the middle): the same
 * picture the chart draws, for the uPlot legends (as a CSS background) and the lesson's legends (inline).
 */
export function swatchSvg(colour: string, style: Partial<LineStyle>, opts: { hollow?: boolean; width?: number } = {}): string {
  const dash = dashArray(style.dash);
  const line = `<line x1="1" x2="23" y1="6" y2="6" stroke="${colour}" stroke-width="${opts.width ?? 2}"${dash ? ` stroke-dasharray="${dash}"` : ''}/>`;
  const fill = opts.hollow ? '#fff' : colour;
  const mark = style.marker ? `<path d="${markerPath(style.marker, 12, 6, 3.2)}" fill="${fill}" stroke="${colour}" stroke-width="1.2"/>` : '';
  return `<svg xmlns="http://www.w3.org/2000/svg" width="24" height="12" viewBox="0 0 24 12">${line}${mark}</svg>`;
}
/** swatchSvg as a CSS background value. */
export function swatchBackground(colour: string, style: Partial<LineStyle>, opts: { hollow?: boolean; width?: number } = {}): string {
  return `url("data:image/svg+xml,${encodeURIComponent(swatchSvg(colour, style, opts))}") center / contain no-repeat`;
}

/**
 * The heat maps' ramp, t = 0 (worse) to 1 (better): viridis, dark purple through teal to yellow. It reads
 * for every colour vision and in greyscale (its lightness rises all the way), where the red-to-green ramp
 * it replaces was one colour for a deutan or protan reader.
 */
const VIRIDIS = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
export function heatColour(t: number): string {
  const u = Math.max(0, Math.min(1, t)) * (VIRIDIS.length - 1);
  const i = Math.min(VIRIDIS.length - 2, Math.floor(u));
  const k = u - i;
  const c = VIRIDIS[i].map((a, j) => Math.round(a + (VIRIDIS[i + 1][j] - a) * k));
  return `rgb(${c[0]}, ${c[1]}, ${c[2]})`;
}
/** The ramp as a CSS gradient for a heat map's scale bar (worse on the left unless `flip`). */
export function heatGradient(flip = false): string {
  const stops = VIRIDIS.map((_, i) => heatColour(i / (VIRIDIS.length - 1)));
  return `linear-gradient(90deg, ${(flip ? stops.reverse() : stops).join(', ')})`;
}
/** Cells with no value. */
export const HEAT_NONE = '#e5e7eb';
