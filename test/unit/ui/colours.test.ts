/**
 * The page's palette (src/ui/colours.ts) against WCAG 2.2 AA, measured with WCAG's relative luminance
 * (checked on WebAIM's reference pair: #767676 on white is 4.54:1): text 4.5:1, lines and markers 3:1;
 * process and outcome told apart without hue; the heat ramp's lightness rising all the way.
 */
import { describe, expect, it } from 'vitest';
import {
  AGENT_COLOURS, agentStyle, BASE_COLOUR, heatColour, markerPath, MODE_COLOUR, MODE_STYLE, MUTED_TEXT, NEGATIVE_COLOUR, NEUTRAL_COLOUR,
  POSITIVE_COLOUR, swatchSvg,
} from '../../../src/ui/colours.ts';
import { scoreColour } from '../../../src/ui/credit.ts';

/** sRGB 0..255 from '#rrggbb', 'rgb(r, g, b)' or 'hsl(h s% l%)'. */
function rgb(c: string): number[] {
  if (c.startsWith('#')) return [1, 3, 5].map((i) => parseInt(c.slice(i, i + 2), 16));
  const n = c.match(/[\d.]+/g)!.map(Number);
  if (c.startsWith('rgb')) return n.slice(0, 3);
  const [h, s, l] = [n[0], n[1] / 100, n[2] / 100];
  const a = s * Math.min(l, 1 - l);
  const f = (k: number) => { const m = (k + h / 30) % 12; return l - a * Math.max(-1, Math.min(m - 3, 9 - m, 1)); };
  return [f(0), f(8), f(4)].map((v) => Math.round(v * 255));
}
function luminance(c: string): number {
  const [r, g, b] = rgb(c).map((v) => v / 255).map((v) => (v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4));
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}
function contrast(a: string, b: string): number {
  const [x, y] = [luminance(a), luminance(b)].sort((p, q) => q - p);
  return (x + 0.05) / (y + 0.05);
}

describe('the palette on white and on the page\'s tints', () => {
  it('measures contrast as WCAG does', () => {
    expect(contrast('#767676', '#ffffff')).toBeCloseTo(4.54, 2);
    expect(contrast('#000000', '#ffffff')).toBeCloseTo(21, 5);
  });

  it('text colours: 4.5:1 or more (the reward modes name runs in text and table headers)', () => {
    for (const c of [...Object.values(MODE_COLOUR), BASE_COLOUR, NEUTRAL_COLOUR, MUTED_TEXT]) {
      expect(contrast(c, '#ffffff'), c).toBeGreaterThanOrEqual(4.5);
    }
    // Muted text on the page's grey and on the inspector's cards, tinted by score 0..10.
    expect(contrast(MUTED_TEXT, '#f4f6f9')).toBeGreaterThanOrEqual(4.5);
    for (let s = 0; s <= 10; s++) expect(contrast(MUTED_TEXT, scoreColour(s)), `score ${s}`).toBeGreaterThanOrEqual(4.5);
  });

  it('per-agent lines: 3:1 or more, each with its own colour and dash among the first eight', () => {
    for (const c of [...AGENT_COLOURS, POSITIVE_COLOUR, NEGATIVE_COLOUR]) expect(contrast(c, '#ffffff'), c).toBeGreaterThanOrEqual(3);
    const firstEight = Array.from({ length: 8 }, (_, i) => agentStyle(i));
    expect(new Set(firstEight.map((s) => s.colour)).size).toBe(8);
    expect(new Set(firstEight.map((s) => JSON.stringify(s.dash ?? []))).size).toBe(8);
  });

  it('process and outcome differ by more than hue: dash and marker', () => {
    expect(MODE_STYLE.process.dash).toBeUndefined();
    expect(MODE_STYLE.outcome.dash).toEqual([6, 3]);
    expect(MODE_STYLE.process.marker).not.toBe(MODE_STYLE.outcome.marker);
    const styles = Object.values(MODE_STYLE);
    expect(new Set(styles.map((s) => s.marker)).size).toBe(styles.length);
    expect(new Set(styles.map((s) => JSON.stringify(s.dash ?? []))).size).toBe(styles.length);
    // And in luminance, what a greyscale projector keeps: process the darker by 1.4:1 or more.
    expect(contrast(MODE_COLOUR.process, MODE_COLOUR.outcome)).toBeGreaterThanOrEqual(1.4);
  });

  it('markers as SVG paths, hand-worked', () => {
    expect(markerPath('square', 10, 10, 2)).toBe('M8.2,8.2h3.6v3.6h-3.6Z');
    expect(markerPath('triangle', 0, 0, 2)).toBe('M0,-2.7L2.4,1.7L-2.4,1.7Z');
    expect(markerPath('circle', 5, 5, 1)).toBe('M4,5a1,1 0 1,0 2,0a1,1 0 1,0 -2,0Z');
    expect(swatchSvg('#c2410c', MODE_STYLE.outcome)).toContain('stroke-dasharray="6 3"');
  });

  it('the heat ramp: dark to light all the way (it reads in greyscale), its ends viridis\'s', () => {
    expect(heatColour(0)).toBe('rgb(68, 1, 84)');
    expect(heatColour(1)).toBe('rgb(253, 231, 37)');
    expect(heatColour(-3)).toBe(heatColour(0));
    const l = Array.from({ length: 21 }, (_, i) => luminance(heatColour(i / 20)));
    for (let i = 1; i < l.length; i++) expect(l[i]).toBeGreaterThan(l[i - 1]);
  });
});
