// A result table as a picture (src/ui/export-table.ts): where each cell, rule and line of the caption goes, hand-worked
// with text 7 px a character, and the same layout as SVG text and as canvas calls (a recording 2-D context stands
// in for the browser's canvas, which Node has not got: the PNG's pixels are the browser's own drawing).
import { describe, expect, it } from 'vitest';
import { drawTable, FONTS, tableLayout, tableSvg, wrap } from '../../../src/ui/export-table.ts';

const measure = (t: string) => t.length * 7;

describe('a result table as a picture', () => {
  it('places the caption, each column at its widest text, rules under the header and the last row', () => {
    const l = tableLayout({ title: 'Gap', head: [['n', 'gap']], body: [['2', '+5 [1, 9]']] }, measure);
    // columns: x = 12, then 12 + 7 ('n') + 16 = 35; the table 7 + 16 + 63 = 86 wide, the picture 360 + 24 (its least width).
    expect(l.width).toBe(384);
    expect(l.height).toBe(28 + 2 * 20 + 4);
    expect(l.texts.map((t) => [t.x, t.y, t.text])).toEqual([[12, 20, 'Gap'], [12, 42, 'n'], [35, 42, 'gap'], [12, 62, '2'], [35, 62, '+5 [1, 9]']]);
    expect(l.texts[1].font).toBe(FONTS.head);
    expect(l.texts[3].font).toBe(FONTS.cell);
    expect(l.rules).toEqual([{ x1: 12, x2: 98, y: 48 }, { x1: 12, x2: 98, y: 68 }]);
  });

  it('wraps the note to the picture\'s width and moves the table under it', () => {
    expect(wrap('aa bb cc', 35, measure)).toEqual(['aa bb', 'cc']); // 'aa bb' is 35 px, 'aa bb cc' 56
    const note = `greedy, 200 problems, 95 % intervals ${'x'.repeat(40)}`; // 37 + 1 + 40 characters: 546 px, over 360
    const l = tableLayout({ title: 'T', note, head: [['a']], body: [] }, measure);
    expect(l.texts.filter((t) => t.font === FONTS.note).map((t) => [t.y, t.text])).toEqual([[36, 'greedy, 200 problems, 95 % intervals'], [52, 'x'.repeat(40)]]);
    expect(l.texts.at(-1)).toMatchObject({ y: 28 + 2 * 16 + 14, text: 'a' });
  });

  it('a cell over several columns widens the last of them only when its text needs it', () => {
    const l = tableLayout({
      title: 'Methods',
      head: [['method', 'costs', '', 'gets']],
      body: [['untrained', 'before any training at all', '', '40.0 % [30.1, 50.2]'], ['outcome', '12', '3', '51.0 % [41.0, 61.0]']],
      spans: [[1, 2, 0, 1], [1, 2, 0, 1], [1, 1, 1, 1]],
    }, measure);
    // widths from the cells of one column: 63 ('untrained'), 14 ('12'; 'costs' spans two), 7 ('3'), 133 ('40.0 % [30.1, 50.2]');
    // 'costs' (35 px) fits the 14 + 16 + 7 = 37 its two columns give; 'before any training at all' (182 px) does not: column 2 grows by 145.
    const x = [...new Set(l.texts.filter((t) => t.y === 82).map((t) => t.x))];
    expect(x).toEqual([12, 12 + 63 + 16, 12 + 63 + 16 + 14 + 16, 12 + 63 + 16 + 14 + 16 + (7 + 145) + 16]);
  });

  it('draws the same layout as SVG text (escaped) and on a canvas', () => {
    const l = tableLayout({ title: 'A < B & C', head: [['n']], body: [['2']] }, measure);
    const svg = tableSvg(l);
    expect(svg).toMatch(/^<svg xmlns="http:\/\/www.w3.org\/2000\/svg" width="384" height="72">/);
    expect(svg).toContain('<text x="12" y="20" font-family="system-ui, sans-serif" font-size="15" font-weight="600" fill="#1d2430" xml:space="preserve">A &lt; B &amp; C</text>');
    expect(svg).toContain('<line x1="12" x2="19" y1="48" y2="48"');
    const calls: string[] = [];
    const ctx = new Proxy({}, {
      get: (_, k) => (k === 'font' || k === 'fillStyle' || k === 'strokeStyle' || k === 'lineWidth' ? undefined : (...a: unknown[]) => calls.push(`${String(k)}(${a.join(',')})`)),
      set: (_, k, v) => (calls.push(`${String(k)}=${v}`), true),
    }) as unknown as CanvasRenderingContext2D;
    drawTable(ctx, l, 2);
    expect(calls).toContain('scale(2,2)');
    expect(calls).toContain('fillRect(0,0,384,72)');
    expect(calls.filter((c) => c.startsWith('fillText'))).toEqual(['fillText(A < B & C,12,20)', 'fillText(n,12,42)', 'fillText(2,12,62)']);
    expect(calls.filter((c) => c.startsWith('lineTo'))).toEqual(['lineTo(19,48)', 'lineTo(19,68)']);
  });
});
