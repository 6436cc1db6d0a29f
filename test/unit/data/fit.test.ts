/** Model fitting through tfjs: known coefficients are recovered, the logistic optimum satisfies the
 *  likelihood equations, bad input gets a message naming the column and the fix, nothing leaks. */
import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/core/engine/backend.ts';
import { FitError, fitPredict } from '../../../src/core/domains/data/fit.ts';
import type { DataTable } from '../../../src/core/tools/sql-tables.ts';
import { Rng } from '../../../src/core/stats/rng.ts';

beforeAll(async () => {
  await initBackend({ force: 'cpu' });
});

function table(name: string, columns: Record<string, (number | string | null)[]>): DataTable {
  return { name, columns: Object.keys(columns), data: Object.values(columns) };
}

describe('fitPredict', () => {
  it('linear regression recovers y = 1 + 2 x1 - 3 x2 and predicts new rows', () => {
    const rng = new Rng('fit-linear');
    const x1 = Array.from({ length: 60 }, () => rng.normal(0, 1));
    const x2 = Array.from({ length: 60 }, () => rng.normal(5, 2));
    const y = x1.map((a, i) => 1 + 2 * a - 3 * x2[i]);
    const r = fitPredict(table('train', { id: x1.map((_, i) => i + 1), x1, x2, y }), table('test', { id: [101, 102], x1: [0, 1], x2: [0, 2] }), 'y', 'linear', { steps: 600 });
    expect(r.task).toBe('regression');
    expect(r.features).toEqual(['x1', 'x2']);
    expect(r.predictions.columns).toEqual(['id', 'prediction']);
    expect(r.predictions.data[0]).toEqual([101, 102]);
    // Exact answers: 1 + 0 - 0 = 1 and 1 + 2 - 6 = -3.
    expect(r.predictions.data[1][0] as number).toBeCloseTo(1, 1);
    expect(r.predictions.data[1][1] as number).toBeCloseTo(-3, 1);
    expect(r.trainMetrics.rmse).toBeLessThan(0.05);
  });

  it('logistic regression reaches the maximum-likelihood point: sum_i (y_i - p_i) x_i = 0', () => {
    const rng = new Rng('fit-logistic');
    const x = Array.from({ length: 200 }, () => rng.normal(0, 1));
    const y: number[] = x.map((v) => (rng.next() < 1 / (1 + Math.exp(-(0.5 + 1.5 * v))) ? 1 : 0));
    const r = fitPredict(table('train', { x, y }), table('test', { x }), 'y', undefined, { l2: 0, steps: 800 });
    expect(r.model).toBe('logistic');
    expect(r.predictions.columns).toEqual(['row', 'prediction', 'probability']);
    const p = r.predictions.data[2] as number[];
    // The score equations of the unpenalised MLE (independent of how it was found).
    const residual = y.reduce((s, yi, i) => s + (yi - p[i]), 0) / y.length;
    const residualX = y.reduce((s, yi, i) => s + (yi - p[i]) * x[i], 0) / y.length;
    expect(Math.abs(residual)).toBeLessThan(2e-3);
    expect(Math.abs(residualX)).toBeLessThan(2e-3);
    expect(r.predictions.data[1]).toEqual(p.map((v) => (v >= 0.5 ? 1 : 0)));
    expect(r.summary).toMatch(/^fit_predict: logistic regression of y on 1 feature \(x\), 200 train rows -> 200 predictions; train accuracy/);
  });

  it('an MLP fits a curve a line cannot', () => {
    const x = Array.from({ length: 80 }, (_, i) => -2 + (4 * i) / 79);
    const y = x.map((v) => v * v);
    const lin = fitPredict(table('t', { x, y }), table('u', { x }), 'y', 'linear');
    const mlp = fitPredict(table('t', { x, y }), table('u', { x }), 'y', 'mlp', { steps: 800, learningRate: 0.03 });
    expect(mlp.trainMetrics.rmse).toBeLessThan(lin.trainMetrics.rmse / 3);
  });

  it('bad inputs name the column and the fix', () => {
    const train = table('train_features', { id: [1, 2, 3, 4, 5, 6], x: [1, 2, null, 4, 5, 6], plan: ['a', 'b', 'a', 'b', 'a', 'b'], y: [0, 1, 0, 1, 0, 1] });
    const test = table('test_features', { id: [7], x: [1], plan: ['a'] });
    expect(() => fitPredict(train, test, 'y')).toThrow(FitError);
    expect(() => fitPredict(train, test, 'y')).toThrow(/column "x" of table train_features has 1 missing value; fill them first, e.g. COALESCE\(x, <mean>\)/);
    const noNull = { ...train, data: [train.data[0], [1, 2, 3, 4, 5, 6], train.data[2], train.data[3]] };
    expect(() => fitPredict(noNull, test, 'y')).toThrow(/column "plan" of table train_features holds text \('a'\); encode it as numbers \(e.g. CASE WHEN plan = 'a' THEN 1 ELSE 0 END/);
    expect(() => fitPredict(noNull, test, 'target')).toThrow(/has no target column "target"/);
    expect(() => fitPredict(table('t', { x: [1, 2, 3, 4, 5], y: [1, 2, 3, 4, 5] }), table('u', { z: [1] }), 'y')).toThrow(/table u lacks the feature column x/);
    expect(() => fitPredict(table('t', { x: [1, 2, 3, 4, 5], y: [1, 2, 3, 4, 5] }), table('u', { x: [1] }), 'y', 'logistic')).toThrow(/needs a 0\/1 target/);
  });

  it('leaks no tensors', () => {
    const before = tf.memory().numTensors;
    fitPredict(table('t', { x: [1, 2, 3, 4, 5, 6], y: [0, 0, 1, 0, 1, 1] }), table('u', { x: [2.5] }), 'y', 'mlp', { steps: 20 });
    fitPredict(table('t', { x: [1, 2, 3, 4, 5, 6], y: [0, 0, 1, 0, 1, 1] }), table('u', { x: [2.5] }), 'y', 'logistic', { steps: 20 });
    expect(tf.memory().numTensors).toBe(before);
  });
});
