/**
 * The corrections bench's summary and findings on hand-made rows (bench/corrections-report.ts): the mean
 * over seeds with its t interval, the fewest K past 80 %, the seed-paired uncertainty-minus-random
 * difference, and the careless person's, each checked against numbers worked by hand.
 */
import { describe, expect, it } from 'vitest';
import { cells, correctionsPlot, correctionsReport, findings, type Row } from '../../../bench/corrections-report.ts';

const iv = (p: number, half = 0.02) => ({ p, low: p - half, high: p + half });
const row = (rule: string, k: number, seed: number, p: number, flip = 0): Row => ({
  judge: 'dir/weak', rule, k, seed, flip, ranking: iv(p), boot: iv(p, 0.04), pairs: 100, mae: 3, changed: 1, teachSeconds: 1, teachCpu: 2, steps: 3,
});
const rows: Row[] = [
  row('-', 0, 0, 0.6),
  ...[0, 1, 2].flatMap((s) => [
    row('uncertainty', 100, s, [0.7, 0.72, 0.74][s]), row('uncertainty', 400, s, [0.8, 0.82, 0.84][s]),
    row('random', 100, s, [0.69, 0.7, 0.71][s]), row('random', 400, s, [0.7, 0.71, 0.72][s]),
    row('uncertainty', 100, s, [0.6, 0.61, 0.62][s], 0.2),
  ]),
];

describe('corrections report', () => {
  it('pools seeds: mean with the t interval (t(2) = 4.303)', () => {
    const c = cells(rows).cells.find((x) => x.rule === 'uncertainty' && x.k === 100 && x.flip === 0)!;
    // mean 0.72, sd 0.02, half = 4.303 x 0.02 / sqrt(3) = 0.0497
    expect(c.ranking.p).toBeCloseTo(0.72, 10);
    expect(c.ranking.high - c.ranking.p).toBeCloseTo(4.302653 * 0.02 / Math.sqrt(3), 4);
    expect(c.seeds).toBe(3);
  });
  it('says the fewest K past 80 %, the paired label saving, and the careless cost', () => {
    const f = findings(rows).join('\n');
    expect(f).toMatch(/uncertainty: reaches 80.0 % at K = 400/);
    expect(f).toMatch(/random: does not reach 80.0 % by K = 400; best 71.0 %/);
    // K = 100: differences 0.01, 0.02, 0.03 -> mean 2.0 points, half 4.303 x 0.01 / sqrt(3) = 2.5 points: holds 0
    expect(f).toMatch(/K = 100: 2.0 \[-0.5, 4.5\] points/);
    // K = 400: 0.10, 0.11, 0.12 -> 11.0 [8.5, 13.5]: beyond the noise
    expect(f).toMatch(/K = 400: 11.0 \[8.5, 13.5\] points/);
    expect(f).toMatch(/Uncertainty is ahead beyond the noise at K = 400/);
    expect(f).toMatch(/careless \(20 % flipped\) minus careful: uncertainty K = 100: -11.0 \[-13.5, -8.5\] points/);
  });
  it('writes the tables and a plot with the 80 % line', () => {
    const md = correctionsReport(rows, { command: 'npm run -s bench -- corrections', machine: 'test', held: 480, pool: 960, minutes: 1 });
    expect(md).toMatch(/\| dir\/weak \| careful \| uncertainty \| 100 \| 3 \| 72.0 % \[/);
    expect(correctionsPlot(['dir/weak'], rows)).toMatch(/the coaching line \(80 %\)/);
  });
});
