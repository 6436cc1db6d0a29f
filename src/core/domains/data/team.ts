/**
 * The data-analysis team (MAPPA section 2): Data Engineer -> Modeler -> Analyst, each with a few
 * tool turns of SQL (DuckDB) or Python over a shared per-trajectory workspace of CSV tables.
 *
 * For: the DATA_CHAIN workflow, turning tabular tasks (the synthetic suite, or a user's CSV with a
 * target column) into rollout tasks whose workspace starts with data.csv/test.csv (or table.csv), and
 * a reference solution (what a competent team writes; used by tests and as the pattern for the
 * pretraining transcripts). Not for: scoring (data-outcome.ts, data-coach.ts) or fitting (fit.ts).
 *
 * Hand-over through the workspace (every CSV is a SQL table named after it):
 *   Data Engineer  data.csv, test.csv  -> train_features.csv, test_features.csv
 *   Modeler        train/test_features -> predictions.csv   (SELECT * FROM fit_predict(...))
 *   Analyst        predictions.csv     -> submission.csv (id, prediction), then \boxed{submission.csv}
 * Table questions: table.csv -> answer_rows.csv -> result.csv (one number) -> \boxed{<number>}.
 * Example: const tasks = dataTrainTasks(0, 8);  tasks[0].files -> {'data.csv': ..., 'test.csv': ...}
 *          runRollouts(DATA_CHAIN, tasks, {agents, tools: {sql: createSqlTool(), python: sandbox}, outcome: dataOutcome, ...})
 */
import { Rng } from '../../stats/rng.ts';
import { parseCsv, toCsv } from '../../tools/csv.ts';
import { generateTabularTasks, tabularHeldOut, type TabularKind, type TabularSuiteTask, type TabularTask } from './tabular.ts';
import type { RolloutTask } from '../../loop/trajectory.ts';
import { TEAM_LINE, type WorkflowSpec } from '../../loop/workflow.ts';

const NEXT = 'After you see the output, fix any error with a new block, or reply "Done." if it worked.';

/** The three-agent data team; tools SQL and Python, 2-3 turns each. */
export const DATA_CHAIN: WorkflowSpec = {
  name: 'data-team',
  domain: 'data',
  agents: [
    {
      id: 'data_engineer',
      role: 'Data Engineer',
      system: `You are the Data Engineer, ${TEAM_LINE}. Every CSV file is a SQL table named after it (data.csv -> data). ` +
        `Write one \`\`\`sql block that creates the tables the plan asks of you: fill missing numbers with COALESCE(x, <mean>) ` +
        `and turn text columns into 0/1 columns with CASE WHEN. ${NEXT} Use at most {{budget}} tokens.`,
      user: 'Task: {{problem}}',
      followUp: 'Output:\n{{observation}}',
      maxTokens: 384,
      turns: 3,
      tools: ['sql', 'python'],
      trainable: true,
    },
    {
      id: 'modeler',
      role: 'Modeler',
      system: `You are the Modeler, ${TEAM_LINE}. Use the Data Engineer's tables. To fit a model write one \`\`\`sql block: ` +
        `CREATE TABLE predictions AS SELECT * FROM fit_predict('train_features', 'test_features', '<target>', 'logistic' or 'linear'); ` +
        `for a question, compute the number into a table named result. ${NEXT} Use at most {{budget}} tokens.`,
      user: 'Task: {{problem}}\n\nData Engineer:\n{{output:data_engineer}}\n\nLast output:\n{{tool:data_engineer}}',
      followUp: 'Output:\n{{observation}}',
      maxTokens: 160,
      turns: 2,
      tools: ['sql', 'python'],
      trainable: true,
    },
    {
      id: 'analyst',
      role: 'Analyst',
      system: `You are the Analyst, ${TEAM_LINE}. Give the team's answer. For predictions write one \`\`\`sql block: ` +
        'CREATE TABLE submission AS SELECT id, <probability for 0/1 targets, else prediction> AS prediction FROM predictions; ' +
        'then end with \\boxed{submission.csv}. For a question, check the number in result and end with \\boxed{<number>}. ' +
        'Use at most {{budget}} tokens.',
      user: 'Task: {{problem}}\n\nModeler:\n{{output:modeler}}\n\nLast output:\n{{tool:modeler}}',
      followUp: 'Output:\n{{observation}}',
      maxTokens: 128,
      turns: 2,
      tools: ['sql', 'python'],
      trainable: true,
      final: true,
    },
  ],
};

/**
 * The loop settings the data team trains with (the team's `settings`: resolveTrainConfig applies them to
 * every config of the data team, for the CLI, the page and the scripts; configs/data-tiny.json also spells
 * them out). Its Data Engineer writes ~250 tokens of SQL that copy column names
 * and fill values from the prompt: the shipped base model keeps them at 0.5 (7 of the 12 held-out tables
 * solved, 6 greedy) and a trial model of the same recipe garbled them at 1.0 (1 of 12), so the team
 * samples at 0.5, where a policy gradient still sees both of the Modeler's choices ('logistic' or
 * 'linear' for a 0/1 target).
 * 8 team rollouts per iteration, so ~16 samples per agent per update: at the math team's lr 1e-3 and KL
 * coefficient 0.01 the policies kept drifting (KL 0.027 and rising at iteration 12) and success at T=0.5
 * fell from 14 to 10 of 24 held-out tables; at lr 5e-4 and KL 0.05 (KL 0.012) the same 12 iterations
 * take greedy success from 12 to 18 of 24 with T=0.5 flat (README, "Training the data team").
 */
export const DATA_TEAM_SETTINGS = {
  iterations: 12, promptsPerIteration: 4, samplesPerPrompt: 2, temperature: 0.5,
  evalEvery: 6, evalTasks: 12, evalTemperature: 0.5, toolTimeoutMs: 3000,
  lr: 5e-4, update: { klCoef: 0.05 },
} as const;

/** A rollout task of the data team: the tabular task it came from travels with it. */
export interface DataRolloutTask extends RolloutTask {
  files: Record<string, string>;
  data: TabularSuiteTask;
}

export const SUBMISSION_FILE = 'submission.csv';

function describeColumns(csv: string): { header: string[]; rows: number } {
  const [header = [], ...rows] = parseCsv(csv);
  return { header, rows: rows.length };
}

/** The problem text: the task's own description, the files, and who produces what. */
export function dataRolloutTask(task: TabularSuiteTask): DataRolloutTask {
  if (task.kind === 'table-question') {
    const t = describeColumns(task.csv);
    return {
      id: task.id, data: task, answer: task.answer, files: { 'table.csv': task.csv },
      problem: `${task.description}\nFiles: table.csv (${t.rows} rows; columns ${t.header.join(', ')}).\n` +
        'Plan: the Data Engineer creates answer_rows (the rows the question is about); the Modeler computes the number into result; ' +
        'the Analyst ends with \\boxed{<number>}.',
    };
  }
  const train = describeColumns(task.csv);
  const test = describeColumns(task.testCsv);
  return {
    id: task.id, data: task, answer: SUBMISSION_FILE, files: { 'data.csv': task.csv, 'test.csv': task.testCsv },
    problem: `${task.description}\nFiles: data.csv (${train.rows} rows), test.csv (${test.rows} rows; the same columns without ${task.target}).\n` +
      `Columns of data.csv: ${profileLine(columnProfile(task.csv, task.target), task.target)}.\n` +
      `Plan: the Data Engineer builds train_features (id, numeric features without missing values, ${task.target}) ` +
      'and test_features (id, the same features); ' +
      `the Modeler writes predictions with fit_predict; the Analyst writes submission.csv (id, prediction) and ends with \\boxed{submission.csv}.`,
  };
}

/** Training tasks (never a held-out table). Default kinds: classification and regression. */
export function dataTrainTasks(seed: number | string, count: number, kinds: TabularKind[] = ['classification', 'regression']): DataRolloutTask[] {
  return generateTabularTasks({ seed, count, kinds }).map(dataRolloutTask);
}

/**
 * The fixed held-out set of the chosen kinds (12 of each kind), the kinds taken in turn so that any
 * prefix is balanced. Example: dataHeldOut().slice(0, 4) -> classification, regression, classification, regression.
 */
export function dataHeldOut(kinds: TabularKind[] = ['classification', 'regression']): DataRolloutTask[] {
  const byKind = kinds.map((k) => tabularHeldOut(k));
  const out: DataRolloutTask[] = [];
  for (let i = 0; i < Math.max(...byKind.map((l) => l.length)); i++) for (const list of byKind) if (list[i]) out.push(dataRolloutTask(list[i]));
  return out;
}

/**
 * A user's CSV with a target column as a task: rows are shuffled (seeded) and split into train and a
 * held-out test share; an "id" column is added when there is none. A target of only 0/1 (or exactly
 * two text labels, mapped to 0/1 in sorted order) is classification, numbers are regression.
 * Example: csvTask('x,y\n1,0\n2,1\n...', 'y', {name: 'mine'}).data.kind -> 'classification'
 */
export function csvTask(csv: string, target: string, opts: { name?: string; testShare?: number; seed?: number } = {}): DataRolloutTask {
  const name = opts.name ?? 'user-csv';
  const [header, ...body] = parseCsv(csv).filter((r) => r.some((c) => c.trim() !== ''));
  if (!header) throw new Error(`${name}: the CSV is empty`);
  const t = header.indexOf(target);
  if (t < 0) throw new Error(`${name}: no column "${target}" (columns: ${header.join(', ')}); name the target column exactly`);
  const rows = body.filter((r) => (r[t] ?? '').trim() !== '');
  if (rows.length < 20) throw new Error(`${name}: ${rows.length} rows with a target value; at least 20 are needed to train and test`);
  const labels = [...new Set(rows.map((r) => r[t].trim()))].sort();
  const numeric = rows.every((r) => Number.isFinite(Number(r[t])));
  let kind: 'classification' | 'regression';
  let encode: (v: string) => number;
  if (labels.length === 2 && !(numeric && labels.join() === '0,1')) {
    kind = 'classification';
    encode = (v) => labels.indexOf(v.trim());
  } else if (numeric) {
    kind = labels.every((l) => l === '0' || l === '1') ? 'classification' : 'regression';
    encode = Number;
  } else {
    throw new Error(`${name}: target "${target}" has ${labels.length} different text values; use a 0/1 or numeric target (or exactly two labels)`);
  }
  const hasId = header.some((h) => h.toLowerCase() === 'id');
  const withId = hasId ? rows : rows.map((r, i) => [String(i + 1), ...r]);
  const cols = hasId ? header : ['id', ...header];
  const ti = cols.indexOf(target);
  const shuffled = new Rng(`csv-task:${name}:${opts.seed ?? 0}`).shuffle([...withId]);
  const nTest = Math.max(5, Math.round(shuffled.length * (opts.testShare ?? 0.3)));
  const test = shuffled.slice(0, nTest);
  const train = shuffled.slice(nTest).map((r) => r.map((c, j) => (j === ti ? String(encode(c)) : c)));
  const features = cols.filter((c, j) => j !== ti && c.toLowerCase() !== 'id');
  const task: TabularTask = {
    kind, id: name, target, source: 'generated',
    description: `Predict ${target}${labels.length === 2 && !numeric ? ` (1 = ${labels[1]}, 0 = ${labels[0]})` : ''} from ${features.join(', ')}. ` +
      `data.csv has ${train.length} rows with the target column "${target}"; ` +
      `test.csv has ${test.length} rows without it. Write one prediction per test id; ` +
      `predictions are scored by ${kind === 'classification' ? 'ROC-AUC and accuracy' : 'RMSE relative to the target range'}.`,
    csv: toCsv([cols, ...train]),
    testCsv: toCsv([cols.filter((_, j) => j !== ti), ...test.map((r) => r.filter((_, j) => j !== ti))]),
    testTargets: test.map((r) => encode(r[ti])),
    generator: { scenario: name, nTrain: train.length, nTest: test.length, intercept: 0, numeric: [], categorical: { name: '', effects: {} }, missingRate: {} },
  };
  return dataRolloutTask(task);
}

/** One column of a table as the Data Engineer is shown it: numbers with their mean, text with its levels. */
export type ColumnProfile =
  | { name: string; kind: 'id' | 'target' }
  | { name: string; kind: 'number'; mean: number; missing: number }
  | { name: string; kind: 'text'; levels: string[]; missing: number };

/**
 * What a data engineer looks at first: per column, numbers with their mean (2 decimals, over the
 * filled cells) and missing count, text columns with their sorted levels. The means are the ones the
 * features fill missing cells with, so the Data Engineer's SQL copies them from its prompt instead of
 * guessing them.
 * Example: columnProfile('id,x,c,y\n1,2,a,0\n2,,b,1\n3,4,a,1', 'y')
 *   -> [{name 'id', kind 'id'}, {name 'x', kind 'number', mean 3, missing 1}, {name 'c', kind 'text', levels ['a','b'], missing 0}, {name 'y', kind 'target'}]
 */
export function columnProfile(csv: string, target: string | null): ColumnProfile[] {
  const [header, ...rows] = parseCsv(csv);
  return header.map((name, j): ColumnProfile => {
    if (name === target) return { name, kind: 'target' };
    if (name.toLowerCase() === 'id') return { name, kind: 'id' };
    const cells = rows.map((r) => r[j] ?? '');
    const values = cells.filter((v) => v !== '');
    const missing = cells.length - values.length;
    if (values.every((v) => Number.isFinite(Number(v)))) {
      const mean = values.reduce((a, v) => a + Number(v), 0) / Math.max(values.length, 1);
      return { name, kind: 'number', mean: Number(mean.toFixed(2)), missing };
    }
    return { name, kind: 'text', levels: [...new Set(values)].sort(), missing };
  });
}

/** The profile as one line of the problem text. Example (the profile above): 'id (id); x (mean 3, 1 missing); c (text: a, b); y (target)'. */
export function profileLine(profile: ColumnProfile[], target: string | null): string {
  const missing = (n: number) => (n ? `, ${n} missing` : '');
  return profile.filter((c) => target !== null || c.kind !== 'target').map((c) => {
    switch (c.kind) {
      case 'number': return `${c.name} (mean ${c.mean}${missing(c.missing)})`;
      case 'text': return `${c.name} (text: ${c.levels.join(', ')}${missing(c.missing)})`;
      default: return `${c.name} (${c.kind})`;
    }
  }).join('; ');
}

/** SQL that fills missing numbers with the train mean and one-hot encodes text columns (all but the first level). */
function featureSelect(csv: string, target: string | null): { select: string; features: string[] } {
  const parts: string[] = [];
  const features: string[] = [];
  for (const c of columnProfile(csv, target)) {
    if (c.kind === 'number') {
      parts.push(`COALESCE(${c.name}, ${c.mean}) AS ${c.name}`);
      features.push(c.name);
    } else if (c.kind === 'text') {
      for (const level of c.levels.slice(1, 6)) {
        const name = `${c.name}_${level.replace(/\W/g, '_')}`;
        parts.push(`CASE WHEN ${c.name} = '${level.replace(/'/g, "''")}' THEN 1 ELSE 0 END AS ${name}`);
        features.push(name);
      }
    }
  }
  return { select: parts.join(', '), features };
}

/** What a competent team writes, per agent and turn (tests; the pattern for pretraining transcripts). */
export function dataReferenceReplies(task: TabularSuiteTask): Record<string, string[]> {
  const sql = (code: string) => '```sql\n' + code + '\n```';
  if (task.kind === 'table-question') {
    const g = task.generator;
    const value = typeof g.filter.value === 'number' ? g.filter.value : `'${g.filter.value}'`;
    const op = g.filter.op === '==' ? '=' : g.filter.op;
    const agg = g.aggregate === 'mean' ? 'avg' : g.aggregate;
    return {
      data_engineer: [
        sql(`CREATE TABLE answer_rows AS SELECT * FROM "table" WHERE ${g.filter.column} ${op} ${value} AND ${g.column} IS NOT NULL;\n` +
          'SELECT count(*) AS n FROM answer_rows;'),
        'Done.',
      ],
      modeler: [sql(`CREATE TABLE result AS SELECT round(${agg}(${g.column}), 2) AS answer FROM answer_rows;\nSELECT * FROM result;`), 'Done.'],
      analyst: [`The result table holds the answer.\n\\boxed{${task.answer}}`],
    };
  }
  const f = featureSelect(task.csv, task.target);
  const model = task.kind === 'classification' ? 'logistic' : 'linear';
  const column = task.kind === 'classification' ? 'probability' : 'prediction';
  return {
    data_engineer: [
      sql(`CREATE TABLE train_features AS SELECT id, ${f.select}, ${task.target} FROM data;\nCREATE TABLE test_features AS SELECT id, ${f.select} FROM test;`),
      'Done.',
    ],
    modeler: [sql(`CREATE TABLE predictions AS SELECT * FROM fit_predict('train_features', 'test_features', '${task.target}', '${model}');`), 'Done.'],
    analyst: [
      sql(`CREATE TABLE submission AS SELECT id, ${column} AS prediction FROM predictions;\nSELECT count(*) AS n FROM submission;`),
      'Submission written.\n\\boxed{submission.csv}',
    ],
  };
}
