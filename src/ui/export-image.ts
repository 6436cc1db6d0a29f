/**
 * A chart of the page as a PNG for slides: its caption on top, the chart as drawn (its canvas: lines,
 * error bars, axes), and under it each line's latest value with its 95 % interval where it has one, so a
 * picture pasted into a slide still says how sure each number is.
 *
 * For: Chart.svelte and AgentHeat.svelte's "PNG" buttons. Not for: the data (Metrics (.csv) exports that).
 * Example: legendLines([{label: 'process · greedy', values: [0.5, 0.6], band: {low: [0.4, 0.5], high: [0.6, 0.7]}}], [1, 2], true)
 *   -> ['process · greedy: 60.0 % [50.0, 70.0] at iteration 2']
 *          fileNameOf('Held-out accuracy (team, 95 % interval)') -> 'held-out-accuracy-team-95-interval.png'
 */

import { markerPath, type MarkerShape } from './colours.ts';

/** A legend line's key: the line as drawn (its colour, dash and marker), before its words. */
export interface LegendKey { colour: string; dash?: number[]; marker?: MarkerShape; hollow?: boolean }

export interface LegendSeries {
  label: string;
  values: (number | null)[];
  band?: { low: (number | null)[]; high: (number | null)[] };
}

const num = (v: number, percent: boolean) => (percent ? (v * 100).toFixed(1) : String(+v.toPrecision(3)));

/** Each series' latest value (and its interval), in words: the picture's legend. */
export function legendLines(series: LegendSeries[], xs: number[], percent = false): string[] {
  return series.map((s) => {
    let j = s.values.length - 1;
    while (j >= 0 && (s.values[j] === null || !Number.isFinite(s.values[j]!))) j--;
    if (j < 0) return `${s.label}: no value yet`;
    const v = s.values[j]!;
    const lo = s.band?.low[j];
    const hi = s.band?.high[j];
    const interval = lo != null && hi != null ? ` [${num(lo, percent)}, ${num(hi, percent)}]` : '';
    return `${s.label}: ${num(v, percent)}${percent ? ' %' : ''}${interval} at iteration ${xs[j] ?? j}`;
  });
}

/** A file name from a caption: lower case, words joined by dashes. */
export function fileNameOf(title: string, ext = 'png'): string {
  const base = title.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 60) || 'chart';
  return `${base}.${ext}`;
}

/**
 * The picture: caption, the canvas scaled to CSS pixels x `scale`, legend lines, each after its key (the line's
 * dash and marker, so the legend still reads in greyscale) where `keys` gives one; a PNG blob.
 */
export async function chartPng(opts: { title: string; note?: string; canvas: HTMLCanvasElement; lines: string[]; keys?: (LegendKey | null)[]; scale?: number })
  : Promise<Blob> {
  const scale = opts.scale ?? 2;
  const w = Math.max(opts.canvas.clientWidth || opts.canvas.width, 320);
  const h = opts.canvas.clientHeight || opts.canvas.height;
  const line = 17;
  const top = 28 + (opts.note ? line : 0);
  const out = document.createElement('canvas');
  out.width = Math.round((w + 24) * scale);
  out.height = Math.round((top + h + 10 + opts.lines.length * line + 8) * scale);
  const ctx = out.getContext('2d')!;
  ctx.scale(scale, scale);
  ctx.fillStyle = '#fff';
  ctx.fillRect(0, 0, w + 24, out.height / scale);
  ctx.fillStyle = '#1d2430';
  ctx.font = '600 15px system-ui, sans-serif';
  ctx.fillText(opts.title, 12, 20);
  if (opts.note) {
    ctx.font = '12px system-ui, sans-serif';
    ctx.fillStyle = '#4b5563';
    ctx.fillText(opts.note, 12, 20 + line);
  }
  ctx.drawImage(opts.canvas, 12, top, w, h);
  ctx.font = '13px system-ui, sans-serif';
  ctx.fillStyle = '#1d2430';
  opts.lines.forEach((l, i) => {
    const y = top + h + 10 + (i + 1) * line - 4;
    const key = opts.keys?.[i];
    if (key) {
      ctx.save();
      ctx.strokeStyle = key.colour;
      ctx.lineWidth = 2;
      ctx.setLineDash(key.dash ?? []);
      ctx.beginPath();
      ctx.moveTo(12, y - 4);
      ctx.lineTo(36, y - 4);
      ctx.stroke();
      if (key.marker) {
        const p = new Path2D(markerPath(key.marker, 24, y - 4, 3.5));
        ctx.setLineDash([]);
        ctx.lineWidth = 1.2;
        ctx.fillStyle = key.hollow ? '#fff' : key.colour;
        ctx.fill(p);
        ctx.stroke(p);
      }
      ctx.restore();
    }
    ctx.fillText(l, key ? 42 : 12, y);
  });
  return new Promise((resolve, reject) => out.toBlob((b) => (b ? resolve(b) : reject(new Error('the browser could not write the PNG'))), 'image/png'));
}

/** Saves a blob as a file (the browser's download). */
export function download(blob: Blob, name: string): void {
  const url = URL.createObjectURL(blob);
  const a = Object.assign(document.createElement('a'), { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 5000);
}

/** Presentation properties copied onto each node of an exported SVG (the page's scoped CSS does not travel with it). */
const STYLED = ['font-size', 'font-family', 'font-weight', 'fill', 'stroke', 'stroke-width', 'stroke-dasharray', 'opacity'] as const;

/**
 * A figure of the page drawn in SVG (the lesson's and Scale the team's charts) as a standalone SVG file: its caption
 * on top, the chart with its styles inlined (its error bars are its own lines), and its legend's text under it.
 */
export function figureSvg(figure: HTMLElement): { svg: string; name: string } {
  const chart = figure.querySelector('svg');
  if (!chart) throw new Error('this figure holds no SVG chart');
  // The caption's words, without its buttons and its data table's toggle.
  const caption = figure.querySelector('figcaption')?.cloneNode(true) as HTMLElement | undefined;
  caption?.querySelectorAll('button, details').forEach((n) => n.remove());
  const title = (caption?.textContent ?? '').replace(/\s+/g, ' ').trim();
  // The legend: a line per item that has a key (its line's dash and marker, .key svg), else a line per legend.
  const words = (n: Element) => (n.textContent ?? '').replace(/\s+/g, ' ').trim();
  const legend = [...figure.querySelectorAll('.legend')].flatMap((l) => {
    const items = [...l.children].filter((c) => c.querySelector('.key svg'));
    return items.length ? items.map((c) => ({ key: c.querySelector('.key svg')!.outerHTML, text: words(c) })) : [{ key: '', text: words(l) }];
  }).filter((l) => l.text);
  const clone = chart.cloneNode(true) as SVGSVGElement;
  const from = [chart, ...chart.querySelectorAll('*')];
  const to = [clone, ...clone.querySelectorAll('*')];
  from.forEach((el, i) => {
    const cs = getComputedStyle(el);
    const style = STYLED.map((p) => `${p}:${cs.getPropertyValue(p)}`).join(';');
    (to[i] as SVGElement).setAttribute('style', style);
  });
  const box = chart.getBoundingClientRect();
  const w = Math.round(box.width);
  const h = Math.round(box.height);
  clone.setAttribute('x', '10');
  clone.setAttribute('y', '30');
  clone.setAttribute('width', String(w));
  clone.setAttribute('height', String(h));
  const esc = (t: string) => t.replace(/&/g, '&amp;').replace(/</g, '&lt;');
  const font = 'font-family="system-ui, sans-serif" fill="#1d2430"';
  const lines = legend.map((l, i) => {
    const y = 30 + h + 18 + i * 16;
    const key = l.key ? l.key.replace('<svg', `<svg x="10" y="${y - 10}"`) : '';
    return `${key}<text x="${l.key ? 40 : 10}" y="${y}" font-size="12" ${font}>${esc(l.text)}</text>`;
  });
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${w + 20}" height="${30 + h + 10 + legend.length * 16 + 8}">`
    + '<rect width="100%" height="100%" fill="#fff"/>'
    + `<text x="10" y="20" font-size="14" font-weight="600" font-family="system-ui, sans-serif" fill="#1d2430">${esc(title)}</text>`
    + `${new XMLSerializer().serializeToString(clone)}${lines.join('')}</svg>`;
  return { svg, name: fileNameOf(title, 'svg') };
}

/** Saves a figure's SVG chart (figureSvg) as a file. */
export function saveFigureSvg(figure: Element | null): void {
  if (!(figure instanceof HTMLElement)) return;
  const { svg, name } = figureSvg(figure);
  download(new Blob([svg], { type: 'image/svg+xml' }), name);
}
