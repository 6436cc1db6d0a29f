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
 * Rubric for prediction tasks (integers 0..10; "by X" = the file's owner is agent X):
 *   Data Engineer  10 train_features.csv and test_features.csv by it, right row counts, no missing
 *                     cells, no text columns, target in train_features, every feature of
 *                     train_features also in test_features (else fit_predict cannot predict)
 *                   7 / 5 / 4  both tables, with 1 / 2 / 3+ of those problems
 *                   3 only one of the two tables;  1 code but neither table;  0 no code block
 *   Modeler        10 predictions.csv by it, one row per test row, from fit_predict
 *                   4 the same from a fit that gives no probability for a 0/1 target ('linear'
 *                     where 'logistic' was due: the submission cannot be scored by ROC-AUC)
 *                   6 predictions of the right size without a fit (e.g. constants);  5 wrong size
 *                   5 no predictions because a feature table is missing or the two disagree on
 *                     features (not its fault)
 *                   2 feature tables there but no predictions;  0 no code block
 *   Analyst        10 submission.csv by it covers every test id and the team succeeded; 7 it covers
 *                     them but the metric misses the success threshold;  3 it misses ids
 *                   5 no submission because predictions.csv is missing, or lacks the probability
 *                     column a 0/1 target needs (not its fault: the Modeler's)
 *                   1 predictions there but no submission;  -1 point without a \boxed{} answer
 *                  CAP 3 when ROC-AUC < 0.55 (classification) or RMSE > 0.7 x IQR (regression)
 * Table questions: Data Engineer 10 answer_rows.csv with rows (4 empty), Modeler 10 result.csv holding
 * the answer (4 another number), Analyst 10 right \boxed{} (3 wrong but what the Modeler printed, 1 other,
 * 0 none); a missing upstream table gives the downstream agent 5, and an agent with no code block gets 0.
 * Example: facts say "- train_features.csv by data_engineer: 200 rows, ..." but no test_features.csv
 *          -> Data Engineer 3, Modeler 5 (not blamed), Analyst 5 (not blamed), correct = false.
 */
import { answersEqual, extractBoxed } from '../tasks/answers.ts';
import { parseCsv } from '../tasks/tabular.ts';
import type { ActionContext } from './coach-format.ts';
import { RuleCoach, type Coach } from './coach.ts';
import type { DataRolloutTask } from './data-team.ts';
import type { Trajectory } from './rollout.ts';
import type { RuleScore } from './rule-coach.ts';

export const CAP_ROC_AUC = 0.55;
export const CAP_RMSE_OVER_IQR = 0.7;
export const CAP_SCORE = 3;

const EXPECTED_MODEL = 'Expected hand-over: train_features.csv and test_features.csv by data_engineer, predictions.csv by modeler, submission.csv (id, prediction) by analyst.';
const EXPECTED_QUESTION = 'Expected hand-over: answer_rows.csv by data_engineer, result.csv (the number) by modeler, \\boxed{<number>} by analyst.';

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
export function resultNumber(text: string | undefined): string | null {
  const blocks = [...(text ?? '').matchAll(/```output\n([\s\S]*?)\n```/g)];
  if (!blocks.length) return null;
  const rows = blocks[blocks.length - 1][1].split('\n').filter((l) => !/^\(|^saved table |^dropped table |^fit_predict: /.test(l));
  const numbers = rows.join('\n').match(/-?\d+(?:\.\d+)?/g);
  return numbers ? numbers[numbers.length - 1] : null;
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
  if (ctx.agentId === 'data_engineer') {
    if (!hasCode(ctx.output)) return { score: 0, reason: 'no code block' };
    if (!trainF && !testF) return { score: 1, reason: 'no feature tables' };
    if (!featuresOk) return { score: 3, reason: `only ${trainF ? 'train' : 'test'}_features.csv` };
    const problems = [
      trainF.rows !== rowsOf(data.csv) && 'train_features has the wrong number of rows',
      testF.rows !== testRows && 'test_features has the wrong number of rows',
      trainF.missing + testF.missing > 0 && 'missing cells left',
      trainF.textColumns + testF.textColumns > 0 && 'text columns left',
      !trainF.columns.includes(data.target) && `no ${data.target} in train_features`,
      unmatched.length > 0 && `test_features lacks ${unmatched.join(', ')} of train_features`,
    ].filter((p): p is string => !!p);
    if (problems.length === 0) return { score: 10, reason: 'both feature tables, clean' };
    return { score: problems.length === 1 ? 7 : problems.length === 2 ? 5 : 4, reason: problems.join('; ') };
  }
  if (ctx.agentId === 'modeler') {
    const preds = by('predictions.csv', 'modeler');
    if (preds) {
      if (preds.rows !== testRows) return { score: 5, reason: `predictions has ${preds.rows} rows, test has ${testRows}` };
      if (!/fit_predict:/.test(ctx.observation ?? '')) return { score: 6, reason: 'predictions without a fitted model' };
      if (data.kind === 'classification' && !preds.columns.includes('probability')) return { score: 4, reason: `a fit without probabilities for the 0/1 target ${data.target} (use 'logistic')` };
      return { score: 10, reason: 'fitted a model and predicted every test row' };
    }
    if (!featuresOk) return { score: 5, reason: 'no predictions, but a feature table was missing upstream (Data Engineer)' };
    if (unmatched.length) return { score: 5, reason: `no predictions, but test_features lacks ${unmatched.join(', ')} upstream (Data Engineer)` };
    return hasCode(ctx.output) ? { score: 2, reason: 'feature tables were there but no predictions' } : { score: 0, reason: 'no code block' };
  }
  // The final agent (Analyst).
  const success = metrics.success === 1;
  const boxed = extractBoxed(ctx.output) !== null ? 0 : 1;
  const submission = by('submission.csv', ctx.agentId);
  if (!submission) {
    if (!files.has('predictions.csv')) return { score: 5, correct: false, reason: 'no submission, but predictions.csv was missing upstream' };
    if (data.kind === 'classification' && !files.get('predictions.csv')!.columns.includes('probability')) {
      return { score: 5, correct: false, reason: 'no submission, but predictions.csv has no probability for the 0/1 target (the Modeler\'s fit)' };
    }
    return { score: Math.max(0, 1 - boxed), correct: false, reason: 'predictions were there but no submission' };
  }
  if ((metrics.coverage ?? 0) < 1) return { score: Math.max(0, 3 - boxed), correct: false, reason: 'submission misses test ids' };
  let score = (success ? 10 : 7) - boxed;
  let reason = success ? 'complete submission, the team succeeded' : 'complete submission below the success threshold';
  const poor = data.kind === 'classification' ? (metrics.rocAuc ?? 0) < CAP_ROC_AUC : (metrics.rmseOverIqr ?? Infinity) > CAP_RMSE_OVER_IQR;
  if (poor && score > CAP_SCORE) {
    score = CAP_SCORE;
    reason += data.kind === 'classification' ? `; capped: ROC-AUC ${metrics.rocAuc?.toFixed(3)} < ${CAP_ROC_AUC}` : `; capped: RMSE/IQR ${metrics.rmseOverIqr?.toFixed(3)} > ${CAP_RMSE_OVER_IQR}`;
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
    return failed ? { score: 2, reason: 'its SQL failed' } : { score: 5, reason: 'ran code but made no answer_rows' };
  }
  if (ctx.agentId === 'modeler') {
    if (!hasCode(ctx.output)) return { score: 0, reason: 'no code block' };
    if (by('result.csv', 'modeler')) {
      const shown = resultNumber(ctx.observation);
      return shown !== null && answersEqual(shown, data.answer) ? { score: 10, reason: 'result holds the answer' } : { score: 4, reason: 'result holds another number' };
    }
    if (!by('answer_rows.csv', 'data_engineer')) return { score: 5, reason: 'no result, but answer_rows was missing upstream' };
    return { score: 2, reason: 'answer_rows was there but no result' };
  }
  const boxed = extractBoxed(ctx.output);
  if (boxed === null) return { score: 0, correct: false, reason: 'no \\boxed{} answer' };
  if (answersEqual(boxed, data.answer) || Math.abs(Number(boxed) - data.answerValue) <= 0.006) return { score: 10, correct: true, reason: 'right answer' };
  const upstream = resultNumber(ctx.input);
  if (upstream !== null && answersEqual(boxed, upstream)) return { score: 3, correct: false, reason: 'wrong, but what the Modeler printed' };
  return { score: 1, correct: false, reason: 'wrong and matching nothing upstream' };
}

/** Score one agent's work in a data trajectory (see the rubric above). */
export function dataRuleScore(ctx: ActionContext): RuleScore {
  const task = ctx.task as DataRolloutTask | undefined;
  if (!task?.data) return { score: 5, reason: 'not a data task; neutral' };
  if (!ctx.facts) return { score: 5, reason: 'no facts about the workspace (pass dataFacts as factsFor); neutral' };
  const { files, metrics } = parseDataFacts(ctx.facts);
  const r = task.data.kind === 'table-question' ? scoreQuestion(task, ctx, files) : scoreModelTask(task, ctx, files, metrics);
  return ctx.final ? r : { score: r.score, reason: r.reason };
}

/** The rule-based data coach as a Coach backend. */
export function dataRuleCoach(): Coach {
  return new RuleCoach('data-rule', (ctx) => {
    const r = dataRuleScore(ctx);
    return { score: r.score, correct: ctx.final ? (r.correct ?? false) : undefined };
  });
}
