/**
 * bench/judge.ts' arithmetic, worked by hand: the mean paired difference with its t interval, and the
 * table row's verdict (better / worse / within noise). The measurement itself needs the shipped models
 * and minutes of decoding: `npm run bench -- judge`.
 */
import { describe, expect, it } from 'vitest';
import { judgeRow, labelRanking, meanInterval } from '../../../bench/judge.ts';

describe('bench judge', () => {
  it('gives the mean difference with its 95 % t interval', () => {
    // d = [1, 0, -1, 0]: mean 0, sd sqrt(2/3) = 0.8165, t(3) = 3.1824 -> half width 3.1824 * 0.8165 / 2 = 1.2993
    const i = meanInterval([1, 0, -1, 0]);
    expect(i.mean).toBe(0);
    expect(i.hi).toBeCloseTo(1.2993, 3);
    expect(i.lo).toBeCloseTo(-1.2993, 3);
  });

  it('says which is better only when the interval excludes zero', () => {
    const base = { actions: 4, parsed: 1, mae: 1, within1: 0.5, answerCorrectAccuracy: null, baselineMae: 2, seconds: 1 };
    expect(judgeRow('x', { ...base, gains: [-1, -1.1, -0.9, -1] })).toMatch(/\| -1.00 \[-1.13, -0.87\] \| judge better \| 50.0 % \| - \| - \|$/);
    expect(judgeRow('x', { ...base, gains: [1, 0, -1, 0] })).toContain('within noise');
    expect(judgeRow('x', { ...base, gains: [2, 2.1, 1.9, 2] })).toContain('mean better');
  });

  it('ranks the judge within each agent against the labels, beside a coin', () => {
    // agent a: labels 2, 8 (one pair), judge 3, 9 -> concordant; agent b: labels 5, 0, judge 5, 5 -> a tie, half.
    const items = [
      { context: { agentId: 'a' }, score: 2 }, { context: { agentId: 'a' }, score: 8 },
      { context: { agentId: 'b' }, score: 5 }, { context: { agentId: 'b' }, score: 0 },
    ];
    const r = labelRanking(items, [3, 9, 5, 5]);
    expect(r.judge.p).toBeCloseTo(0.75, 10); // (1 + 0.5) / 2 pairs
    expect(r.coin.p).toBeGreaterThanOrEqual(0);
    expect(r.coin.p).toBeLessThanOrEqual(1);
  });
});
