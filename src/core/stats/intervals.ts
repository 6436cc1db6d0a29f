/**
 * 95 % intervals for the comparisons the sandbox reports: an accuracy over held-out problems
 * (Wilson score interval), and more to come for paired differences and ratios across seeds.
 *
 * For: `mappa eval`, `mappa compare`, the benchmarks and the page's charts: every accuracy is
 * shown with the interval its sample size allows. Not for: deciding anything inside the loop.
 *
 * Example: 50 of 200 problems solved -> wilson(50, 200) = { p: 0.25, low: 0.1951, high: 0.3143 }
 *          (so "25.0 % [19.5, 31.4]"; a second run at 28 % is inside it, not a gain).
 */

/** z for a two-sided 95 % interval. */
export const Z95 = 1.959963984540054;

export interface Interval {
  /** The point estimate. */
  p: number;
  low: number;
  high: number;
}

/**
 * Wilson score interval for k successes in n trials (Wilson 1927): unlike p +- z*sqrt(p(1-p)/n) it
 * stays inside [0, 1] and is honest at p = 0 or 1 and small n. n = 0 gives the whole [0, 1].
 *   wilson(0, 10) -> { p: 0, low: 0, high: 0.2775 }
 */
export function wilson(k: number, n: number, z = Z95): Interval {
  if (!(n > 0)) return { p: 0, low: 0, high: 1 };
  if (k < 0 || k > n) throw new Error(`wilson: ${k} successes out of ${n} trials is impossible`);
  const p = k / n;
  const z2 = z * z;
  const centre = (p + z2 / (2 * n)) / (1 + z2 / n);
  const half = (z / (1 + z2 / n)) * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n));
  return { p, low: Math.max(0, centre - half), high: Math.min(1, centre + half) };
}

/** "25.0 % [19.5, 31.4]": a proportion and its interval, in percent with one decimal. */
export function formatPercent(i: Interval): string {
  const f = (x: number) => (x * 100).toFixed(1);
  return `${f(i.p)} % [${f(i.low)}, ${f(i.high)}]`;
}
