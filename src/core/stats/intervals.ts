/**
 * 95 % intervals for the comparisons the sandbox reports: an accuracy over held-out problems
 * (Wilson score interval), the difference of two accuracies (paired when both runs were scored on
 * the same problems, unpaired otherwise), and the ratio of rollouts-to-target across seeds.
 *
 * For: `mappa eval`, `mappa compare`, the benchmarks and the page's charts: every accuracy is
 * shown with the interval its sample size allows. Not for: deciding anything inside the loop.
 *
 * Example: 50 of 200 problems solved -> wilson(50, 200) = { p: 0.25, low: 0.1951, high: 0.3143 }
 *          (so "25.0 % [19.5, 31.4]"; a second run at 28 % is inside it, not a gain).
 *          Run B solves 8 of 20, run A 6 of the same 20, B alone 3, A alone 1 ->
 *          pairedDifference(b, a) = { p: +0.10, low: -0.109, high: +0.296 }: no gain shown yet.
 *          Outcome reward reaches the target at 960 / 1200 / 1440 rollouts (3 seeds), process at
 *          576 / 720 / 864 -> logRatioInterval(outcome, process) = { p: 0.60, low: 0.379, high: 0.951 }:
 *          "40 % fewer rollouts [5 %, 62 %]".
 */

/** z for a two-sided 95 % interval. */
const Z95 = 1.959963984540054;

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

/**
 * The Wilson interval of an accuracy as an evaluation records it: from its per-problem results when
 * it kept them, else from p * n rounded (p is k / n of small integers).
 *   accuracyInterval(0.25, 200) = wilson(50, 200)
 */
export function accuracyInterval(p: number, n: number, results?: readonly boolean[]): Interval {
  if (results && results.length === n) return wilson(results.filter(Boolean).length, n);
  return wilson(Math.min(n, Math.max(0, Math.round(p * n))), n);
}

/** "25.0 % [19.5, 31.4]": a proportion and its interval, in percent with one decimal. */
export function formatPercent(i: Interval): string {
  const f = (x: number) => (x * 100).toFixed(1);
  return `${f(i.p)} % [${f(i.low)}, ${f(i.high)}]`;
}

/** "+3.0 pts [-1.2, +7.1]": a difference of proportions and its interval, in percentage points. */
export function formatPoints(i: Interval): string {
  const f = (x: number) => `${x > 0.0005 ? '+' : ''}${(Math.abs(x) < 0.0005 ? 0 : x * 100).toFixed(1)}`;
  return `${f(i.p)} pts [${f(i.low)}, ${f(i.high)}]`;
}

/** Newcombe's square-and-add step: d +- the Wilson half-widths of both sides, combined with correlation phi. */
function squareAndAdd(d: number, p1: number, i1: Interval, p2: number, i2: Interval, phi: number): Interval {
  const lowSq = (p1 - i1.low) ** 2 + (i2.high - p2) ** 2 - 2 * phi * (p1 - i1.low) * (i2.high - p2);
  const highSq = (i1.high - p1) ** 2 + (p2 - i2.low) ** 2 - 2 * phi * (i1.high - p1) * (p2 - i2.low);
  return { p: d, low: Math.max(-1, d - Math.sqrt(Math.max(0, lowSq))), high: Math.min(1, d + Math.sqrt(Math.max(0, highSq))) };
}

/**
 * Difference k1/n1 - k2/n2 of two accuracies on DIFFERENT problems (or when it is not known that
 * they are the same): Newcombe's hybrid score interval (Newcombe 1998, Stat Med 17:873, method 10),
 * the Wilson intervals of both accuracies combined by square-and-add.
 *   unpairedDifference(56, 70, 48, 80) -> { p: 0.2, low: 0.0524, high: 0.3339 }  (Newcombe's example)
 */
export function unpairedDifference(k1: number, n1: number, k2: number, n2: number, z = Z95): Interval {
  if (!(n1 > 0) || !(n2 > 0)) return { p: 0, low: -1, high: 1 };
  const p1 = k1 / n1;
  const p2 = k2 / n2;
  return squareAndAdd(p1 - p2, p1, wilson(k1, n1, z), p2, wilson(k2, n2, z), 0);
}

/** The paired 2x2 table of two runs on the same problems: both right, only a, only b, both wrong. */
export interface PairedTable {
  both: number;
  onlyA: number;
  onlyB: number;
  neither: number;
}

/** Count the paired table of a[i] and b[i] (problem i scored in both runs). */
export function pairedTable(a: readonly boolean[], b: readonly boolean[]): PairedTable {
  if (a.length !== b.length) throw new Error(`pairedDifference: ${a.length} results against ${b.length}; paired results must be on the same problems`);
  const t: PairedTable = { both: 0, onlyA: 0, onlyB: 0, neither: 0 };
  a.forEach((x, i) => (x && b[i] ? t.both++ : x ? t.onlyA++ : b[i] ? t.onlyB++ : t.neither++));
  return t;
}

/**
 * acc(a) - acc(b) for two runs scored on the SAME problems, a[i] and b[i] being problem i: Newcombe's
 * square-and-add interval for paired proportions (Newcombe 1998, Stat Med 17:2635, method 10; as in
 * Fagerland, Lydersen & Laake, "Statistical Analysis of Contingency Tables", ch. 8). It is the
 * unpaired interval with the correlation phi of the two runs' results put back: problems both runs
 * solve (or both fail) carry no information about the difference, so the paired interval is
 * narrower when the runs agree. Unlike the normal interval on the per-problem differences, it does
 * not collapse to a point when no problem is discordant, and it stays inside [-1, 1].
 * phi = (both*neither - onlyA*onlyB) / sqrt(product of the four margins), with Newcombe's continuity
 * correction (a positive numerator is reduced by n/2, not below 0); phi = 0 when a margin is 0.
 *   Textbook: 59 / 6 / 16 / 80 (both / only a / only b / neither) -> -0.0621 [-0.1186, -0.0046]
 */
export function pairedDifference(a: readonly boolean[], b: readonly boolean[], z = Z95): Interval & PairedTable & { n: number } {
  const t = pairedTable(a, b);
  const n = a.length;
  if (n === 0) return { p: 0, low: -1, high: 1, ...t, n };
  const kA = t.both + t.onlyA;
  const kB = t.both + t.onlyB;
  const margins = kA * (n - kA) * kB * (n - kB);
  const num = t.both * t.neither - t.onlyA * t.onlyB;
  const phi = margins === 0 ? 0 : (num > n / 2 ? num - n / 2 : num >= 0 ? 0 : num) / Math.sqrt(margins);
  return { ...squareAndAdd((t.onlyA - t.onlyB) / n, kA / n, wilson(kA, n, z), kB / n, wilson(kB, n, z), phi), ...t, n };
}

/**
 * The two-sided quantile of Student's t with integer df: the t with P(|T| <= t) = level (0.95: the
 * 97.5 % point), from the exact finite series of its distribution (Abramowitz & Stegun 26.7.3-4),
 * solved by bisection on the angle theta = atan(t / sqrt(df)).
 *   tQuantile(2) = 4.3027, tQuantile(4) = 2.7764, tQuantile(1000) = 1.9623
 */
export function tQuantile(df: number, level = 0.95): number {
  if (!Number.isInteger(df) || df < 1) throw new Error(`tQuantile: df must be a positive integer, got ${df}`);
  const central = (theta: number): number => { // P(|T| <= sqrt(df) tan theta)
    const c2 = Math.cos(theta) ** 2;
    let term = 1;
    let sum = 1;
    if (df % 2 === 0) {
      for (let k = 2; k <= df - 2; k += 2) sum += (term *= (c2 * (k - 1)) / k);
      return Math.sin(theta) * sum;
    }
    if (df === 1) return (2 / Math.PI) * theta;
    for (let k = 3; k <= df - 2; k += 2) sum += (term *= (c2 * (k - 1)) / k);
    return (2 / Math.PI) * (theta + Math.sin(theta) * Math.cos(theta) * sum);
  };
  let lo = 0;
  let hi = Math.PI / 2;
  for (let i = 0; i < 60; i++) {
    const mid = (lo + hi) / 2;
    if (central(mid) < level) lo = mid;
    else hi = mid;
  }
  return Math.sqrt(df) * Math.tan((lo + hi) / 2);
}

/** The ratio of `b` to `a` (p) with its interval, and the degrees of freedom it was taken with. */
export interface RatioInterval extends Interval {
  df: number;
}

/**
 * The mean of `xs` with its Student t interval (sd / sqrt(n), df = n - 1); low and high are NaN below
 * two values. Example: tInterval([1, 0, -1, 0]) -> { p: 0, low: -1.2993, high: 1.2993 } (t(3) = 3.1824).
 */
export function tInterval(xs: readonly number[], level = 0.95): Interval {
  const n = xs.length;
  const p = xs.reduce((s, x) => s + x, 0) / n;
  if (n < 2) return { p, low: NaN, high: NaN };
  const sd = Math.sqrt(xs.reduce((s, x) => s + (x - p) ** 2, 0) / (n - 1));
  const half = tQuantile(n - 1, level) * sd / Math.sqrt(n);
  return { p, low: p - half, high: p + half };
}

/**
 * How many times `a` is `b`, across seeds: e.g. the rollouts process reward needs to reach a target
 * (b, one value per seed) against what outcome reward needs (a). Taken on the log scale, where a
 * seed's luck multiplies: the ratio of the geometric means exp(mean log b - mean log a), with the
 * Student t interval of that difference of log-means (pooled variance, df = |a| + |b| - 2),
 * exponentiated. Needs positive values and at least 3 in all (df >= 1); else null. With 2 seeds a
 * side (df 2, t = 4.30) the interval is honestly wide.
 *   logRatioInterval([960, 1200, 1440], [576, 720, 864]) -> { p: 0.6, low: 0.379, high: 0.951, df: 4 }
 */
export function logRatioInterval(a: readonly number[], b: readonly number[], level = 0.95): RatioInterval | null {
  for (const x of [...a, ...b]) if (!(x > 0) || !Number.isFinite(x)) throw new Error(`logRatioInterval: values must be positive, got ${x}`);
  const df = a.length + b.length - 2;
  if (a.length === 0 || b.length === 0 || df < 1) return null;
  const la = a.map(Math.log);
  const lb = b.map(Math.log);
  const ma = mean(la);
  const mb = mean(lb);
  const ss = la.reduce((s, x) => s + (x - ma) ** 2, 0) + lb.reduce((s, x) => s + (x - mb) ** 2, 0);
  const half = tQuantile(df, level) * Math.sqrt((ss / df) * (1 / a.length + 1 / b.length));
  const d = mb - ma;
  return { p: Math.exp(d), low: Math.exp(d - half), high: Math.exp(d + half), df };
}

/** Mean of `xs` (summed in order), 0 for none. Example: mean([1, 2, 4]) -> 2.3333333333333335; mean([]) -> 0 */
export function mean(xs: readonly number[]): number {
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0;
}

/** "0.60 [0.38, 0.95]": a ratio and its interval, two decimals. */
export function formatRatio(i: Interval): string {
  return `${i.p.toFixed(2)} [${i.low.toFixed(2)}, ${i.high.toFixed(2)}]`;
}
