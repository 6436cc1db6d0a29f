/**
 * A result table of the page (the lesson's, the credit methods', Scale the team's) as a picture for a slide,
 * PNG or SVG: its caption on top, a note under it (what the intervals are), and every cell as the page shows
 * it, intervals included, so a table pasted into a slide still says how sure each number is. One layout
 * (tableLayout, pure: positions of texts and rules) is drawn twice: as SVG text (tableSvg) and on a canvas
 * (tablePng). Charts: export-image.ts.
 *
 * For: the tables' "PNG" and "SVG" buttons (saveTable). Not for: the data (Metrics (.csv) exports that).
 * Example, 7 px a character (`measure = (t) => t.length * 7`):
 *   tableLayout({ title: 'Gap', head: [['n', 'gap']], body: [['2', '+5 [1, 9]']] }, measure)
 *   -> columns at x = 12 and 12 + 7 + 16 = 35 (the widest text of each, 16 px between), the table 86 px wide,
 *      the picture 360 + 2 x 12 = 384 wide (360 at least) and 28 + 2 x 20 + 4 = 72 high; the header row's texts
 *      at y = 28 + 14 = 42, a rule under it at y = 48, the row at y = 62, the last rule at y = 68
 */

import { download, fileNameOf } from './export-image.ts';

/** What a table says: its caption, an optional note, its header rows and body rows (cells as text; '' under a span). */
export interface TableGrid {
  title: string;
  note?: string;
  head: string[][];
  body: string[][];
  /** Per row of head then body: how many columns each cell spans (1 where absent). */
  spans?: number[][];
}

export interface TableText { x: number; y: number; text: string; font: string; colour: string }
export interface TableLayout { width: number; height: number; texts: TableText[]; rules: { x1: number; x2: number; y: number }[] }

export const FONTS = { title: '600 15px system-ui, sans-serif', note: '12px system-ui, sans-serif', head: '600 13px system-ui, sans-serif', cell: '13px system-ui, sans-serif' };
const INK = '#1d2430';
const GREY = '#4b5563';
const PAD = 12; // the picture's margin
const GAP = 16; // between columns
const ROW = 20; // a row's height
const LINE = 16; // a note line's height

/** Words of `text` in lines no wider than `max` (a word longer than `max` keeps a line of its own). */
export function wrap(text: string, max: number, measure: (t: string) => number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/).filter(Boolean)) {
    const next = line ? `${line} ${word}` : word;
    if (line && measure(next) > max) {
      lines.push(line);
      line = word;
    } else line = next;
  }
  if (line) lines.push(line);
  return lines;
}

/** Where each text and rule of the picture goes; `measure(text, font)` is the text's width in px. */
export function tableLayout(grid: TableGrid, measure: (text: string, font: string) => number): TableLayout {
  const rows = [...grid.head, ...grid.body];
  const cols = Math.max(1, ...rows.map((r) => r.length));
  const spanOf = (i: number, j: number) => Math.max(1, grid.spans?.[i]?.[j] ?? 1); // 0 or absent: a covered cell
  const fontOf = (i: number) => (i < grid.head.length ? FONTS.head : FONTS.cell);
  const widths = new Array<number>(cols).fill(0);
  rows.forEach((r, i) => r.forEach((t, j) => {
    if (spanOf(i, j) === 1) widths[j] = Math.max(widths[j], measure(t, fontOf(i)));
  }));
  // A cell over several columns widens the last of them when its text needs more than they give.
  rows.forEach((r, i) => r.forEach((t, j) => {
    const s = spanOf(i, j);
    if (s === 1) return;
    const last = Math.min(cols, j + s) - 1;
    const room = widths.slice(j, last + 1).reduce((a, b) => a + b, 0) + GAP * (last - j);
    widths[last] += Math.max(0, measure(t, fontOf(i)) - room);
  }));
  const xs = widths.map((_, j) => PAD + widths.slice(0, j).reduce((a, b) => a + b + GAP, 0));
  const tableWidth = widths.reduce((a, b) => a + b, 0) + GAP * (cols - 1);
  const inner = Math.max(tableWidth, measure(grid.title, FONTS.title), 360);
  const noteLines = grid.note ? wrap(grid.note, inner, (t) => measure(t, FONTS.note)) : [];
  const texts: TableText[] = [{ x: PAD, y: 20, text: grid.title, font: FONTS.title, colour: INK }];
  noteLines.forEach((l, k) => texts.push({ x: PAD, y: 20 + LINE * (k + 1), text: l, font: FONTS.note, colour: GREY }));
  const top = 28 + LINE * noteLines.length;
  const rules: TableLayout['rules'] = [];
  rows.forEach((r, i) => {
    const y = top + ROW * i;
    r.forEach((t, j) => { if (t) texts.push({ x: xs[j], y: y + 14, text: t, font: fontOf(i), colour: INK }); });
    if (i === grid.head.length - 1 || i === rows.length - 1) rules.push({ x1: PAD, x2: PAD + tableWidth, y: y + ROW });
  });
  return { width: Math.ceil(inner + 2 * PAD), height: top + ROW * rows.length + 4, texts, rules };
}

const esc = (t: string) => t.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** The layout as a standalone SVG file's text. */
export function tableSvg(layout: TableLayout): string {
  const text = (t: TableText) => {
    const [, weight, size] = /^(?:(\d+) )?(\d+)px/.exec(t.font) ?? [];
    return `<text x="${t.x}" y="${t.y}" font-family="system-ui, sans-serif" font-size="${size}"${weight ? ` font-weight="${weight}"` : ''}`
      + ` fill="${t.colour}" xml:space="preserve">${esc(t.text)}</text>`;
  };
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${layout.width}" height="${layout.height}">`
    + '<rect width="100%" height="100%" fill="#fff"/>'
    + layout.rules.map((r) => `<line x1="${r.x1}" x2="${r.x2}" y1="${r.y}" y2="${r.y}" stroke="#9aa3b2" stroke-width="1"/>`).join('')
    + layout.texts.map(text).join('') + '</svg>';
}

/** The layout drawn on a canvas 2-D context, `scale` device pixels a CSS pixel. */
export function drawTable(ctx: CanvasRenderingContext2D, layout: TableLayout, scale = 1): void {
  ctx.save();
  ctx.scale(scale, scale);
  ctx.fillStyle = '#fff';
  ctx.fillRect(0, 0, layout.width, layout.height);
  ctx.strokeStyle = '#9aa3b2';
  ctx.lineWidth = 1;
  for (const r of layout.rules) {
    ctx.beginPath();
    ctx.moveTo(r.x1, r.y);
    ctx.lineTo(r.x2, r.y);
    ctx.stroke();
  }
  for (const t of layout.texts) {
    ctx.font = t.font;
    ctx.fillStyle = t.colour;
    ctx.fillText(t.text, t.x, t.y);
  }
  ctx.restore();
}

/** What a <table> shows, cell by cell (a cell spanning columns keeps its text in its first; rows spanned get ''). */
export function tableGridOf(table: HTMLTableElement, title: string, note?: string): TableGrid {
  const read = (rows: HTMLTableRowElement[]) => {
    const out: string[][] = [];
    const spans: number[][] = [];
    rows.forEach((tr, i) => {
      out[i] ??= [];
      spans[i] ??= [];
      let j = 0;
      for (const cell of tr.cells) {
        while (out[i][j] !== undefined) j++;
        const text = ((cell as HTMLElement).innerText || cell.textContent || '').replace(/\s+/g, ' ').trim(); // innerText: a <br> is a space
        for (let di = 0; di < cell.rowSpan; di++) {
          out[i + di] ??= [];
          spans[i + di] ??= [];
          for (let dj = 0; dj < cell.colSpan; dj++) out[i + di][j + dj] = di === 0 && dj === 0 ? text : '';
        }
        spans[i][j] = cell.colSpan;
        j += cell.colSpan;
      }
    });
    return { out: out.map((r) => Array.from(r, (t) => t ?? '')), spans };
  };
  const head = read([...(table.tHead?.rows ?? [])]);
  const body = read([...table.tBodies].flatMap((b) => [...b.rows]));
  return { title, note, head: head.out, body: body.out, spans: [...head.spans, ...body.spans] };
}

/** A text's width in px, as the browser draws it in `font`. */
function browserMeasure(): (text: string, font: string) => number {
  const ctx = document.createElement('canvas').getContext('2d')!;
  return (text, font) => {
    ctx.font = font;
    return Math.ceil(ctx.measureText(text).width);
  };
}

/** The table as a PNG blob (2 device pixels a CSS pixel by default). */
export function tablePng(grid: TableGrid, scale = 2): Promise<Blob> {
  const layout = tableLayout(grid, browserMeasure());
  const out = document.createElement('canvas');
  out.width = Math.round(layout.width * scale);
  out.height = Math.round(layout.height * scale);
  drawTable(out.getContext('2d')!, layout, scale);
  return new Promise((resolve, reject) => out.toBlob((b) => (b ? resolve(b) : reject(new Error('the browser could not write the PNG'))), 'image/png'));
}

/** Saves a table's picture as a file: `kind` 'png' or 'svg', named after its caption. */
export async function saveTable(grid: TableGrid, kind: 'png' | 'svg'): Promise<void> {
  const name = fileNameOf(grid.title, kind);
  if (kind === 'svg') download(new Blob([tableSvg(tableLayout(grid, browserMeasure()))], { type: 'image/svg+xml' }), name);
  else download(await tablePng(grid), name);
}
