/** bench page's paired ratio (page / CLI seconds per iteration), against the hand-worked example in its docstring. */
import { describe, expect, it } from 'vitest';
import { pairedRatio } from '../../../bench/page.ts';

describe('bench page: page / CLI seconds per iteration, paired by iteration', () => {
  it('is the geometric mean of the per-iteration ratios with a t interval on the log scale', () => {
    // The page's first iteration has no previous arrival (NaN) and is left out.
    const line = pairedRatio({ iterationSeconds: [9, 10, 10, 10] }, { iterationSeconds: [NaN, 11, 12, 13] });
    // log ratios ln 1.1, ln 1.2, ln 1.3: mean 0.18000 -> 1.197; sd 0.08352, t(2) = 4.3027 -> half 0.20748
    expect(line).toContain('3 iterations');
    expect(line).toContain('1.20x, 95 % interval [0.97x, 1.47x]');
  });

  it('says so when fewer than two iterations pair up', () => {
    expect(pairedRatio({ iterationSeconds: [9, 10] }, { iterationSeconds: [NaN, 11] })).toMatch(/fewer than two/);
  });
});
