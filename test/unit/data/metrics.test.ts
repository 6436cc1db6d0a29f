/** Metric functions against values worked out by hand (the working is in the comments). */
import { describe, expect, it } from 'vitest';
import { accuracy, averageRanks, classificationMetrics, f1Score, iqr, quantile, regressionMetrics, rmse, rocAuc, valueRange } from '../../../src/core/domains/data/metrics.ts';

describe('classification metrics', () => {
  it('accuracy counts exact matches', () => {
    expect(accuracy([0, 1, 1, 0, 1], [0, 1, 0, 0, 0])).toBeCloseTo(3 / 5, 12);
  });

  it('F1 of the positive class', () => {
    // TP = 2 (rows 1, 2), FP = 1 (row 4), FN = 1 (row 3): F1 = 2*2 / (2*2 + 1 + 1) = 4/6.
    expect(f1Score([1, 1, 1, 0, 0], [1, 1, 0, 1, 0])).toBeCloseTo(4 / 6, 12);
    // No positives anywhere: 0 by convention (scikit-learn's zero_division=0).
    expect(f1Score([0, 0], [0, 0])).toBe(0);
  });

  it('ROC-AUC is the share of correctly ordered (positive, negative) pairs', () => {
    // Positives score 0.35, 0.8; negatives 0.1, 0.4. Pairs: (0.35>0.1) yes, (0.35>0.4) no, (0.8>0.1) yes, (0.8>0.4) yes -> 3/4.
    expect(rocAuc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])).toBeCloseTo(0.75, 12);
    // A tie between a positive and a negative counts one half: pairs (0.5,0.5)=.5, (0.5,0.2)=1, (0.9,0.5)=1, (0.9,0.2)=1 -> 3.5/4.
    expect(rocAuc([0, 1, 0, 1], [0.5, 0.5, 0.2, 0.9])).toBeCloseTo(0.875, 12);
    expect(rocAuc([1, 1, 0], [0.1, 0.2, 0.9])).toBe(0);
    expect(rocAuc([1, 1], [0.3, 0.4])).toBeNaN();
  });

  it('average ranks for ties', () => {
    expect(averageRanks([10, 20, 20, 5])).toEqual([2, 3.5, 3.5, 1]);
  });

  it('classificationMetrics thresholds scores at 0.5', () => {
    // labels from scores: [0, 0, 0, 1]; y = [0, 0, 1, 1] -> accuracy 3/4; TP 1, FN 1, FP 0 -> F1 2/3.
    expect(classificationMetrics([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])).toEqual({ accuracy: 0.75, f1: expect.closeTo(2 / 3, 12), rocAuc: 0.75 });
  });

  it('refuses mismatched lengths with a clear message', () => {
    expect(() => accuracy([0, 1], [1])).toThrow(/2 true values but 1 predictions/);
  });
});

describe('regression metrics', () => {
  it('RMSE', () => {
    // errors 0, 0, 2 -> sqrt(4/3)
    expect(rmse([1, 2, 3], [1, 2, 5])).toBeCloseTo(Math.sqrt(4 / 3), 12);
  });

  it('quantiles interpolate like numpy (type 7)', () => {
    // sorted [1,2,3,4]: q=0.25 -> position 0.75 -> 1 + 0.75*(2-1) = 1.75; q=0.75 -> position 2.25 -> 3.25.
    expect(quantile([4, 1, 3, 2], 0.25)).toBeCloseTo(1.75, 12);
    expect(quantile([4, 1, 3, 2], 0.75)).toBeCloseTo(3.25, 12);
    expect(iqr([1, 2, 3, 4])).toBeCloseTo(1.5, 12);
    // numpy.percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], [25, 75]) -> [3.25, 7.75]
    expect(iqr([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])).toBeCloseTo(4.5, 12);
  });

  it('RMSE relative to the range and the IQR of the true targets', () => {
    // y = [10, 20, 30, 40, 50], predictions off by +5 everywhere: RMSE 5; range 40; IQR = 40 - 20 = 20.
    const m = regressionMetrics([10, 20, 30, 40, 50], [15, 25, 35, 45, 55]);
    expect(m.rmse).toBeCloseTo(5, 12);
    expect(m.rmseOverRange).toBeCloseTo(5 / 40, 12);
    expect(m.rmseOverIqr).toBeCloseTo(5 / 20, 12);
    expect(valueRange([3, -2, 7])).toBe(9);
  });
});
