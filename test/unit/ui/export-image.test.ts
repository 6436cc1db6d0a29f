/** The words under an exported chart (src/ui/export-image.ts): each line's latest value with its interval, hand-worked. */
import { describe, expect, it } from 'vitest';
import { fileNameOf, legendLines } from '../../../src/ui/export-image.ts';

describe('an exported chart\'s legend', () => {
  it('the latest drawn value of each line, its 95 % interval where it has one, and its iteration', () => {
    expect(legendLines([
      { label: 'process · greedy', values: [0.5, 0.6, null], band: { low: [0.4, 0.5, null], high: [0.6, 0.7, null] } },
      { label: 'KL', values: [0.00012, 0.0345] },
      { label: 'empty', values: [null] },
    ], [0, 5, 10], true)).toEqual([
      'process · greedy: 60.0 % [50.0, 70.0] at iteration 5',
      'KL: 3.5 % at iteration 5',
      'empty: no value yet',
    ]);
    expect(legendLines([{ label: 'KL', values: [0.0345] }], [3])).toEqual(['KL: 0.0345 at iteration 3']);
  });

  it('a file name from the caption', () => {
    expect(fileNameOf('Held-out accuracy (team, 95 % interval)')).toBe('held-out-accuracy-team-95-interval.png');
    expect(fileNameOf('!!!')).toBe('chart.png');
  });
});
