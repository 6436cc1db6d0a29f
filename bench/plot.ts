/**
 * Small SVG line charts for benchmark reports: series of points with optional interval bars,
 * dashed or solid, on a linear or log y axis, several panels side by side in one file.
 *
 * For: bench/relay.ts's plots (the process-outcome gap against team size, learning curves). Not for:
 * the page's live charts (uPlot) or `mappa compare --svg` (src/cli/compare.ts draws its own).
 *
 * Example: svgPanels([{title: 'N = 4', xLabel: 'rollouts', yLabel: 'step accuracy',
 *            series: [{label: 'process', points: [{x: 0, y: 0.6}, {x: 80, y: 0.9}]}]}])
 *          -> '<svg ...>' with one 420 x 300 panel and a legend under it.
 */

export interface PlotPoint {
  x: number;
  y: number;
  /** Interval bar (drawn when both are given). */
  low?: number;
  high?: number;
  /** Marks a lower bound (drawn as an upward triangle instead of a dot). */
  atLeast?: boolean;
}

export interface PlotSeries {
  label: string;
  points: PlotPoint[];
  color?: string;
  dashed?: boolean;
  /** Points only, no line. */
  dotsOnly?: boolean;
}

export interface PlotPanel {
  title: string;
  xLabel: string;
  yLabel: string;
  series: PlotSeries[];
  logY?: boolean;
  yMin?: number;
  yMax?: number;
  /** Left end of the x axis (default: 0, or the smallest x when below it). */
  xMin?: number;
  /** Format of the y ticks (default: 2 significant digits). */
  yFormat?: (v: number) => string;
}

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b', '#17becf'];
const W = 420;
const H = 300;
const M = { left: 58, right: 16, top: 30, bottom: 44 };

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function niceStep(span: number, ticks: number): number {
  const raw = span / ticks;
  const mag = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 2.5, 5, 10].map((f) => f * mag).find((s) => s >= raw) ?? 10 * mag;
}

function panel(p: PlotPanel, ox: number): string[] {
  const pts = p.series.flatMap((s) => s.points);
  const ys = pts.flatMap((q) => [q.y, q.low ?? q.y, q.high ?? q.y]).filter((v) => Number.isFinite(v) && (!p.logY || v > 0));
  const xMax = Math.max(1e-9, ...pts.map((q) => q.x));
  const xMin = p.xMin ?? Math.min(0, ...pts.map((q) => q.x));
  let yMin = p.yMin ?? (p.logY ? Math.min(...ys) / 1.3 : Math.min(0, ...ys));
  let yMax = p.yMax ?? Math.max(...ys) * (p.logY ? 1.3 : 1.05);
  if (!(yMax > yMin)) yMax = yMin + 1;
  const ty = (v: number) => (p.logY ? (Math.log(v) - Math.log(yMin)) / (Math.log(yMax) - Math.log(yMin)) : (v - yMin) / (yMax - yMin));
  const pw = W - M.left - M.right;
  const ph = H - M.top - M.bottom;
  const X = (v: number) => (ox + M.left + ((v - xMin) / (xMax - xMin || 1)) * pw).toFixed(1);
  const Y = (v: number) => (M.top + ph - Math.min(1.02, Math.max(-0.02, ty(v))) * ph).toFixed(1);
  const fmt = p.yFormat ?? ((v: number) => `${+v.toPrecision(2)}`);
  const out: string[] = [];
  out.push(`<text x="${ox + M.left}" y="${M.top - 12}" font-size="12" font-weight="bold">${esc(p.title)}</text>`);
  const yTicks: number[] = [];
  if (p.logY) {
    for (let e = Math.floor(Math.log10(yMin)); e <= Math.ceil(Math.log10(yMax)); e++) {
      for (const f of [1, 2, 5]) if (f * 10 ** e >= yMin && f * 10 ** e <= yMax) yTicks.push(f * 10 ** e);
    }
  } else {
    const s = niceStep(yMax - yMin, 5);
    for (let v = Math.ceil(yMin / s) * s; v <= yMax + 1e-9; v += s) yTicks.push(+v.toFixed(10));
  }
  for (const v of yTicks) {
    out.push(`<line x1="${ox + M.left}" y1="${Y(v)}" x2="${ox + M.left + pw}" y2="${Y(v)}" stroke="#e5e5e5"/>`);
    out.push(`<text x="${ox + M.left - 6}" y="${Y(v)}" text-anchor="end" dominant-baseline="middle">${fmt(v)}</text>`);
  }
  const xs = niceStep(xMax - xMin, 6);
  for (let v = Math.ceil(xMin / xs) * xs; v <= xMax + 1e-9; v += xs) {
    out.push(`<line x1="${X(v)}" y1="${M.top + ph}" x2="${X(v)}" y2="${M.top + ph + 4}" stroke="#333"/>`);
    out.push(`<text x="${X(v)}" y="${M.top + ph + 16}" text-anchor="middle">${+v.toFixed(6)}</text>`);
  }
  out.push(`<line x1="${ox + M.left}" y1="${M.top}" x2="${ox + M.left}" y2="${M.top + ph}" stroke="#333"/>`);
  out.push(`<line x1="${ox + M.left}" y1="${M.top + ph}" x2="${ox + M.left + pw}" y2="${M.top + ph}" stroke="#333"/>`);
  out.push(`<text x="${ox + M.left + pw / 2}" y="${H - 8}" text-anchor="middle">${esc(p.xLabel)}</text>`);
  const cy = M.top + ph / 2;
  out.push(`<text x="${ox + 14}" y="${cy}" text-anchor="middle" transform="rotate(-90 ${ox + 14} ${cy})">${esc(p.yLabel)}</text>`);
  p.series.forEach((s, i) => {
    const color = s.color ?? COLORS[i % COLORS.length];
    const good = s.points.filter((q) => Number.isFinite(q.y) && (!p.logY || q.y > 0));
    if (!s.dotsOnly && good.length > 1) {
      out.push(`<polyline fill="none" stroke="${color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6 4"' : ''} points="${good.map((q) => `${X(q.x)},${Y(q.y)}`).join(' ')}"/>`);
    }
    for (const q of good) {
      if (q.low !== undefined && q.high !== undefined) {
        out.push(`<line x1="${X(q.x)}" y1="${Y(Math.max(q.low, p.logY ? yMin : -Infinity))}" x2="${X(q.x)}" y2="${Y(q.high)}" stroke="${color}" stroke-width="1.5"/>`);
      }
      const [cx, cyq] = [Number(X(q.x)), Number(Y(q.y))];
      out.push(q.atLeast
        ? `<path d="M${cx - 5},${cyq + 4} L${cx + 5},${cyq + 4} L${cx},${cyq - 5} Z" fill="${color}"/>`
        : `<circle cx="${cx}" cy="${cyq}" r="3" fill="${color}"/>`);
    }
  });
  return out;
}

/** One SVG with the panels side by side and one legend (the union of series labels) under them. */
export function svgPanels(panels: PlotPanel[], title?: string): string {
  const labels: { label: string; color: string; dashed: boolean }[] = [];
  for (const p of panels) {
    p.series.forEach((s, i) => {
      if (!labels.some((l) => l.label === s.label)) labels.push({ label: s.label, color: s.color ?? COLORS[i % COLORS.length], dashed: !!s.dashed });
    });
  }
  const top = title ? 26 : 0;
  const width = W * panels.length;
  const columns = Math.max(1, Math.min(3, Math.floor(width / 300)));
  const legendRows = Math.ceil(labels.length / columns);
  const height = top + H + 10 + legendRows * 18 + 8;
  const out: string[] = [`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`];
  out.push(`<rect x="0" y="0" width="${width}" height="${height}" fill="white"/>`);
  if (title) out.push(`<text x="12" y="18" font-size="14" font-weight="bold">${esc(title)}</text>`);
  out.push(`<g transform="translate(0 ${top})">`);
  panels.forEach((p, i) => out.push(...panel(p, i * W)));
  out.push('</g>');
  labels.forEach((l, i) => {
    const lx = 16 + (i % columns) * (width / columns);
    const ly = top + H + 14 + Math.floor(i / columns) * 18;
    out.push(`<line x1="${lx}" y1="${ly}" x2="${lx + 24}" y2="${ly}" stroke="${l.color}" stroke-width="2"${l.dashed ? ' stroke-dasharray="6 4"' : ''}/>`);
    out.push(`<text x="${lx + 30}" y="${ly}" dominant-baseline="middle">${esc(l.label)}</text>`);
  });
  out.push('</svg>');
  return out.join('\n') + '\n';
}
