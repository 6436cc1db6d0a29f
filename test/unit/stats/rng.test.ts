import { describe, expect, it } from 'vitest';
import { Rng, hashString } from '../../../src/core/stats/rng.ts';

describe('hashString (FNV-1a 32)', () => {
  it('matches the published FNV-1a test vectors', () => {
    expect(hashString('')).toBe(0x811c9dc5);
    expect(hashString('a')).toBe(0xe40c292c);
    expect(hashString('foobar')).toBe(0xbf9cf968);
  });
});

describe('Rng', () => {
  it('implements xoshiro128** (hand-worked from state [1, 2, 3, 4])', () => {
    // out = rotl(s1 * 5, 7) * 9. Step 1: s1 = 2 -> rotl(10, 7) * 9 = 1280 * 9 = 11520.
    // Then s = [7, 0, 1026, 12288] -> out 0; then s = [12295, 1029, 1029, 25165824] -> 1029*5*128*9.
    const rng = Rng.fromState([1, 2, 3, 4]);
    expect(rng.nextUint32()).toBe(11520);
    expect(rng.getState()).toEqual([7, 0, 1026, 12288]);
    expect(rng.nextUint32()).toBe(0);
    expect(rng.nextUint32()).toBe(5927040);
  });

  it('is deterministic per seed, and different seeds differ', () => {
    const a = new Rng(42);
    const b = new Rng(42);
    const c = new Rng(43);
    const sa = Array.from({ length: 20 }, () => a.next());
    const sb = Array.from({ length: 20 }, () => b.next());
    const sc = Array.from({ length: 20 }, () => c.next());
    expect(sa).toEqual(sb);
    expect(sa).not.toEqual(sc);
    expect(new Rng('abc').next()).toBe(new Rng('abc').next());
    expect(new Rng(2 ** 40).next()).not.toBe(new Rng(0).next()); // high bits count
  });

  it('round-trips its state through JSON', () => {
    const rng = new Rng(7);
    for (let i = 0; i < 13; i++) rng.normal();
    const saved = JSON.parse(JSON.stringify(rng.getState()));
    const expected = [rng.next(), rng.int(1, 100), rng.normal(), rng.pick(['a', 'b', 'c'])];
    const resumed = Rng.fromState(saved);
    expect([resumed.next(), resumed.int(1, 100), resumed.normal(), resumed.pick(['a', 'b', 'c'])]).toEqual(expected);
  });

  it('rejects invalid states and arguments with clear errors', () => {
    expect(() => Rng.fromState([0, 0, 0, 0])).toThrow(/all-zero/);
    expect(() => new Rng(1).setState([1, 2, 3] as never)).toThrow(/four uint32/);
    expect(() => new Rng(1).setState([1, 2, 3, -1])).toThrow(/four uint32/);
    expect(() => new Rng(1).int(5, 2)).toThrow(/lo <= hi/);
    expect(() => new Rng(1).pick([])).toThrow(/empty/);
    expect(() => new Rng(Number.NaN)).toThrow(/finite/);
  });

  it('next() is roughly uniform on [0, 1) (chi-square over 10 bins)', () => {
    const rng = new Rng(123);
    const n = 100_000;
    const bins = new Array(10).fill(0);
    let outside = 0;
    for (let i = 0; i < n; i++) {
      const x = rng.next();
      if (!(x >= 0 && x < 1)) outside++;
      else bins[Math.floor(x * 10)]++;
    }
    expect(outside).toBe(0);
    const expected = n / 10;
    const chi2 = bins.reduce((s, b) => s + (b - expected) ** 2 / expected, 0);
    expect(chi2).toBeLessThan(27.9); // 99.9th percentile of chi-square with 9 d.o.f.
  });

  it('int() covers both ends inclusively and nothing else', () => {
    const rng = new Rng(5);
    const seen = new Set<number>();
    for (let i = 0; i < 2000; i++) seen.add(rng.int(-2, 3));
    expect([...seen].sort((a, b) => a - b)).toEqual([-2, -1, 0, 1, 2, 3]);
  });

  it('normal() has the requested mean and standard deviation', () => {
    const rng = new Rng(9);
    const n = 50_000;
    const xs = Array.from({ length: n }, () => rng.normal(3, 2));
    const mean = xs.reduce((a, b) => a + b, 0) / n;
    const sd = Math.sqrt(xs.reduce((a, b) => a + (b - mean) ** 2, 0) / (n - 1));
    expect(Math.abs(mean - 3)).toBeLessThan(0.05); // 4 standard errors (2 / sqrt(n) = 0.009)
    expect(Math.abs(sd - 2)).toBeLessThan(0.05);
  });

  it('shuffle() is a permutation, weightedIndex() follows the weights', () => {
    const rng = new Rng(11);
    const items = Array.from({ length: 50 }, (_, i) => i);
    const shuffled = rng.shuffle([...items]);
    expect([...shuffled].sort((a, b) => a - b)).toEqual(items);
    expect(shuffled).not.toEqual(items);
    const counts = [0, 0, 0];
    for (let i = 0; i < 30_000; i++) counts[rng.weightedIndex([1, 0, 3])]++;
    expect(counts[1]).toBe(0);
    expect(counts[2] / counts[0]).toBeGreaterThan(2.7);
    expect(counts[2] / counts[0]).toBeLessThan(3.3);
  });

  it('fork() gives a reproducible child stream without advancing the parent', () => {
    const rng = new Rng(1);
    const before = rng.getState();
    const a = rng.fork('sampling').next();
    expect(rng.getState()).toEqual(before);
    expect(rng.fork('sampling').next()).toBe(a);
    expect(rng.fork('dropout').next()).not.toBe(a);
  });
});
