/**
 * stratifiedOrder (every prefix holds each stratum in proportion, within one item) and prefixCoverage
 * (how often a running Wilson interval covers the final value), on small hand-checked sets.
 */
import { describe, expect, it } from 'vitest';
import { prefixCoverage, stratifiedOrder } from '../../../src/core/stats/order.ts';
import { wilson } from '../../../src/core/stats/intervals.ts';

const items = (sizes: number[]) => sizes.flatMap((m, s) => Array.from({ length: m }, (_, j) => ({ s, j })));

describe('stratifiedOrder', () => {
  it('is a deterministic permutation; another seed gives another order', () => {
    const xs = items([40, 40, 40, 40, 40]);
    const a = stratifiedOrder(xs, (x) => x.s, 'seed-a');
    expect(a).toHaveLength(200);
    expect(new Set(a).size).toBe(200);
    expect(a.every((x) => xs.includes(x))).toBe(true);
    expect(stratifiedOrder(xs, (x) => x.s, 'seed-a')).toEqual(a);
    expect(stratifiedOrder(xs, (x) => x.s, 'seed-b')).not.toEqual(a);
    expect(xs[0]).toEqual({ s: 0, j: 0 }); // the input is not reordered
  });

  it('every prefix holds each stratum within one item of its share (equal strata), within two for unequal ones', () => {
    for (const [sizes, bound] of [[[40, 40, 40, 40, 40], 1], [[10, 10, 10, 10, 10], 1], [[8, 7, 8, 7, 7], 2], [[30, 3, 12], 2]] as [number[], number][]) {
      const xs = items(sizes);
      const order = stratifiedOrder(xs, (x) => x.s, 'prefix');
      const counts = sizes.map(() => 0);
      order.forEach((x, i) => {
        counts[x.s]++;
        const n = i + 1;
        sizes.forEach((m, s) => expect(Math.abs(counts[s] - (n * m) / xs.length)).toBeLessThanOrEqual(bound + 1e-9));
      });
    }
  });

  it('shuffles within a stratum and varies which stratum leads a round', () => {
    const order = stratifiedOrder(items([40, 40, 40, 40, 40]), (x) => x.s, 'heldout-order-v1');
    expect(order.filter((x) => x.s === 0).map((x) => x.j)).not.toEqual([...Array(40).keys()]);
    const leaders = new Set(Array.from({ length: 40 }, (_, r) => order[5 * r].s));
    expect(leaders.size).toBeGreaterThan(1);
  });
});

describe('prefixCoverage', () => {
  it('counts the prefixes whose Wilson interval holds the final share', () => {
    // final 0.5; n = 2: 1 of 2 -> [0.095, 0.905] covers; n = 3: 2 of 3 -> [0.208, 0.939] covers.
    expect(prefixCoverage([true, false, true, false], [2, 3])).toEqual({ final: 0.5, covered: 2, total: 2, share: 1, missed: [] });
    // 10 true then 30 false: final 0.25; the first 10 are all true -> wilson(10, 10) = [0.722, 1]: missed.
    const sorted = [...Array(10).fill(true), ...Array(30).fill(false)];
    const c = prefixCoverage(sorted, [10, 20, 40]);
    expect(wilson(10, 10).low).toBeCloseTo(0.7225, 4);
    expect(c.missed).toEqual([10, 20]); // 10 of 20 -> [0.299, 0.701] misses 0.25 too; all 40 cover themselves
    expect(c.share).toBeCloseTo(1 / 3, 12);
  });

  it('refuses a prefix size outside the results', () => {
    expect(() => prefixCoverage([true], [2])).toThrow(/outside 1..1/);
  });
});
