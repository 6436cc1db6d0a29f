/**
 * The outcome of a data-team trajectory: did the team succeed, and how good are its predictions on
 * the held-out test split (targets the agents never saw)? Plus a one-line-per-file report of the
 * workspace (shape, owner, missing cells) for the coach.
 *
 * For: `dataOutcome(trajectory, workspace)` — the rollout's `outcome` hook for DATA_CHAIN.
 * Not for: metric formulas (metrics.ts) or per-agent scores (data-coach.ts).
 *
 * Success:
 *   classification  submission.csv predicts every test id and ROC-AUC >= 0.7
 *   regression      submission.csv predicts every test id and RMSE <= 0.6 x IQR of the test targets
 *   table question  the final \boxed{} answer equals the answer to within rounding
 * (Measured with the reference pipeline, mean-filled features + logistic/linear fit: held-out ROC-AUC
 * 0.83-0.87 and RMSE/IQR 0.20-0.43; on 16 training tables ROC-AUC 0.70-0.92, RMSE/IQR 0.34-0.59.
 * Predicting the train mean gives ROC-AUC 0.5 and RMSE/IQR 0.73-0.99, so it always fails.)
 * submission.csv: a column "id" and a column "prediction" (a probability or a 0/1 label for
 * classification; "probability" is used for ROC-AUC when present); extra columns are ignored.
 * Example: dataOutcome(t, ws) -> {correct: true, metrics: {rocAuc: 0.83, accuracy: 0.77, f1: 0.75, coverage: 1, success: 1}, report: '- data.csv by task: ...'}
 */
import { extractFinalAnswer } from '../../tasks/answers.ts';
import { parseCsv } from '../../tools/csv.ts';
import { checkTableAnswer, type TabularSuiteTask } from './tabular.ts';
import type { Workspace } from '../../tools/workspace.ts';
import { classificationMetrics, regressionMetrics } from './metrics.ts';
import { SUBMISSION_FILE, type DataRolloutTask } from './team.ts';
import type { Trajectory, TrajectoryOutcome } from '../../loop/trajectory.ts';

const SUCCESS_ROC_AUC = 0.7;
const SUCCESS_RMSE_OVER_IQR = 0.6;

/** One line per CSV file: "- <path> by <owner>: <rows> rows, <n> columns (<names>), <m> missing, <k> text columns". */
function fileReport(ws: Workspace): string {
  return ws.list().map((f) => {
    if (!/\.csv$/i.test(f.path)) return `- ${f.path} by ${f.owner}: ${f.size} bytes`;
    let rows: string[][];
    try {
      rows = parseCsv(ws.readText(f.path) ?? '');
    } catch {
      return `- ${f.path} by ${f.owner}: not a readable CSV`;
    }
    const [header = [], ...body] = rows;
    const missing = body.reduce((n, r) => n + header.filter((_, j) => (r[j] ?? '') === '').length, 0);
    const text = header.filter((h, j) => h.toLowerCase() !== 'id'
      && body.some((r) => r[j] !== '' && r[j] !== undefined && !Number.isFinite(Number(r[j])))).length;
    return `- ${f.path} by ${f.owner}: ${body.length} rows, ${header.length} columns (${header.join(', ')}), ${missing} missing, ${text} text columns`;
  }).join('\n');
}

/** Reads submission.csv against the test targets; metrics are NaN-free only when every id is predicted. */
function scoreSubmission(task: Extract<TabularSuiteTask, { kind: 'classification' | 'regression' }>, csv: string | undefined):
  { metrics: Record<string, number>; problem?: string } {
  if (csv === undefined) return { metrics: { coverage: 0, success: 0 }, problem: `no ${SUBMISSION_FILE}` };
  let header: string[];
  let body: string[][];
  try {
    [header = [], ...body] = parseCsv(csv);
  } catch {
    return { metrics: { coverage: 0, success: 0 }, problem: `${SUBMISSION_FILE} is not a readable CSV` };
  }
  const col = (name: string) => header.findIndex((h) => h.trim().toLowerCase() === name);
  const [idCol, predCol, probCol] = [col('id'), col('prediction'), col('probability')];
  if (idCol < 0 || predCol < 0) {
    return { metrics: { coverage: 0, success: 0 }, problem: `${SUBMISSION_FILE} needs columns id and prediction (has ${header.join(', ')})` };
  }
  const byId = new Map(body.map((r) => [Number(r[idCol]), r]));
  const [testHeader, ...testRows] = parseCsv(task.testCsv);
  const testIds = testRows.map((r) => Number(r[testHeader.indexOf('id')]));
  const found = testIds.map((id) => byId.get(id)).map((r) => r && (probCol >= 0 ? [r[predCol], r[probCol]] : [r[predCol], r[predCol]]));
  const usable = found.filter((r) => r && r[0] !== '' && Number.isFinite(Number(r[0])) && Number.isFinite(Number(r[1]))).length;
  const coverage = usable / testIds.length;
  if (coverage < 1) return { metrics: { coverage, success: 0 }, problem: `${SUBMISSION_FILE} predicts ${usable} of ${testIds.length} test ids` };
  const y = task.testTargets;
  if (task.kind === 'classification') {
    const scores = found.map((r) => Number(r![1]));
    const labels = found.map((r) => Number(r![0]));
    const m = classificationMetrics(y, scores);
    // Labels given separately (a "prediction" of 0/1 beside a "probability") decide accuracy and F1.
    const hardLabels = labels.every((v) => v === 0 || v === 1) ? classificationMetrics(y, labels) : m;
    const metrics = { rocAuc: Number.isNaN(m.rocAuc) ? 0.5 : m.rocAuc, accuracy: hardLabels.accuracy, f1: hardLabels.f1, coverage };
    return { metrics: { ...metrics, success: metrics.rocAuc >= SUCCESS_ROC_AUC ? 1 : 0 } };
  }
  const m = regressionMetrics(y, found.map((r) => Number(r![0])));
  return { metrics: { ...m, coverage, success: m.rmseOverIqr <= SUCCESS_RMSE_OVER_IQR ? 1 : 0 } };
}

/**
 * The rollout `outcome` hook of the data team: the Analyst's answer (its last \boxed{}, else "Answer: x"),
 * right when it answers the table question, or when the submission in the workspace meets the bar.
 */
export function dataOutcome(t: Trajectory, ws: Workspace, finalText: string): TrajectoryOutcome {
  const task = (t.task as DataRolloutTask).data;
  if (!task) throw new Error(`dataOutcome: task ${t.task.id} is not a data task (build tasks with dataRolloutTask)`);
  const finalAnswer = extractFinalAnswer(finalText);
  const report = fileReport(ws);
  if (task.kind === 'table-question') {
    const correct = finalAnswer !== null && checkTableAnswer(task, finalAnswer);
    return { correct, finalAnswer, metrics: { success: correct ? 1 : 0 }, report };
  }
  const scored = scoreSubmission(task, ws.readText(SUBMISSION_FILE));
  return { correct: scored.metrics.success === 1, finalAnswer, metrics: scored.metrics, report: scored.problem ? `${report}\n(${scored.problem})` : report };
}
