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
import { SqlFunctionError, type SqlFunction } from '../../tools/sql-statements.ts';
import type { Cell, DataTable } from '../../tools/sql-tables.ts';
import { classificationMetrics, regressionMetrics } from './metrics.ts';

export type FitModel = 'linear' | 'logistic' | 'mlp';
const FIT_MODELS: FitModel[] = ['linear', 'logistic', 'mlp'];

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

export class FitError extends SqlFunctionError {
  constructor(message: string) {
    super(message);
    this.name = 'FitError';
  }
}

/**
 * fit_predict('train', 'test', 'target'[, 'model']) as the SQL tool's table function: the predictions
 * of a model fitted on the host (fitPredict) on tables of at most `maxRows` rows. Bad arguments throw FitError.
 */
export const FIT_PREDICT: SqlFunction = {
  name: 'fit_predict',
  async run(args, read, maxRows) {
    if (args.length < 3 || args.length > 4) {
      throw new FitError(`takes 3 or 4 arguments: fit_predict('train_table', 'test_table', 'target_column'[, 'linear' | 'logistic' | 'mlp']), ` +
        `got ${args.length}`);
    }
    const [trainName, testName, target, model] = args;
    if (model !== undefined && !FIT_MODELS.includes(model as FitModel)) throw new FitError(`model '${model}' is unknown; use one of ${FIT_MODELS.join(', ')}`);
    const result = fitPredict(await read(trainName), await read(testName), target, model as FitModel | undefined, { maxRows });
    return { summary: result.summary, table: result.predictions };
  },
};

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
      const fix = role === 'target'
        ? 'the target must be numbers (0/1 for classification)'
        : `encode it as numbers (e.g. CASE WHEN ${name} = '${String(v).replace(/'/g, "''")}' THEN 1 ELSE 0 END ` +
          `AS ${name}_${String(v).replace(/\W/g, '_')}) or leave it out`;
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
  const shape = checkTables(train, test, target, options.maxRows ?? 20_000);
  const { nTrain, nTest, features } = shape;
  const y = numericColumn(train, target, 'target'); // [N]
  const { chosen, task } = chooseModel(y, target, model);
  const data = prepareData(train, test, shape, y, task);
  const settings = fitSettings(chosen, options);
  const { trainScores, testScores, weights } = trainAndScore(chosen, task, data, settings);

  const trainMetrics: Record<string, number> = task === 'classification'
    ? { ...classificationMetrics(y, Array.from(trainScores)) }
    : { ...regressionMetrics(y, Array.from(trainScores)) };
  const predictions = predictionsTable(test, task, testScores, nTest);
  // Weights were fitted on standardised features (and target): report them per sd of each feature, in target units.
  const scaledWeights = weights?.map((w, j) => ({ feature: features[j], weight: round(task === 'regression' ? w * data.ySd : w) }));
  const result = { model: chosen, task, target, features, trainRows: nTrain, predictions, trainMetrics, weights: scaledWeights };
  return { ...result, summary: summarise(result, settings.hidden, nTest) };
}

type FitTask = FitResult['task'];

/** The fit's hyperparameters, FitOptions with the per-model defaults filled in. */
interface FitSettings {
  steps: number;
  lr: number;
  l2: number;
  hidden: number;
  seed: number;
}

/** The standardised inputs of one fit. */
interface FitData {
  d: number; // features
  nTrain: number; // N
  nTest: number; // M
  xTrain: Float32Array; // [N, d] row-major, standardised with the train mean/sd
  xTest: Float32Array; // [M, d] row-major, standardised with the train mean/sd
  yFit: number[]; // [N] the target as fitted: standardised for regression, 0/1 for classification
  yMean: number; // regression: the target's mean and sd, to undo on predictions; else 0 and 1
  ySd: number;
}

/** What training yields: probabilities (classification) or values in target units, and linear/logistic weights. */
interface Scores {
  trainScores: Float32Array; // [N]
  testScores: Float32Array; // [M]
  weights?: number[]; // [d] per standardised feature; linear and logistic only
}

/** The rows and features of one fit: N train rows, M test rows, d feature names. */
interface TableShape {
  nTrain: number;
  nTest: number;
  features: string[];
}

/** Row counts and feature names, or a FitError for a missing target, too few or too many rows, or mismatched features. */
function checkTables(train: DataTable, test: DataTable, target: string, maxRows: number): TableShape {
  if (!train.columns.includes(target)) throw new FitError(`table ${train.name} has no target column "${target}" (columns: ${train.columns.join(', ')})`);
  const nTrain = train.data[0]?.length ?? 0;
  const nTest = test.data[0]?.length ?? 0;
  if (nTrain < 5) throw new FitError(`table ${train.name} has ${nTrain} rows; fitting needs at least 5`);
  if (nTest < 1) throw new FitError(`table ${test.name} has no rows to predict`);
  if (nTrain > maxRows || nTest > maxRows) throw new FitError(`tables over ${maxRows} rows are too big for the in-browser fit`);
  const features = train.columns.filter((c) => c !== target && !isId(c));
  if (features.length === 0) throw new FitError(`table ${train.name} has no feature columns besides "${target}" and id`);
  const absent = features.filter((f) => !test.columns.includes(f));
  if (absent.length) {
    throw new FitError(`table ${test.name} lacks the feature column${absent.length > 1 ? 's' : ''} ${absent.join(', ')} that ${train.name} has; ` +
      'build both tables the same way');
  }
  return { nTrain, nTest, features };
}

/** The model to fit (default: 'logistic' for a 0/1 target, else 'linear') and whether that is classification or regression. */
function chooseModel(y: number[], target: string, model?: FitModel): { chosen: FitModel; task: FitTask } {
  const binary = y.every((v) => v === 0 || v === 1);
  const chosen: FitModel = model ?? (binary ? 'logistic' : 'linear');
  if (chosen === 'logistic' && !binary) throw new FitError(`logistic regression needs a 0/1 target; "${target}" has other values (use 'linear' for a number)`);
  const task: FitTask = chosen === 'logistic' || (chosen === 'mlp' && binary) ? 'classification' : 'regression';
  return { chosen, task };
}

/** Features of both tables as numbers standardised with the train mean/sd, and the target as fitted. */
function prepareData(train: DataTable, test: DataTable, { nTrain, nTest, features }: TableShape, y: number[], task: FitTask): FitData {
  const trainCols = features.map((f) => numericColumn(train, f, 'feature')); // d columns of N
  const testCols = features.map((f) => numericColumn(test, f, 'feature')); // d columns of M
  const { scaled: xTrainCols } = standardise(trainCols);
  const { scaled: xTestCols } = standardise(testCols, trainCols);
  const yMean = task === 'regression' ? y.reduce((a, b) => a + b, 0) / y.length : 0;
  const ySd = task === 'regression' ? Math.sqrt(y.reduce((a, b) => a + (b - yMean) ** 2, 0) / y.length) || 1 : 1;
  const yFit = y.map((v) => (v - yMean) / ySd);
  const d = features.length;
  return { d, nTrain, nTest, xTrain: matrix(xTrainCols, nTrain), xTest: matrix(xTestCols, nTest), yFit, yMean, ySd };
}

/** FitOptions with defaults: 300 steps at lr 0.05 for linear/logistic, 600 at 0.01 for the MLP; l2 1e-3; 16 hidden units. */
function fitSettings(chosen: FitModel, options: FitOptions): FitSettings {
  return {
    steps: options.steps ?? (chosen === 'mlp' ? 600 : 300),
    lr: options.learningRate ?? (chosen === 'mlp' ? 0.01 : 0.05),
    l2: options.l2 ?? 1e-3,
    hidden: options.hidden ?? 16,
    seed: options.seed ?? 0,
  };
}

/**
 * The trainable weights: linear/logistic [w [d, 1], b [1]] starting at zero; MLP [w1 [d, hidden], b1 [hidden],
 * w2 [hidden, 1], b2 [1]] with seeded normal weights. Even indices are the weights the L2 penalty applies to.
 */
function initVariables(chosen: FitModel, d: number, hidden: number, seed: number): tf.Variable[] {
  // Made inside tidy so the initial-value tensors are released (the variable keeps the data).
  if (chosen !== 'mlp') return [tf.tidy(() => tf.variable(tf.zeros([d, 1]))), tf.tidy(() => tf.variable(tf.zeros([1])))];
  return [tf.tidy(() => tf.variable(tf.randomNormal([d, hidden], 0, 1 / Math.sqrt(d), 'float32', seed))), tf.tidy(() => tf.variable(tf.zeros([hidden]))),
    tf.tidy(() => tf.variable(tf.randomNormal([hidden, 1], 0, 1 / Math.sqrt(hidden), 'float32', seed + 1))), tf.tidy(() => tf.variable(tf.zeros([1])))];
}

/** The model on rows x [rows, d]: logits (classification) or standardised values (regression), [rows, 1]. */
function forward(chosen: FitModel, vars: tf.Variable[], x: tf.Tensor2D): tf.Tensor2D {
  if (chosen !== 'mlp') return tf.add(tf.matMul(x, vars[0] as tf.Tensor2D), vars[1]);
  const h = tf.tanh(tf.add(tf.matMul(x, vars[0] as tf.Tensor2D), vars[1])); // [rows, hidden]
  return tf.add(tf.matMul(h, vars[2] as tf.Tensor2D), vars[3]);
}

/** Training loss: cross-entropy (classification) or mean squared error (regression), plus l2 times the sum of squared weights. */
function loss(chosen: FitModel, task: FitTask, vars: tf.Variable[], x: tf.Tensor2D, y: tf.Tensor2D, l2: number): tf.Scalar {
  const out = forward(chosen, vars, x); // [N, 1]
  const fitLoss = task === 'classification' ? tf.losses.sigmoidCrossEntropy(y, out) : tf.losses.meanSquaredError(y, out);
  const penalty = vars.filter((_, k) => k % 2 === 0).map((w) => tf.sum(tf.square(w))).reduce((a, b) => tf.add(a, b));
  return tf.add(fitLoss, tf.mul(penalty, l2)) as tf.Scalar;
}

/** Full-batch Adam on the train rows, then the scores of train and test rows; disposes every tensor it made. */
function trainAndScore(chosen: FitModel, task: FitTask, data: FitData, s: FitSettings): Scores {
  const xTrain = tf.tensor2d(data.xTrain, [data.nTrain, data.d]); // [N, d]
  const xTest = tf.tensor2d(data.xTest, [data.nTest, data.d]); // [M, d]
  const yT = tf.tensor2d(Float32Array.from(data.yFit), [data.nTrain, 1]); // [N, 1]
  const vars = initVariables(chosen, data.d, s.hidden, s.seed);
  const optimizer = tf.train.adam(s.lr);
  try {
    for (let step = 0; step < s.steps; step++) optimizer.minimize(() => loss(chosen, task, vars, xTrain, yT, s.l2), false, vars);
    // Back to the target's scale: probabilities via the sigmoid, or undo the target standardisation.
    const link = (x: tf.Tensor2D) => tf.tidy(() => (task === 'classification'
      ? tf.sigmoid(forward(chosen, vars, x))
      : tf.add(tf.mul(forward(chosen, vars, x), data.ySd), data.yMean)).dataSync() as Float32Array);
    const trainScores = link(xTrain);
    const testScores = link(xTest);
    return { trainScores, testScores, weights: chosen !== 'mlp' ? Array.from(vars[0].dataSync()) : undefined };
  } finally {
    tf.dispose([xTrain, xTest, yT, ...vars]);
    optimizer.dispose();
  }
}

const round = (v: number) => Number(v.toFixed(6));
const fmt = (v: number) => (Number.isFinite(v) ? v.toFixed(3) : 'n/a');

/** The test table's id column (or row numbers 1..M as "row"), the prediction and, for classification, the probability. */
function predictionsTable(test: DataTable, task: FitTask, testScores: Float32Array, nTest: number): DataTable {
  const idIndex = test.columns.findIndex(isId);
  const ids: Cell[] = idIndex >= 0 ? test.data[idIndex] : Array.from({ length: nTest }, (_, i) => i + 1);
  const idColumn = idIndex >= 0 ? test.columns[idIndex] : 'row';
  if (task === 'regression') return { name: 'predictions', columns: [idColumn, 'prediction'], data: [ids, Array.from(testScores, round)] };
  return {
    name: 'predictions',
    columns: [idColumn, 'prediction', 'probability'],
    data: [ids, Array.from(testScores, (p) => (p >= 0.5 ? 1 : 0)), Array.from(testScores, round)],
  };
}

/** The paragraph the agent reads: model, target, features, row counts, train figures and, if any, the effect per sd. */
function summarise(r: Omit<FitResult, 'summary'>, hidden: number, nTest: number): string {
  const name = { linear: 'linear regression', logistic: 'logistic regression', mlp: `MLP (${hidden} tanh units)` }[r.model];
  const d = r.features.length;
  const figures = r.task === 'classification'
    ? `train accuracy ${fmt(r.trainMetrics.accuracy)}, train ROC-AUC ${fmt(r.trainMetrics.rocAuc)}`
    : `train RMSE ${fmt(r.trainMetrics.rmse)} (${fmt(r.trainMetrics.rmseOverRange)} of the range)`;
  return `fit_predict: ${name} of ${r.target} on ${d} feature${d > 1 ? 's' : ''} (${r.features.join(', ')}), ` +
    `${r.trainRows} train rows -> ${nTest} predictions; ${figures}` +
    (r.weights ? `; effect per sd: ${r.weights.map((w) => `${w.feature} ${w.weight >= 0 ? '+' : ''}${w.weight.toFixed(2)}`).join(', ')}` : '');
}
