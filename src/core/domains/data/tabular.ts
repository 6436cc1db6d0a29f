// Synthetic tabular tasks for the data-analysis team (Data Engineer -> Modeler -> Analyst).
//
// Three kinds, all seeded and drawn from small named scenarios (customer churn, loan default,
// house prices, ...):
//   classification  y ~ Bernoulli(sigmoid(intercept + sum_j coef_j * z_j + effect[category])),
//                   then a few labels flipped (labelNoise)
//   regression      y = intercept + sum_j coef_j * z_j + effect[category] + quad * z_k^2 + N(0, noiseSd)
//   table-question  an aggregate over a filtered table ("mean of X where Y > 3"), answer computed
//                   from the CSV exactly as written
// where z_j = (x_j - mean_j) / sd_j uses the value as written in the CSV (before masking) and the
// mean/sd listed in `generator`. One numeric feature per task is pure noise (coefficient 0), and
// about 5 % of the values of two columns are blank (missing), in train and test alike.
// Every task keeps its true coefficients in `generator`, so the coach and the UI can show how
// close a fitted model came.
//
// Held-out set: tabularHeldOut() is fixed (reserved seed); generateTabularTasks() rejects any
// table whose CSV equals a held-out one, so training never sees a held-out table.
//
// Not for: metrics (accuracy, ROC-AUC, RMSE; metrics.ts), reading or writing CSV (tools/csv.ts) or running the agents' code.
//
// Example:
//   const [task] = generateTabularTasks({ seed: 3, count: 1, kinds: ['regression'] });
//   parseCsv(task.csv)[0]   // ['id', 'outdoor_temp_c', 'occupancy', 'floor_area_m2', 'window_ratio', 'insulation', 'energy_kwh']
//   task.testTargets.length // 100, one per row of task.testCsv

import { Rng, hashString, type Seed } from '../../stats/rng.ts';
import { parseCsvRecords, toCsv, type CsvCell } from '../../tools/csv.ts';

// ---- scenarios -------------------------------------------------------------------------------

interface NumericSpec { name: string; mean: number; sd: number; decimals: number; min: number }
interface CategoricalSpec { name: string; levels: string[] }
interface Scenario {
  name: string;
  kind: 'classification' | 'regression';
  goal: string; // what the target means, in words
  target: { name: string; decimals: number; base: number; scale: number };
  numeric: NumericSpec[];
  categorical: CategoricalSpec;
}

const num = (name: string, mean: number, sd: number, decimals: number, min = 0): NumericSpec => ({ name, mean, sd, decimals, min });

const SCENARIOS: Scenario[] = [
  { name: 'churn', kind: 'classification', goal: 'whether a customer cancelled their subscription (churned = 1)',
    target: { name: 'churned', decimals: 0, base: 0, scale: 1 },
    numeric: [num('tenure_months', 24, 12, 0), num('monthly_spend', 60, 20, 2), num('support_calls', 2, 1.5, 0), num('logins_per_week', 5, 2.5, 0)],
    categorical: { name: 'plan', levels: ['basic', 'plus', 'pro'] } },
  { name: 'loan', kind: 'classification', goal: 'whether a loan was not repaid (defaulted = 1)', target: { name: 'defaulted', decimals: 0, base: 0, scale: 1 },
    numeric: [num('income_k', 55, 18, 1, 8), num('debt_ratio', 0.35, 0.15, 3), num('age', 41, 12, 0, 18), num('late_payments', 1, 1.2, 0)],
    categorical: { name: 'region', levels: ['north', 'south', 'east', 'west'] } },
  { name: 'clinic', kind: 'classification', goal: 'whether a patient was diagnosed with the condition (diagnosed = 1)',
    target: { name: 'diagnosed', decimals: 0, base: 0, scale: 1 },
    numeric: [num('bmi', 27, 5, 1, 15), num('glucose', 105, 25, 0, 50), num('age', 50, 14, 0, 18), num('sleep_hours', 7, 1.2, 1, 3)],
    categorical: { name: 'activity', levels: ['low', 'medium', 'high'] } },
  { name: 'housing', kind: 'regression', goal: 'the sale price of a flat in thousands (price_k)',
    target: { name: 'price_k', decimals: 1, base: 320, scale: 60 },
    numeric: [num('area_m2', 85, 25, 0, 25), num('rooms', 3, 1, 0, 1), num('building_age', 30, 18, 0), num('distance_km', 6, 3, 1, 0.2)],
    categorical: { name: 'district', levels: ['old_town', 'harbour', 'suburbs', 'hills'] } },
  { name: 'energy', kind: 'regression', goal: 'the daily energy use of a building in kWh (energy_kwh)',
    target: { name: 'energy_kwh', decimals: 1, base: 140, scale: 25 },
    numeric: [num('outdoor_temp_c', 12, 8, 1, -15), num('occupancy', 40, 15, 0), num('floor_area_m2', 900, 300, 0, 100),
      num('window_ratio', 0.3, 0.1, 2, 0.05)],
    categorical: { name: 'insulation', levels: ['poor', 'average', 'good'] } },
  { name: 'crops', kind: 'regression', goal: 'the harvest of a field in tonnes per hectare (yield_t_ha)',
    target: { name: 'yield_t_ha', decimals: 2, base: 6, scale: 1.2 },
    numeric: [num('rainfall_mm', 550, 120, 0, 100), num('fertilizer_kg', 140, 40, 0), num('sun_hours', 1800, 250, 0, 800), num('slope_deg', 4, 3, 1)],
    categorical: { name: 'soil', levels: ['clay', 'loam', 'sand'] } },
];

// ---- task types ------------------------------------------------------------------------------

export interface TabularGenerator {
  scenario: string;
  nTrain: number;
  nTest: number;
  intercept: number;
  /** Effect per standard deviation: contribution coefficient * (x - mean) / sd. */
  numeric: { name: string; mean: number; sd: number; coefficient: number }[];
  categorical: { name: string; effects: Record<string, number> };
  /** Regression only: coefficient * z(feature)^2. */
  nonlinear?: { feature: string; form: 'square'; coefficient: number };
  noiseSd?: number; // regression
  labelNoise?: number; // classification: probability a label is flipped
  missingRate: Record<string, number>;
}

export interface TabularTask {
  kind: 'classification' | 'regression';
  id: string;
  /** The goal in words, with file and column names. */
  description: string;
  /** Train split, with an "id" column and the target column. */
  csv: string;
  /** Test split: "id" and the features, no target. */
  testCsv: string;
  /** True target per test row, in testCsv order (0/1 for classification). */
  testTargets: number[];
  target: string;
  source: 'generated' | 'generated-heldout';
  generator: TabularGenerator;
}

export type TableAggregate = 'mean' | 'sum' | 'count' | 'min' | 'max' | 'median';

export interface TableQuestionTask {
  kind: 'table-question';
  id: string;
  description: string; // same as question plus how to answer
  question: string;
  csv: string;
  /** The answer rounded to 2 decimals as text ("12.35"; counts are integers: "17"). */
  answer: string;
  answerValue: number;
  source: 'generated' | 'generated-heldout';
  generator: { scenario: string; aggregate: TableAggregate; column: string; filter: { column: string; op: '>' | '<' | '=='; value: string | number } };
}

export type TabularSuiteTask = TabularTask | TableQuestionTask;
export type TabularKind = TabularSuiteTask['kind'];

// ---- generation ------------------------------------------------------------------------------

const MISSING_RATE = 0.05;
const round = (x: number, decimals: number) => Number(x.toFixed(decimals));
const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));

function drawGenerator(rng: Rng, scenario: Scenario, nTrain: number, nTest: number): TabularGenerator {
  const noiseIndex = rng.int(0, scenario.numeric.length - 1); // this feature has no effect
  const s = scenario.target.scale;
  const numeric = scenario.numeric.map((f, j) => ({
    name: f.name, mean: f.mean, sd: f.sd,
    coefficient: j === noiseIndex ? 0 : round((rng.bernoulli(0.5) ? 1 : -1) * rng.uniform(0.4, 1.5) * s, 3),
  }));
  const effects: Record<string, number> = {};
  scenario.categorical.levels.forEach((level, k) => (effects[level] = k === 0 ? 0 : round(rng.uniform(-1, 1) * s, 3)));
  const maskable = [...scenario.numeric.map((f) => f.name), scenario.categorical.name];
  const missingRate: Record<string, number> = {};
  for (const name of rng.shuffle(maskable).slice(0, 2)) missingRate[name] = MISSING_RATE;
  const gen: TabularGenerator = {
    scenario: scenario.name, nTrain, nTest,
    intercept: scenario.kind === 'classification' ? round(rng.uniform(-0.6, 0.3), 3) : scenario.target.base,
    numeric, categorical: { name: scenario.categorical.name, effects }, missingRate,
  };
  if (scenario.kind === 'regression') {
    const candidates = numeric.filter((f) => f.coefficient !== 0);
    gen.nonlinear = { feature: rng.pick(candidates).name, form: 'square', coefficient: round(rng.uniform(0.3, 0.8) * s * (rng.bernoulli(0.5) ? 1 : -1), 3) };
    gen.noiseSd = round(0.3 * s, 3);
  } else gen.labelNoise = 0.05;
  return gen;
}

/** Rows of [id, ...features, target] as written to the CSV (null = missing). */
function drawRows(rng: Rng, scenario: Scenario, gen: TabularGenerator, count: number, firstId: number): { cells: CsvCell[][]; targets: number[] } {
  const cells: CsvCell[][] = [];
  const targets: number[] = [];
  for (let r = 0; r < count; r++) {
    const values = scenario.numeric.map((f) => round(Math.max(f.min, rng.normal(f.mean, f.sd)), f.decimals));
    const level = rng.pick(scenario.categorical.levels);
    let eta = gen.intercept + gen.categorical.effects[level];
    gen.numeric.forEach((f, j) => (eta += f.coefficient * ((values[j] - f.mean) / f.sd)));
    let y: number;
    if (scenario.kind === 'classification') {
      y = rng.next() < sigmoid(eta) ? 1 : 0;
      if (rng.bernoulli(gen.labelNoise ?? 0)) y = 1 - y;
    } else {
      const nl = gen.nonlinear!;
      const j = gen.numeric.findIndex((f) => f.name === nl.feature);
      const z = (values[j] - gen.numeric[j].mean) / gen.numeric[j].sd;
      y = round(eta + nl.coefficient * z * z + rng.normal(0, gen.noiseSd ?? 0), scenario.target.decimals);
    }
    const row: CsvCell[] = [firstId + r];
    scenario.numeric.forEach((f, j) => row.push(rng.bernoulli(gen.missingRate[f.name] ?? 0) ? null : values[j].toFixed(f.decimals)));
    row.push(rng.bernoulli(gen.missingRate[scenario.categorical.name] ?? 0) ? null : level);
    row.push(scenario.kind === 'classification' ? y : y.toFixed(scenario.target.decimals));
    cells.push(row);
    targets.push(y);
  }
  return { cells, targets };
}

function makeModelTask(rng: Rng, scenario: Scenario, id: string, source: TabularTask['source'], nTrain = 200, nTest = 100): TabularTask {
  const gen = drawGenerator(rng, scenario, nTrain, nTest);
  const header = ['id', ...scenario.numeric.map((f) => f.name), scenario.categorical.name, scenario.target.name];
  const train = drawRows(rng, scenario, gen, nTrain, 1);
  const test = drawRows(rng, scenario, gen, nTest, nTrain + 1);
  const features = header.slice(1, -1).join(', ');
  const metric = scenario.kind === 'classification' ? 'ROC-AUC and accuracy' : 'RMSE relative to the target range';
  return {
    kind: scenario.kind, id, source, target: scenario.target.name,
    description:
      `Predict ${scenario.goal} from ${features}. data.csv has ${nTrain} rows with the target column "${scenario.target.name}"; ` +
      `test.csv has ${nTest} rows without it. Some values are missing (empty cells). Write one prediction per test id; ` +
      `predictions are scored by ${metric}.`,
    csv: toCsv([header, ...train.cells]),
    testCsv: toCsv([header.slice(0, -1), ...test.cells.map((row) => row.slice(0, -1))]),
    testTargets: test.targets,
    generator: gen,
  };
}

/** The aggregate of the numbers in `values` (missing already removed); NaN for an empty list. */
export function aggregate(op: TableAggregate, values: readonly number[]): number {
  if (op === 'count') return values.length;
  if (values.length === 0) return NaN;
  if (op === 'sum') return values.reduce((a, b) => a + b, 0);
  if (op === 'mean') return values.reduce((a, b) => a + b, 0) / values.length;
  if (op === 'min') return Math.min(...values);
  if (op === 'max') return Math.max(...values);
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

function makeQuestionTask(rng: Rng, scenario: Scenario, id: string, source: TableQuestionTask['source']): TableQuestionTask {
  const gen = drawGenerator(rng, scenario, 80, 0);
  const header = ['id', ...scenario.numeric.map((f) => f.name), scenario.categorical.name, scenario.target.name];
  const rows = drawRows(rng, scenario, gen, rng.int(40, 80), 1).cells;
  const csv = toCsv([header, ...rows]);
  const { records } = parseCsvRecords(csv); // compute from the text as written, like an agent would
  const numericCols = [...scenario.numeric.map((f) => f.name), ...(scenario.kind === 'regression' ? [scenario.target.name] : [])];
  // Draw question shapes until at least 3 values match, so no answer is empty or NaN.
  for (;;) {
    const op = rng.pick<TableAggregate>(['mean', 'sum', 'count', 'min', 'max', 'median']);
    const column = rng.pick(numericCols);
    let filter: TableQuestionTask['generator']['filter'];
    let keep: (r: Record<string, string>) => boolean;
    if (rng.bernoulli(0.5)) {
      const level = rng.pick(scenario.categorical.levels);
      filter = { column: scenario.categorical.name, op: '==', value: level };
      keep = (r) => r[scenario.categorical.name] === level;
    } else {
      const by = rng.pick(scenario.numeric.filter((f) => f.name !== column));
      const observed = records.map((r) => r[by.name]).filter((v) => v !== '').map(Number).sort((x, y) => x - y);
      const threshold = observed[Math.floor(observed.length * rng.uniform(0.25, 0.75))];
      const gt = rng.bernoulli(0.5);
      filter = { column: by.name, op: gt ? '>' : '<', value: threshold };
      keep = (r) => r[by.name] !== '' && (gt ? Number(r[by.name]) > threshold : Number(r[by.name]) < threshold);
    }
    const values = records.filter(keep).map((r) => r[column]).filter((v) => v !== '').map(Number);
    if (values.length < 3) continue;
    const answerValue = round(aggregate(op, values), 2);
    const where = filter.op === '==' ? `${filter.column} is "${filter.value}"` : `${filter.column} ${filter.op} ${filter.value}`;
    const question = op === 'count'
      ? `In table.csv, how many rows where ${where} have a value for ${column}?`
      : `In table.csv, what is the ${op} of ${column} over the rows where ${where}?`;
    return {
      kind: 'table-question', id, source, question, csv,
      description: `${question} Skip empty (missing) cells; rows with a missing ${filter.column} do not match. Round to 2 decimal places.`,
      answer: String(answerValue), answerValue,
      generator: { scenario: scenario.name, aggregate: op, column, filter },
    };
  }
}

/** True when a reply to a table question matches its answer to within rounding (0.006). */
export function checkTableAnswer(task: TableQuestionTask, reply: string | number): boolean {
  const value = typeof reply === 'number' ? reply : Number(String(reply).replace(/[,\s$]/g, ''));
  return Number.isFinite(value) && Math.abs(value - task.answerValue) <= 0.006 + 1e-9 * Math.abs(task.answerValue);
}

function makeTask(rng: Rng, kind: TabularKind, id: string, source: TabularTask['source']): TabularSuiteTask {
  if (kind === 'table-question') return makeQuestionTask(rng, rng.pick(SCENARIOS), id, source);
  return makeModelTask(rng, rng.pick(SCENARIOS.filter((s) => s.kind === kind)), id, source);
}

// ---- held-out set and training generator -----------------------------------------------------

const HELD_OUT_SEED = 'mappa-tabular-heldout-v1';
const HELD_OUT_COUNTS: Record<TabularKind, number> = { classification: 12, regression: 12, 'table-question': 12 };
let heldOutCache: TabularSuiteTask[] | null = null;
let heldOutFingerprints: Set<string> | null = null;

const fingerprint = (csv: string) => `${csv.length}:${hashString(csv)}`;

function heldOutAll(): TabularSuiteTask[] {
  if (heldOutCache) return heldOutCache;
  const tasks: TabularSuiteTask[] = [];
  for (const kind of Object.keys(HELD_OUT_COUNTS) as TabularKind[]) {
    const rng = new Rng(`${HELD_OUT_SEED}/${kind}`);
    for (let i = 0; i < HELD_OUT_COUNTS[kind]; i++) tasks.push(makeTask(rng, kind, `tab-heldout-${kind}-${i}`, 'generated-heldout'));
  }
  heldOutCache = tasks;
  heldOutFingerprints = new Set(tasks.map((t) => fingerprint(t.csv)));
  return tasks;
}

/** The fixed held-out set: 12 classification, 12 regression and 12 table questions (deep copies). */
export function tabularHeldOut(kind?: TabularKind): TabularSuiteTask[] {
  return structuredClone(heldOutAll().filter((t) => kind === undefined || t.kind === kind));
}

export interface GenerateTabularOptions {
  seed: Seed;
  count: number;
  /** Kinds to draw from, in turn (task i gets kinds[i % kinds.length]); default all three. */
  kinds?: TabularKind[];
}

/** Training tasks, deterministic per (seed, kinds); never a held-out table. */
export function generateTabularTasks({ seed, count, kinds = ['classification', 'regression', 'table-question'] }: GenerateTabularOptions): TabularSuiteTask[] {
  if (kinds.length === 0) throw new Error('generateTabularTasks: kinds must not be empty');
  heldOutAll();
  const rng = new Rng(`mappa-tabular-train/${String(seed)}/${kinds.join(',')}`);
  const tasks: TabularSuiteTask[] = [];
  while (tasks.length < count) {
    const kind = kinds[tasks.length % kinds.length];
    const task = makeTask(rng, kind, `tab-${kind}-s${String(seed)}-${tasks.length}`, 'generated');
    if (!heldOutFingerprints!.has(fingerprint(task.csv))) tasks.push(task);
  }
  return tasks;
}

/** True when a table (its train CSV) belongs to the held-out set. */
export function isTabularHeldOut(task: Pick<TabularSuiteTask, 'csv'>): boolean {
  heldOutAll();
  return heldOutFingerprints!.has(fingerprint(task.csv));
}
