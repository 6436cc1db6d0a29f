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

/** The picture: caption, the canvas scaled to CSS pixels x `scale`, legend lines; a PNG blob. */
export async function chartPng(opts: { title: string; note?: string; canvas: HTMLCanvasElement; lines: string[]; scale?: number }): Promise<Blob> {
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
  opts.lines.forEach((l, i) => ctx.fillText(l, 12, top + h + 10 + (i + 1) * line - 4));
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
