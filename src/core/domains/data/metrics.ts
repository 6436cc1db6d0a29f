/**
 * Quality metrics of the data-analysis team, computed by the project on the held-out split
 * (the agents never see the test targets): accuracy, F1 and ROC-AUC for classification; RMSE,
 * RMSE as a share of the target's range and of its interquartile range (IQR) for regression.
 *
 * For: plain functions over number arrays, used by the data coach (caps), the outcome of a data
 * trajectory (success) and the fit tool (training-set figures). Not for: reading files (data-team.ts).
 * No installed library covers these (tfjs has no ROC-AUC or quantiles), so they are small and tested
 * against hand-worked values (test/unit/data/metrics.test.ts).
 *
 * Conventions (the same as scikit-learn and numpy):
 *   - F1 is for the positive class 1; 0 when there are no true and no predicted positives.
 *   - ROC-AUC is the Mann-Whitney statistic: the share of (positive, negative) pairs the scores order
 *     correctly, ties counting one half; NaN when only one class is present.
 *   - Quantiles interpolate linearly between order statistics (numpy's default, "type 7").
 * Example: rocAuc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]) -> 0.75
 *          rmse([1, 2, 3], [1, 2, 5]) -> 1.1547 (sqrt(4 / 3));  iqr([1, 2, 3, 4]) -> 1.5
 */

function sameLength(a: readonly number[], b: readonly number[], what: string): void {
  if (a.length !== b.length) throw new Error(`${what}: ${a.length} true values but ${b.length} predictions; give one prediction per row`);
  if (a.length === 0) throw new Error(`${what}: no rows to score`);
}

/** Share of labels predicted exactly. accuracy([0, 1, 1], [0, 1, 0]) -> 2/3. */
export function accuracy(yTrue: readonly number[], yPred: readonly number[]): number {
  sameLength(yTrue, yPred, 'accuracy');
  return yTrue.filter((y, i) => y === yPred[i]).length / yTrue.length;
}

/** F1 of the positive class: 2 TP / (2 TP + FP + FN). f1([1, 1, 0, 0], [1, 0, 1, 0]) -> 0.5. */
export function f1Score(yTrue: readonly number[], yPred: readonly number[], positive = 1): number {
  sameLength(yTrue, yPred, 'f1');
  let tp = 0, fp = 0, fn = 0;
  yTrue.forEach((y, i) => {
    const p = yPred[i] === positive;
    if (p && y === positive) tp++;
    else if (p) fp++;
    else if (y === positive) fn++;
  });
  const denominator = 2 * tp + fp + fn;
  return denominator === 0 ? 0 : (2 * tp) / denominator;
}

/** Ranks 1..n with ties given their average rank. averageRanks([10, 20, 20, 5]) -> [2, 3.5, 3.5, 1]. */
export function averageRanks(values: readonly number[]): number[] {
  const order = values.map((v, i) => [v, i] as const).sort((a, b) => a[0] - b[0]);
  const ranks = new Array<number>(values.length);
  for (let start = 0; start < order.length;) {
    let end = start;
    while (end + 1 < order.length && order[end + 1][0] === order[start][0]) end++;
    const rank = (start + end) / 2 + 1;
    for (let k = start; k <= end; k++) ranks[order[k][1]] = rank;
    start = end + 1;
  }
  return ranks;
}

/** Area under the ROC curve of `scores` for labels 0/1 (Mann-Whitney, ties count 1/2). */
export function rocAuc(yTrue: readonly number[], scores: readonly number[]): number {
  sameLength(yTrue, scores, 'rocAuc');
  const ranks = averageRanks(scores);
  let positives = 0, rankSum = 0;
  yTrue.forEach((y, i) => {
    if (y === 1) {
      positives++;
      rankSum += ranks[i];
    }
  });
  const negatives = yTrue.length - positives;
  if (positives === 0 || negatives === 0) return NaN;
  return (rankSum - (positives * (positives + 1)) / 2) / (positives * negatives);
}

/** Root mean squared error. */
export function rmse(yTrue: readonly number[], yPred: readonly number[]): number {
  sameLength(yTrue, yPred, 'rmse');
  return Math.sqrt(yTrue.reduce((s, y, i) => s + (y - yPred[i]) ** 2, 0) / yTrue.length);
}

/** Quantile q in [0, 1], linear between order statistics. quantile([1, 2, 3, 4], 0.25) -> 1.75. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

/** Interquartile range: quantile 0.75 minus quantile 0.25. */
export function iqr(values: readonly number[]): number {
  return quantile(values, 0.75) - quantile(values, 0.25);
}

/** max - min. */
export function valueRange(values: readonly number[]): number {
  return values.length ? Math.max(...values) - Math.min(...values) : NaN;
}

export interface ClassificationMetrics {
  accuracy: number;
  f1: number;
  rocAuc: number;
}

export interface RegressionMetrics {
  rmse: number;
  /** RMSE / (max - min) of the true targets: 0 is perfect, about 0.2 is "predict the mean". */
  rmseOverRange: number;
  /** RMSE / IQR of the true targets: about 0.74 is "predict the mean" for a normal target. */
  rmseOverIqr: number;
}

/**
 * Scores are probabilities of class 1 (or any monotone score); labels are score >= threshold.
 * When the scores are hard labels 0/1, ROC-AUC is that of a single threshold (the balanced accuracy).
 */
export function classificationMetrics(yTrue: readonly number[], scores: readonly number[], threshold = 0.5): ClassificationMetrics {
  const labels = scores.map((s) => (s >= threshold ? 1 : 0));
  return { accuracy: accuracy(yTrue, labels), f1: f1Score(yTrue, labels), rocAuc: rocAuc(yTrue, scores) };
}

export function regressionMetrics(yTrue: readonly number[], yPred: readonly number[]): RegressionMetrics {
  const e = rmse(yTrue, yPred);
  return { rmse: e, rmseOverRange: e / valueRange(yTrue), rmseOverIqr: e / iqr(yTrue) };
}
