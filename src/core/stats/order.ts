/**
 * The order in which a fixed set is evaluated, and whether a running estimate over that order is
 * honest: a prefix of the order is what the page has measured after each chunk, and its interval
 * is read as one for the whole set.
 *
 * For: the held-out sets (domains/index.ts `mathEvalTasks`), whose running estimate the page shows
 * chunk by chunk; the test that a prefix's 95 % interval covers the final accuracy.
 * Not for: training order (the curriculum draws its own), nor intervals themselves (intervals.ts).
 *
 * Example: stratifiedOrder(tasks, (t) => t.level, 'heldout-order-v1') -> the same tasks, each level's
 *          shuffled and the levels interleaved so that every prefix holds each level in proportion
 *          (within one task when the levels are equal); prefixCoverage(results, 8..199) -> { covered: 190, total: 192, share: 0.99, ... }.
 */
import { Rng, type Seed } from './rng.ts';
import { wilson } from './intervals.ts';

/**
 * `items` reordered so that every prefix is stratified: each stratum's items are shuffled (seeded),
 * then the j-th of a stratum of m items gets the key (j + u) / m with u uniform in [0, 1), and the
 * items are sorted by key. A prefix up to key x then holds floor(x m) or floor(x m) + 1 items of
 * every stratum, so each stratum's count is within one item of its share of the prefix when the
 * strata are equal (the held-out levels: a prefix is some whole rounds of one item per stratum, plus
 * part of a round) and within two when they are nearly equal; which stratum comes first in each
 * round, and which item of it, is random.
 * Deterministic for the same items, strata and seed; a permutation of `items` (nothing added or lost).
 */
export function stratifiedOrder<T>(items: readonly T[], stratum: (item: T) => string | number, seed: Seed): T[] {
  const rng = new Rng(seed);
  const groups = new Map<string | number, T[]>();
  for (const item of items) {
    const key = stratum(item);
    const group = groups.get(key);
    if (group) group.push(item);
    else groups.set(key, [item]);
  }
  const keyed: { key: number; group: number; item: T }[] = [];
  [...groups.values()].forEach((group, g) => {
    rng.shuffle(group).forEach((item, j) => keyed.push({ key: (j + rng.next()) / group.length, group: g, item }));
  });
  return keyed.sort((a, b) => a.key - b.key || a.group - b.group).map((k) => k.item);
}

/** How often a running estimate's interval covered the final value. */
export interface PrefixCoverage {
  /** The final accuracy: the share of `results` that are true. */
  final: number;
  covered: number;
  total: number;
  /** covered / total. */
  share: number;
  /** The prefix sizes whose Wilson interval missed `final`. */
  missed: number[];
}

/**
 * For each prefix size n in `sizes`, whether the 95 % Wilson interval of results[0..n) covers the
 * accuracy of all of `results` — what the page's running estimate promises after n problems.
 * (The prefix is drawn without replacement from a finite set, so its true variance is smaller by
 * the finite population correction (N - n) / (N - 1); the Wilson interval ignores it and is
 * conservative, more so near the end.)
 *   prefixCoverage([true, false, true, false], [2, 3]) -> { final: 0.5, covered: 2, total: 2, share: 1, missed: [] }
 */
export function prefixCoverage(results: readonly boolean[], sizes: Iterable<number>): PrefixCoverage {
  const final = results.filter(Boolean).length / Math.max(1, results.length);
  const cumulative = [0];
  for (const r of results) cumulative.push(cumulative[cumulative.length - 1] + (r ? 1 : 0));
  const missed: number[] = [];
  let total = 0;
  for (const n of sizes) {
    if (!Number.isInteger(n) || n < 1 || n > results.length) throw new Error(`prefixCoverage: prefix size ${n} is outside 1..${results.length}`);
    total++;
    const w = wilson(cumulative[n], n);
    if (final < w.low || final > w.high) missed.push(n);
  }
  const covered = total - missed.length;
  return { final, covered, total, share: total ? covered / total : 1, missed };
}
