/**
 * The 95 % intervals against hand-worked and textbook numbers: Wilson (Wilson 1927), Newcombe's
 * unpaired hybrid score and paired square-and-add intervals (Newcombe 1998; the textbook values are
 * those of Newcombe's paper and of Fagerland, Lydersen & Laake ch. 4 and 8), Student's t quantiles
 * (any t table), and the log-ratio interval across seeds.
 */
import { describe, expect, it } from 'vitest';
import {
  accuracyInterval, formatPercent, formatPoints, formatRatio, logRatioInterval, pairedDifference, pairedTable, tQuantile, unpairedDifference, wilson,
} from '../../../src/core/stats/intervals.ts';

/** Booleans for a paired table: `both` problems both runs solve, then only a, only b, neither. */
function paired(both: number, onlyA: number, onlyB: number, neither: number): [boolean[], boolean[]] {
  const rows: [boolean, boolean][] = [
    ...Array<[boolean, boolean]>(both).fill([true, true]), ...Array<[boolean, boolean]>(onlyA).fill([true, false]),
    ...Array<[boolean, boolean]>(onlyB).fill([false, true]), ...Array<[boolean, boolean]>(neither).fill([false, false]),
  ];
  return [rows.map((r) => r[0]), rows.map((r) => r[1])];
}

describe('wilson', () => {
  it('50 of 200 -> 25.0 % [19.5, 31.4]; 0 of 10 -> [0, 27.8]; n = 0 -> [0, 1]', () => {
    // centre = (0.25 + 1.92^2/400) / (1 + 1.92^2/200) = 0.25960 / 1.01921 = 0.25471;
    // half = (1.96 / 1.01921) * sqrt(0.25*0.75/200 + 1.92^2/160000) = 1.92303 * 0.031007 = 0.05963
    const w = wilson(50, 200);
    expect(w.p).toBe(0.25);
    expect(w.low).toBeCloseTo(0.1951, 4);
    expect(w.high).toBeCloseTo(0.3143, 4);
    expect(formatPercent(w)).toBe('25.0 % [19.5, 31.4]');
    expect(wilson(0, 10).low).toBe(0);
    expect(wilson(0, 10).high).toBeCloseTo(0.2775, 4);
    expect(wilson(0, 0)).toEqual({ p: 0, low: 0, high: 1 });
    expect(() => wilson(3, 2)).toThrow(/impossible/);
  });

  it('accuracyInterval: from the per-problem results when kept, else from p * n', () => {
    expect(accuracyInterval(0.25, 200)).toEqual(wilson(50, 200));
    expect(accuracyInterval(0.3, 10)).toEqual(wilson(3, 10)); // 0.3 * 10 = 3.0000000000000004
    expect(accuracyInterval(0.5, 4, [true, false, false, false])).toEqual(wilson(1, 4));
    expect(accuracyInterval(0, 0)).toEqual({ p: 0, low: 0, high: 1 });
  });
});

describe('unpairedDifference (Newcombe hybrid score)', () => {
  it("Newcombe's example 56/70 - 48/80 = 0.20 [0.0524, 0.3339]; Perondi 7/34 - 1/34 = 0.1765 [0.0189, 0.3404]", () => {
    // Wilson 56/70 = [0.6923, 0.8763], 48/80 = [0.4904, 0.7003]:
    // low = 0.2 - sqrt((0.8 - 0.6923)^2 + (0.7003 - 0.6)^2) = 0.2 - 0.1476; high = 0.2 + sqrt(0.0763^2 + 0.1096^2)
    const d = unpairedDifference(56, 70, 48, 80);
    expect(d.p).toBeCloseTo(0.2, 12);
    expect(d.low).toBeCloseTo(0.0524, 4);
    expect(d.high).toBeCloseTo(0.3339, 4);
    const e = unpairedDifference(7, 34, 1, 34);
    expect(e.p).toBeCloseTo(0.1765, 4);
    expect(e.low).toBeCloseTo(0.0189, 4);
    expect(e.high).toBeCloseTo(0.3404, 4);
    expect(unpairedDifference(0, 0, 1, 2)).toEqual({ p: 0, low: -1, high: 1 });
  });
});

describe('pairedDifference (Newcombe square-and-add, paired)', () => {
  it('textbook table 59 / 6 / 16 / 80 (Cavo et al. 2012, Fagerland et al. ch. 8) -> -0.0621 [-0.1186, -0.0046]', () => {
    const [a, b] = paired(59, 6, 16, 80);
    const d = pairedDifference(a, b);
    expect(d).toMatchObject({ both: 59, onlyA: 6, onlyB: 16, neither: 80, n: 161 });
    expect(d.p).toBeCloseTo(-10 / 161, 12);
    expect(d.low).toBeCloseTo(-0.1186, 4);
    expect(d.high).toBeCloseTo(-0.0046, 4);
  });

  it('by hand: 20 problems, 5 both, 3 only a, 1 only b, 11 neither -> +10.0 pts [-10.9, +29.6]', () => {
    // acc a = 8/20 = 0.40, Wilson [0.2188, 0.6134]; acc b = 6/20 = 0.30, Wilson [0.1455, 0.5190].
    // phi: numerator 5*11 - 3*1 = 52 > n/2 = 10 -> 42; margins 8*12*6*14 = 8064; phi = 42 / 89.800 = 0.46771.
    // low  = 0.1 - sqrt(0.1812^2 + 0.2190^2 - 2*0.46771*0.1812*0.2190) = 0.1 - sqrt(0.04372) = -0.10896
    // high = 0.1 + sqrt(0.1545^2 + 0.2134^2 - 2*0.46771*0.1545*0.2134) = 0.1 + sqrt(0.03848) = +0.29641
    const [a, b] = paired(5, 3, 1, 11);
    const d = pairedDifference(a, b);
    expect(d.p).toBeCloseTo(0.1, 12);
    expect(d.low).toBeCloseTo(-0.10896, 4);
    expect(d.high).toBeCloseTo(0.29641, 4);
    expect(formatPoints(d)).toBe('+10.0 pts [-10.9, +29.6]');
    // Pairing helps: the same accuracies from independent problems give a wider interval.
    const u = unpairedDifference(8, 20, 6, 20);
    expect(u.low).toBeCloseTo(-0.1842, 4);
    expect(u.high).toBeCloseTo(0.3635, 4);
    expect(d.high - d.low).toBeLessThan(u.high - u.low);
    // Swapping the runs mirrors the interval.
    const r = pairedDifference(b, a);
    expect(r.p).toBeCloseTo(-0.1, 12);
    expect(r.low).toBeCloseTo(-d.high, 12);
    expect(r.high).toBeCloseTo(-d.low, 12);
  });

  it('no discordant problem: still an interval (+-12.1 pts on 5 both / 15 neither), not a point', () => {
    // Wilson 5/20 = [0.1119, 0.4687]; numerator 75 - 0 - 10 = 65, margins 5*15*5*15 -> phi = 65/75;
    // half = sqrt(0.1381^2 + 0.2187^2 - 2*(13/15)*0.1381*0.2187) = 0.12061
    const [a, b] = paired(5, 0, 0, 15);
    const d = pairedDifference(a, b);
    expect(d.p).toBe(0);
    expect(d.high).toBeCloseTo(0.12061, 4);
    expect(d.low).toBeCloseTo(-0.12061, 4);
    // All right in both runs: a margin is 0, phi = 0, the interval is the unpaired one.
    const all = pairedDifference([true, true, true], [true, true, true]);
    expect(all.low).toBeCloseTo(unpairedDifference(3, 3, 3, 3).low, 12);
    expect(formatPoints(pairedDifference([], []))).toBe('0.0 pts [-100.0, +100.0]');
  });

  it('refuses results of different lengths', () => {
    expect(() => pairedTable([true], [true, false])).toThrow(/same problems/);
  });
});

describe('tQuantile', () => {
  it('matches a t table (two-sided 95 %)', () => {
    for (const [df, t] of [[1, 12.7062], [2, 4.3027], [3, 3.1824], [4, 2.7764], [5, 2.5706], [10, 2.2281], [30, 2.0423], [1000, 1.9623]]) {
      expect(tQuantile(df)).toBeCloseTo(t, 4);
    }
    expect(tQuantile(5, 0.9)).toBeCloseTo(2.0150, 4);
    expect(() => tQuantile(0)).toThrow(/positive integer/);
  });
});

describe('logRatioInterval (rollouts to target across seeds)', () => {
  it('by hand: outcome 960 / 1200 / 1440, process 576 / 720 / 864 -> 0.60 [0.38, 0.95]', () => {
    // Every process seed is 0.6 x an outcome seed, so the ratio of geometric means is 0.6 exactly.
    // Logs around each group's log-mean: ln(0.8) + 0.013606, 0.013606, ln(1.2) + 0.013606 ->
    // SS = 2 * (0.209535^2 + 0.013606^2 + 0.195928^2) = 0.164957; df = 4, s^2 = 0.041239;
    // se = sqrt(s^2 * (1/3 + 1/3)) = 0.165810; t(4) = 2.77645; half = 0.460370;
    // exp(ln 0.6 -+ 0.460370) = [0.37863, 0.95079].
    const r = logRatioInterval([960, 1200, 1440], [576, 720, 864])!;
    expect(r.df).toBe(4);
    expect(r.p).toBeCloseTo(0.6, 12);
    expect(r.low).toBeCloseTo(0.37863, 4);
    expect(r.high).toBeCloseTo(0.95079, 4);
    expect(formatRatio(r)).toBe('0.60 [0.38, 0.95]');
  });

  it('two seeds a side: wide (t(2) = 4.30); too few seeds or a zero: null or an error', () => {
    // ln 800 - ln 1250 ... : d = (ln 500 + ln 800)/2 - (ln 800 + ln 1250)/2 = ln(0.63246);
    // SS = 2 * (ln(1250/800)/2)^2 + 2 * (ln(800/500)/2)^2 = 0.099586 + 0.110452 = 0.210038; s^2 = 0.105019;
    // se = sqrt(0.105019) = 0.324066; half = 4.302653 * 0.324066 = 1.394344.
    const r = logRatioInterval([800, 1250], [500, 800])!;
    expect(r.p).toBeCloseTo(0.63246, 5);
    expect(r.low).toBeCloseTo(0.15685, 4);
    expect(r.high).toBeCloseTo(2.55027, 4);
    expect(logRatioInterval([800], [500])).toBeNull();
    expect(logRatioInterval([], [500, 600])).toBeNull();
    expect(logRatioInterval([800, 900], [500])!.df).toBe(1);
    expect(() => logRatioInterval([0, 800], [500])).toThrow(/positive/);
  });
});
