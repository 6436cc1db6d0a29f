/**
 * The coach's view of a data-team trajectory and the rule-based data coach (MAPPA section 2): it
 * sees which files exist and which agent produced each, blames the agent that caused a failure
 * (a missing feature table is the Data Engineer's fault, not the Modeler's or the Analyst's), and
 * for the final agent sees the held-out metrics and caps its score when they are poor.
 *
 * For: `dataFacts(trajectory, agentId)` (the `facts` every coach, rule or model, is given; pass it as
 * coachTrajectories' factsFor) and `dataRuleCoach()` / `dataRuleScore()`. The rule coach reads only
 * what a model coach reads (the facts text, the agent's input/output/tool output) plus the task.
 * Not for: computing the metrics (data-outcome.ts) or the math rubric (rule-coach.ts).
 *
 * Each agent is judged on its own job given what it received (MAPPA: "did this agent do its job well,
 * given what it received?"): an agent that faithfully works on a broken hand-over is not blamed for
 * it; the agent that broke it is, and scores at least 3 below the agents that did their part.
 *
 * Rubric for prediction tasks (integers 0..10; "by X" = the file's owner is agent X):
 *   Data Engineer  10 train_features.csv and test_features.csv by it, right row counts, no missing
 *                     cells, no text columns, target in train_features, every feature of
 *                     train_features also in test_features
 *                   7 both tables, and the one problem is train_features' row count (the fit still runs)
 *                   4 / 3 / 2  both tables with 1 / 2 / 3+ problems, one of which breaks the hand-over:
 *                     missing cells, text columns, no target or a feature test_features lacks (fit_predict
 *                     refuses them), or test_features' row count (predictions cannot cover the test ids)
 *                   3 only one of the two tables;  1 code but neither table;  0 no code block
 *   Modeler        10 predictions.csv by it, one row per test row, from fit_predict; also when its rows
 *                     are those of a test_features with the wrong row count (faithful to its input)
 *                   4 the same from a fit that gives no probability for a 0/1 target ('linear'
 *                     where 'logistic' was due: the submission cannot be scored by ROC-AUC)
 *                   3 predictions without a fit (e.g. constants: the team cannot succeed);  5 wrong size
 *                   7 no predictions because a feature table is missing or breaks the fit (missing
 *                     cells, text columns, no target, a feature test_features lacks): not its fault
 *                   2 clean feature tables there but no predictions;  0 no code block
 *   Analyst        10 submission.csv by it covers every test id and the team succeeded; 7 it covers
 *                     them but the metric misses the success threshold;  3 it misses ids
 *                   7 it misses ids only because predictions.csv does, and it passes those on (below)
 *                   7 no submission because predictions.csv is missing, or lacks the probability
 *                     column a 0/1 target needs (not its fault: the Modeler's)
 *                   1 predictions there but no submission;  -1 point without a \boxed{} answer
 *                  CAP 3 when ROC-AUC < 0.55 (classification) or RMSE > 0.7 x IQR (regression), unless
 *                     the submission passes on the predictions it received: every row of predictions.csv,
 *                     its probability column (0/1 target) or prediction column selected as it is (or
 *                     SELECT *); then the poor metric is upstream's and it keeps its 7
 * Table questions: Data Engineer 10 answer_rows.csv with rows (4 empty, 3 code but no answer_rows, 2 its
 * SQL failed), Modeler 10 result.csv holding the answer (4 another number; 7 when answer_rows was empty
 * or missing upstream), Analyst 10 right \boxed{} (7 wrong but what the Modeler printed, or no number
 * upstream; 1 wrong although the Modeler printed the answer, or other; 0 none); an agent with no code
 * block gets 0.
 * Example: facts say "- train_features.csv by data_engineer: 200 rows, ..." but no test_features.csv
 *          -> Data Engineer 3, Modeler 7 (not blamed), Analyst 7 (not blamed), correct = false.
 */
import { answersEqual, extractBoxed } from '../../tasks/answers.ts';
import { parseCsv } from '../../tools/csv.ts';
import { NEUTRAL_SCORE, type ActionContext } from '../../coach/coach-format.ts';
import { RuleCoach, type Coach } from '../../coach/coach.ts';
import type { DataRolloutTask } from './team.ts';
import type { Trajectory } from '../../loop/trajectory.ts';
import type { RuleScore } from '../math/rule-coach.ts';

const CAP_ROC_AUC = 0.55;
const CAP_RMSE_OVER_IQR = 0.7;
const CAP_SCORE = 3;

const EXPECTED_MODEL = 'Expected hand-over: train_features.csv and test_features.csv by data_engineer, predictions.csv by modeler, ' +
  'submission.csv (id, prediction) by analyst.';
const EXPECTED_QUESTION = 'Expected hand-over: answer_rows.csv by data_engineer, result.csv (the number) by modeler, ' +
  '\\boxed{<number>} by analyst.';

/** What the coach is told about a data trajectory; metrics only for the final agent. */
export function dataFacts(t: Trajectory, agentId: string, finalAgentId = 'analyst'): string {
  const kind = (t.task as DataRolloutTask).data?.kind;
  const lines = ['Files (path by owner):', t.report ?? '(none)', kind === 'table-question' ? EXPECTED_QUESTION : EXPECTED_MODEL];
  if (agentId === finalAgentId && t.metrics) {
    lines.push('Held-out metrics: ' + Object.entries(t.metrics).map(([k, v]) => `${k}=${Number.isInteger(v) ? v : v.toFixed(3)}`).join(' '));
  }
  return lines.join('\n');
}

interface FileFact { owner: string; rows: number; columns: string[]; missing: number; textColumns: number }

/** Parses the facts text back (the same text a model coach reads). */
export function parseDataFacts(facts: string): { files: Map<string, FileFact>; metrics: Record<string, number> } {
  const files = new Map<string, FileFact>();
  for (const m of facts.matchAll(/^- (\S+) by (\S+): (\d+) rows, \d+ columns \((.*)\), (\d+) missing, (\d+) text columns$/gm)) {
    files.set(m[1], { owner: m[2], rows: Number(m[3]), columns: m[4].split(', '), missing: Number(m[5]), textColumns: Number(m[6]) });
  }
  const metrics: Record<string, number> = {};
  const line = /^Held-out metrics: (.*)$/m.exec(facts);
  for (const [, k, v] of line?.[1].matchAll(/(\w+)=(-?[\d.]+|NaN)/g) ?? []) metrics[k] = Number(v);
  return { files, metrics };
}

/**
 * The last number in the result rows of the last ```output block, skipping the SQL tool's own notes.
 * Example: '```output\nanswer\n12.35\n(1 row)\nsaved table result -> result.csv (1 row, 1 columns)\n```' -> '12.35'
 */
function resultNumber(text: string | undefined): string | null {
  const blocks = [...(text ?? '').matchAll(/```output\n([\s\S]*?)\n```/g)];
  if (!blocks.length) return null;
  const rows = blocks[blocks.length - 1][1].split('\n').filter((l) => !/^\(|^saved table |^dropped table |^fit_predict: /.test(l));
  const numbers = rows.join('\n').match(/-?\d+(?:\.\d+)?/g);
  return numbers ? numbers[numbers.length - 1] : null;
}

/**
 * Whether SQL selects a column of predictions as it is: "SELECT *", or the column itself as a list item
 * (optionally "AS prediction"), not an expression of it.
 * Example: selectsAsIs('SELECT id, probability AS prediction FROM predictions', 'probability') -> true;
 *          selectsAsIs('SELECT id, 1 - probability AS prediction FROM predictions', 'probability') -> false
 */
function selectsAsIs(sql: string, column: string): boolean {
  return /SELECT\s+\*\s+FROM\s+predictions\b/i.test(sql)
    || new RegExp(`(?:SELECT|,)\\s*(?:\\w+\\.)?${column}(?:\\s+AS\\s+prediction)?\\s*(?:,|FROM\\b)`, 'i').test(sql);
}

const hasCode = (output: string) => /```(?:sql|duckdb|python|py|python3)?\s*\n/i.test(output);
const rowsOf = (csv: string) => Math.max(0, parseCsv(csv).length - 1);

function scoreModelTask(task: DataRolloutTask, ctx: ActionContext, files: Map<string, FileFact>, metrics: Record<string, number>): RuleScore {
  const data = task.data as Extract<DataRolloutTask['data'], { kind: 'classification' | 'regression' }>;
  const by = (path: string, owner: string) => (files.get(path)?.owner === owner ? files.get(path) : undefined);
  const testRows = rowsOf(data.testCsv);
  const trainF = by('train_features.csv', 'data_engineer');
  const testF = by('test_features.csv', 'data_engineer');
  const featuresOk = !!trainF && !!testF;
  // Features the Modeler's fit would need but test_features lacks (a misspelt alias, a forgotten column).
  const unmatched = featuresOk ? trainF.columns.filter((c) => c !== data.target && !testF.columns.includes(c)) : [];
  // Problems of the two tables that make fit_predict refuse them (it needs numbers without gaps, the
  // target, and every feature in both tables); the Modeler cannot be blamed for a fit they break.
  const fitBreakers = featuresOk ? [
    trainF.missing + testF.missing > 0 && 'missing cells left',
    trainF.textColumns + testF.textColumns > 0 && 'text columns left',
    !trainF.columns.includes(data.target) && `no ${data.target} in train_features`,
    unmatched.length > 0 && `test_features lacks ${unmatched.join(', ')} of train_features`,
  ].filter((p): p is string => !!p) : [];
  if (ctx.agentId === 'data_engineer') {
    if (!hasCode(ctx.output)) return { score: 0, reason: 'no code block' };
    if (!trainF && !testF) return { score: 1, reason: 'no feature tables' };
    if (!featuresOk) return { score: 3, reason: `only ${trainF ? 'train' : 'test'}_features.csv` };
    // Breaking the hand-over: the fit refuses the tables, or predictions cannot cover the test ids.
    const breakers = [...fitBreakers, testF.rows !== testRows && 'test_features has the wrong number of rows'].filter((p): p is string => !!p);
    const problems = [trainF.rows !== rowsOf(data.csv) && 'train_features has the wrong number of rows', ...breakers].filter((p): p is string => !!p);
    if (problems.length === 0) return { score: 10, reason: 'both feature tables, clean' };
    if (breakers.length === 0) return { score: 7, reason: problems.join('; ') };
    return { score: problems.length === 1 ? 4 : problems.length === 2 ? 3 : 2, reason: `${problems.join('; ')} (breaks the hand-over)` };
  }
  if (ctx.agentId === 'modeler') {
    const preds = by('predictions.csv', 'modeler');
    if (preds) {
      // Rows of a test_features with the wrong row count are what it received: the Data Engineer's fault.
      const asReceived = !!testF && testF.rows !== testRows && preds.rows === testF.rows;
      if (preds.rows !== testRows && !asReceived) return { score: NEUTRAL_SCORE, reason: `predictions has ${preds.rows} rows, test has ${testRows}` };
      if (!/fit_predict:/.test(ctx.observation ?? '')) return { score: 3, reason: 'predictions without a fitted model' };
      if (data.kind === 'classification' && !preds.columns.includes('probability')) {
        return { score: 4, reason: `a fit without probabilities for the 0/1 target ${data.target} (use 'logistic')` };
      }
      return {
        score: 10,
        reason: asReceived
          ? `fitted a model and predicted every row of test_features (whose ${testF.rows} rows against ${testRows} test rows are the Data Engineer's)`
          : 'fitted a model and predicted every test row',
      };
    }
    if (!featuresOk) return { score: 7, reason: 'no predictions, but a feature table was missing upstream (Data Engineer)' };
    if (fitBreakers.length) {
      return { score: 7, reason: `no predictions, but the feature tables break the fit upstream (Data Engineer): ${fitBreakers.join('; ')}` };
    }
    return hasCode(ctx.output) ? { score: 2, reason: 'feature tables were there but no predictions' } : { score: 0, reason: 'no code block' };
  }
  // The final agent (Analyst).
  const success = metrics.success === 1;
  const boxed = extractBoxed(ctx.output) !== null ? 0 : 1;
  const submission = by('submission.csv', ctx.agentId);
  const preds = files.get('predictions.csv');
  if (!submission) {
    if (!preds) return { score: 7, correct: false, reason: 'no submission, but predictions.csv was missing upstream' };
    if (data.kind === 'classification' && !preds.columns.includes('probability')) {
      return { score: 7, correct: false, reason: 'no submission, but predictions.csv has no probability for the 0/1 target (the Modeler\'s fit)' };
    }
    return { score: Math.max(0, 1 - boxed), correct: false, reason: 'predictions were there but no submission' };
  }
  // The submission passes on what it received: every row of predictions.csv and, for a 0/1 target, its
  // probability column (hard 0/1 labels or a LIMIT change the predictions; then their quality is its own).
  const column = data.kind === 'classification' && preds?.columns.includes('probability') ? 'probability' : 'prediction';
  const passesOn = !!preds && submission.rows === preds.rows && selectsAsIs(ctx.output, column);
  if ((metrics.coverage ?? 0) < 1) {
    if (passesOn && preds.rows !== testRows) {
      return {
        score: Math.max(0, 7 - boxed), correct: false,
        reason: `submission misses test ids, but so does predictions.csv (${preds.rows} rows for ${testRows} test rows) upstream`,
      };
    }
    return { score: Math.max(0, 3 - boxed), correct: false, reason: 'submission misses test ids' };
  }
  let score = (success ? 10 : 7) - boxed;
  let reason = success ? 'complete submission, the team succeeded' : 'complete submission below the success threshold';
  const poor = data.kind === 'classification' ? (metrics.rocAuc ?? 0) < CAP_ROC_AUC : (metrics.rmseOverIqr ?? Infinity) > CAP_RMSE_OVER_IQR;
  if (poor && passesOn) reason += '; the poor metric is that of the predictions it received (not capped)';
  else if (poor && score > CAP_SCORE) {
    score = CAP_SCORE;
    reason += data.kind === 'classification'
      ? `; capped: ROC-AUC ${metrics.rocAuc?.toFixed(3)} < ${CAP_ROC_AUC}`
      : `; capped: RMSE/IQR ${metrics.rmseOverIqr?.toFixed(3)} > ${CAP_RMSE_OVER_IQR}`;
  }
  return { score, correct: success, reason: boxed ? `${reason}; no \\boxed{} answer` : reason };
}

function scoreQuestion(task: DataRolloutTask, ctx: ActionContext, files: Map<string, FileFact>): RuleScore {
  const data = task.data as Extract<DataRolloutTask['data'], { kind: 'table-question' }>;
  const by = (path: string, owner: string) => (files.get(path)?.owner === owner ? files.get(path) : undefined);
  const failed = /^Error:/m.test(ctx.observation ?? '');
  if (ctx.agentId === 'data_engineer') {
    if (!hasCode(ctx.output)) return { score: 0, reason: 'no code block' };
    const rows = by('answer_rows.csv', 'data_engineer');
    if (rows) return rows.rows > 0 ? { score: 10, reason: 'answer_rows with rows' } : { score: 4, reason: 'answer_rows is empty' };
    return failed ? { score: 2, reason: 'its SQL failed' } : { score: 3, reason: 'ran code but made no answer_rows' };
  }
  if (ctx.agentId === 'modeler') {
    if (!hasCode(ctx.output)) return { score: 0, reason: 'no code block' };
    const rows = by('answer_rows.csv', 'data_engineer');
    if (by('result.csv', 'modeler')) {
      const shown = resultNumber(ctx.observation);
      if (shown !== null && answersEqual(shown, data.answer)) return { score: 10, reason: 'result holds the answer' };
      return rows && rows.rows === 0
        ? { score: 7, reason: 'result holds another number, computed from an empty answer_rows upstream (Data Engineer)' }
        : { score: 4, reason: 'result holds another number' };
    }
    if (!rows || rows.rows === 0) return { score: 7, reason: `no result, but answer_rows was ${rows ? 'empty' : 'missing'} upstream` };
    return { score: 2, reason: 'answer_rows was there but no result' };
  }
  const boxed = extractBoxed(ctx.output);
  if (boxed === null) return { score: 0, correct: false, reason: 'no \\boxed{} answer' };
  if (answersEqual(boxed, data.answer) || Math.abs(Number(boxed) - data.answerValue) <= 0.006) return { score: 10, correct: true, reason: 'right answer' };
  const upstream = resultNumber(ctx.input);
  if (upstream === null) return { score: 7, correct: false, reason: 'wrong, but the Modeler printed no number to go on' };
  if (answersEqual(upstream, data.answer) || Math.abs(Number(upstream) - data.answerValue) <= 0.006) {
    return { score: 1, correct: false, reason: 'wrong although the Modeler printed the answer' };
  }
  if (answersEqual(boxed, upstream)) return { score: 7, correct: false, reason: 'wrong, but what the Modeler printed' };
  return { score: 1, correct: false, reason: 'wrong and matching nothing upstream' };
}

/** Score one agent's work in a data trajectory (see the rubric above). */
export function dataRuleScore(ctx: ActionContext): RuleScore {
  const task = ctx.task as DataRolloutTask | undefined;
  if (!task?.data) return { score: NEUTRAL_SCORE, reason: 'not a data task; neutral' };
  if (!ctx.facts) return { score: NEUTRAL_SCORE, reason: 'no facts about the workspace (pass dataFacts as factsFor); neutral' };
  const { files, metrics } = parseDataFacts(ctx.facts);
  const r = task.data.kind === 'table-question' ? scoreQuestion(task, ctx, files) : scoreModelTask(task, ctx, files, metrics);
  return ctx.final ? r : { score: r.score, reason: r.reason };
}

/** The rule-based data coach as a Coach backend. */
export function dataRuleCoach(): Coach {
  return new RuleCoach('data-rule', (ctx) => {
    const r = dataRuleScore(ctx);
    return { score: r.score, correct: ctx.final ? (r.correct ?? false) : undefined, reason: r.reason };
  });
}
