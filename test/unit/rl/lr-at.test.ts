/** The learning-rate schedule against hand-worked values of the half cosine. */
import { describe, expect, it } from 'vitest';
import { lrAt } from '../../../src/core/rl/adamw.ts';

describe('lrAt', () => {
  it('is constant at lrFinal 1 and for a one-iteration run', () => {
    for (const it of [1, 5, 40]) expect(lrAt(0.002, 1, it, 40)).toBe(0.002);
    expect(lrAt(0.002, 0.1, 1, 1)).toBe(0.002);
  });

  it('falls on a half cosine from lr to lr x lrFinal', () => {
    // t = (it - 1) / (iterations - 1); lr (f + (1 - f)(1 + cos(pi t)) / 2)
    expect(lrAt(0.002, 0.1, 1, 21)).toBeCloseTo(0.002, 12);
    expect(lrAt(0.002, 0.1, 11, 21)).toBeCloseTo(0.002 * (0.1 + 0.9 * 0.5), 12); // t = 1/2: cos = 0
    expect(lrAt(0.002, 0.1, 6, 21)).toBeCloseTo(0.002 * (0.1 + 0.9 * 0.5 * (1 + Math.SQRT1_2)), 12); // t = 1/4
    expect(lrAt(0.002, 0.1, 21, 21)).toBeCloseTo(0.0002, 12);
    expect(lrAt(0.002, 0, 21, 21)).toBe(0);
  });

  it('holds at lr x lrFinal past the last iteration (a resumed run given more)', () => {
    expect(lrAt(0.002, 0.1, 30, 21)).toBeCloseTo(0.0002, 12);
  });
});
