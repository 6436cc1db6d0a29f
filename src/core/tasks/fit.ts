/**
 * Model fitting for the data-analysis team: linear regression, logistic regression and a small MLP,
 * fitted with tfjs (autodiff + the Adam optimizer), exposed to the agents as a SQL table function.
 *
 * For: `fitPredict(train, test, target, model)` -> predictions for the test rows plus training-set
 * figures and a one-paragraph summary the agent reads. Not for: metrics on held-out targets
 * (metrics.ts) or SQL (tools/sql.ts; tools/sql-statements.ts calls this).
 *
 * How agents use it (the simplest real design: the team already speaks SQL, so fitting is a table
 * function of the SQL tool; tools/sql-statements.ts reads the two tables from DuckDB, calls fitPredict
 * on the host's tfjs, and hands the predictions back to DuckDB as a table):
 *   CREATE TABLE predictions AS
 *     SELECT * FROM fit_predict('train_features', 'test_features', 'churned', 'logistic');
 *   -> columns id, prediction (0/1), probability        (classification)
 *   -> columns id, prediction                           (regression: 'linear', or 'mlp' on a numeric target)
 * The model argument is optional: 'logistic' when the target holds only 0/1, else 'linear'.
 * Features are every column of the train table except the target and "id"; they must be numbers
 * (or booleans) without missing values, and the test table must have them all. Anything else is a
 * FitError whose message says which column is wrong and what to do (the Data Engineer's job).
 *
 * Fitting: features (and a regression target) are standardised with the train mean/sd; weights start
 * at zero (linear/logistic: convex, so the result does not depend on a seed) or seeded normal (MLP:
 * one tanh hidden layer); full-batch Adam for a fixed number of steps with a small L2 penalty.
 * Runs on whatever tfjs backend is active; every tensor is disposed.
 * Example: fitPredict({name: 't', columns: ['x', 'y'], data: [[0, 1, 2, 3], [1, 3, 5, 7]]},
 *            {name: 'u', columns: ['x'], data: [[4]]}, 'y', 'linear').predictions.data[1]  // [~9]
 */
import * as tf from '@tensorflow/tfjs-core';
import { classificationMetrics, regressionMetrics } from './metrics.ts';

export type Cell = number | string | boolean | null;

/** A table by columns: data[j][i] is row i of column j. */
export interface DataTable {
  name: string;
  columns: string[];
  data: Cell[][];
}

export type FitModel = 'linear' | 'logistic' | 'mlp';
export const FIT_MODELS: FitModel[] = ['linear', 'logistic', 'mlp'];

export interface FitOptions {
  steps?: number; // default 300 (linear/logistic), 600 (mlp)
  learningRate?: number; // default 0.05 (linear/logistic), 0.01 (mlp)
  hidden?: number; // MLP hidden units, default 16
  l2?: number; // penalty on the weights, default 1e-3
  seed?: number; // MLP initialisation
  maxRows?: number; // refuse bigger tables, default 20000
}

export interface FitResult {
  model: FitModel;
  task: 'classification' | 'regression';
  target: string;
  features: string[];
  trainRows: number;
  /** id (or row), prediction and, for classification, probability. */
  predictions: DataTable;
  /** On the training rows: accuracy, f1, rocAuc (classification) or rmse, rmseOverRange, rmseOverIqr. */
  trainMetrics: Record<string, number>;
  /** Linear and logistic only: effect of one standard deviation of each feature. */
  weights?: { feature: string; weight: number }[];
  summary: string;
}

export class FitError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FitError';
  }
}

const isId = (name: string) => name.toLowerCase() === 'id';

/** A column as numbers, or a FitError naming the table, the column and the fix. */
function numericColumn(table: DataTable, name: string, role: 'feature' | 'target'): number[] {
  const j = table.columns.indexOf(name);
  const values = table.data[j];
  const out: number[] = [];
  let missing = 0;
  for (const v of values) {
    if (v === null || v === undefined || (typeof v === 'number' && Number.isNaN(v))) missing++;
    else if (typeof v === 'boolean') out.push(v ? 1 : 0);
    else if (typeof v === 'number') out.push(v);
    else {
      const fix = role === 'target' ? 'the target must be numbers (0/1 for classification)' : `encode it as numbers (e.g. CASE WHEN ${name} = '${String(v).replace(/'/g, "''")}' THEN 1 ELSE 0 END AS ${name}_${String(v).replace(/\W/g, '_')}) or leave it out`;
      throw new FitError(`column "${name}" of table ${table.name} holds text ('${String(v).slice(0, 20)}'); ${fix}`);
    }
  }
  if (missing) {
    throw new FitError(`column "${name}" of table ${table.name} has ${missing} missing value${missing > 1 ? 's' : ''}; ` +
      (role === 'target' ? 'drop those rows (WHERE ' + name + ' IS NOT NULL)' : `fill them first, e.g. COALESCE(${name}, <mean>) AS ${name}`));
  }
  return out;
}

function standardise(columns: number[][], reference: number[][] = columns): { scaled: number[][]; mean: number[]; sd: number[] } {
  const mean = reference.map((c) => c.reduce((a, b) => a + b, 0) / c.length);
  const sd = reference.map((c, j) => Math.sqrt(c.reduce((a, b) => a + (b - mean[j]) ** 2, 0) / c.length) || 1);
  return { scaled: columns.map((c, j) => c.map((v) => (v - mean[j]) / sd[j])), mean, sd };
}

/** Row-major Float32Array [rows, features] from standardised columns. */
function matrix(columns: number[][], rows: number): Float32Array {
  const d = columns.length;
  const x = new Float32Array(rows * d);
  for (let j = 0; j < d; j++) for (let i = 0; i < rows; i++) x[i * d + j] = columns[j][i];
  return x;
}

/** Fits `model` on `train` and predicts every row of `test`. Throws FitError on unusable input. */
export function fitPredict(train: DataTable, test: DataTable, target: string, model?: FitModel, options: FitOptions = {}): FitResult {
  const maxRows = options.maxRows ?? 20_000;
  if (!train.columns.includes(target)) throw new FitError(`table ${train.name} has no target column "${target}" (columns: ${train.columns.join(', ')})`);
  const nTrain = train.data[0]?.length ?? 0;
  const nTest = test.data[0]?.length ?? 0;
  if (nTrain < 5) throw new FitError(`table ${train.name} has ${nTrain} rows; fitting needs at least 5`);
  if (nTest < 1) throw new FitError(`table ${test.name} has no rows to predict`);
  if (nTrain > maxRows || nTest > maxRows) throw new FitError(`tables over ${maxRows} rows are too big for the in-browser fit`);
  const features = train.columns.filter((c) => c !== target && !isId(c));
  if (features.length === 0) throw new FitError(`table ${train.name} has no feature columns besides "${target}" and id`);
  const absent = features.filter((f) => !test.columns.includes(f));
  if (absent.length) throw new FitError(`table ${test.name} lacks the feature column${absent.length > 1 ? 's' : ''} ${absent.join(', ')} that ${train.name} has; build both tables the same way`);

  const y = numericColumn(train, target, 'target');
  const binary = y.every((v) => v === 0 || v === 1);
  const chosen: FitModel = model ?? (binary ? 'logistic' : 'linear');
  if (chosen === 'logistic' && !binary) throw new FitError(`logistic regression needs a 0/1 target; "${target}" has other values (use 'linear' for a number)`);
  const task = chosen === 'logistic' || (chosen === 'mlp' && binary) ? 'classification' : 'regression';

  const trainCols = features.map((f) => numericColumn(train, f, 'feature'));
  const testCols = features.map((f) => numericColumn(test, f, 'feature'));
  const { scaled: xTrainCols } = standardise(trainCols);
  const { scaled: xTestCols } = standardise(testCols, trainCols);
  const yMean = task === 'regression' ? y.reduce((a, b) => a + b, 0) / y.length : 0;
  const ySd = task === 'regression' ? Math.sqrt(y.reduce((a, b) => a + (b - yMean) ** 2, 0) / y.length) || 1 : 1;
  const yFit = y.map((v) => (v - yMean) / ySd);

  const d = features.length;
  const steps = options.steps ?? (chosen === 'mlp' ? 600 : 300);
  const lr = options.learningRate ?? (chosen === 'mlp' ? 0.01 : 0.05);
  const l2 = options.l2 ?? 1e-3;
  const hidden = options.hidden ?? 16;
  const seed = options.seed ?? 0;

  const xTrain = tf.tensor2d(matrix(xTrainCols, nTrain), [nTrain, d]); // [N, d]
  const xTest = tf.tensor2d(matrix(xTestCols, nTest), [nTest, d]); // [M, d]
  const yT = tf.tensor2d(Float32Array.from(yFit), [nTrain, 1]); // [N, 1]
  // Made inside tidy so the initial-value tensors are released (the variable keeps the data).
  const vars: tf.Variable[] = chosen === 'mlp'
    ? [tf.tidy(() => tf.variable(tf.randomNormal([d, hidden], 0, 1 / Math.sqrt(d), 'float32', seed))), tf.tidy(() => tf.variable(tf.zeros([hidden]))),
      tf.tidy(() => tf.variable(tf.randomNormal([hidden, 1], 0, 1 / Math.sqrt(hidden), 'float32', seed + 1))), tf.tidy(() => tf.variable(tf.zeros([1])))]
    : [tf.tidy(() => tf.variable(tf.zeros([d, 1]))), tf.tidy(() => tf.variable(tf.zeros([1])))];
  const forward = (x: tf.Tensor2D): tf.Tensor2D => { // logits or standardised values, [rows, 1]
    if (chosen !== 'mlp') return tf.add(tf.matMul(x, vars[0] as tf.Tensor2D), vars[1]);
    const h = tf.tanh(tf.add(tf.matMul(x, vars[0] as tf.Tensor2D), vars[1])); // [rows, hidden]
    return tf.add(tf.matMul(h, vars[2] as tf.Tensor2D), vars[3]);
  };
  const optimizer = tf.train.adam(lr);
  let trainScores: Float32Array;
  let testScores: Float32Array;
  let weights: number[] | undefined;
  try {
    for (let step = 0; step < steps; step++) {
      optimizer.minimize(() => {
        const out = forward(xTrain);
        const fitLoss = task === 'classification' ? tf.losses.sigmoidCrossEntropy(yT, out) : tf.losses.meanSquaredError(yT, out);
        const penalty = vars.filter((_, k) => k % 2 === 0).map((w) => tf.sum(tf.square(w))).reduce((a, b) => tf.add(a, b));
        return tf.add(fitLoss, tf.mul(penalty, l2)) as tf.Scalar;
      }, false, vars);
    }
    const link = (x: tf.Tensor2D) => tf.tidy(() => (task === 'classification' ? tf.sigmoid(forward(x)) : tf.add(tf.mul(forward(x), ySd), yMean)).dataSync() as Float32Array);
    trainScores = link(xTrain);
    testScores = link(xTest);
    if (chosen !== 'mlp') weights = Array.from(vars[0].dataSync());
  } finally {
    tf.dispose([xTrain, xTest, yT, ...vars]);
    optimizer.dispose();
  }

  const trainMetrics: Record<string, number> = task === 'classification'
    ? { ...classificationMetrics(y, Array.from(trainScores)) }
    : { ...regressionMetrics(y, Array.from(trainScores)) };
  const idIndex = test.columns.findIndex(isId);
  const ids: Cell[] = idIndex >= 0 ? test.data[idIndex] : Array.from({ length: nTest }, (_, i) => i + 1);
  const round = (v: number) => Number(v.toFixed(6));
  const predictions: DataTable = task === 'classification'
    ? { name: 'predictions', columns: [idIndex >= 0 ? test.columns[idIndex] : 'row', 'prediction', 'probability'],
      data: [ids, Array.from(testScores, (p) => (p >= 0.5 ? 1 : 0)), Array.from(testScores, round)] }
    : { name: 'predictions', columns: [idIndex >= 0 ? test.columns[idIndex] : 'row', 'prediction'], data: [ids, Array.from(testScores, round)] };
  const scaledWeights = weights?.map((w, j) => ({ feature: features[j], weight: round(task === 'regression' ? w * ySd : w) }));
  const name = { linear: 'linear regression', logistic: 'logistic regression', mlp: `MLP (${hidden} tanh units)` }[chosen];
  const fmt = (v: number) => (Number.isFinite(v) ? v.toFixed(3) : 'n/a');
  const figures = task === 'classification'
    ? `train accuracy ${fmt(trainMetrics.accuracy)}, train ROC-AUC ${fmt(trainMetrics.rocAuc)}`
    : `train RMSE ${fmt(trainMetrics.rmse)} (${fmt(trainMetrics.rmseOverRange)} of the range)`;
  const summary = `fit_predict: ${name} of ${target} on ${d} feature${d > 1 ? 's' : ''} (${features.join(', ')}), ${nTrain} train rows -> ${nTest} predictions; ${figures}` +
    (scaledWeights ? `; effect per sd: ${scaledWeights.map((w) => `${w.feature} ${w.weight >= 0 ? '+' : ''}${w.weight.toFixed(2)}`).join(', ')}` : '');
  return { model: chosen, task, target, features, trainRows: nTrain, predictions, trainMetrics, weights: scaledWeights, summary };
}
