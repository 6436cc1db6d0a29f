/**
 * The data coach's blame logic on constructed trajectories: the coach sees which files exist and who
 * made them, blames the agent that caused a failure, and caps the final agent when the held-out
 * metrics are poor.
 */
import { describe, expect, it } from 'vitest';
import { dataFacts, dataRuleCoach, parseDataFacts } from '../../../src/core/domains/data/coach.ts';
import { dataOutcome } from '../../../src/core/domains/data/outcome.ts';
import { DATA_CHAIN, dataHeldOut, type DataRolloutTask } from '../../../src/core/domains/data/team.ts';
import { DEFAULT_REWARDS, coachTrajectories } from '../../../src/core/loop/rewards.ts';
import { trajectoryLines } from '../../../src/core/loop/rollout.ts';
import { type Action, type Trajectory } from '../../../src/core/loop/trajectory.ts';
import { Workspace } from '../../../src/core/tools/workspace.ts';
import type { TabularTask } from '../../../src/core/domains/data/tabular.ts';

const [classification] = dataHeldOut(['classification']);
const [regression] = dataHeldOut(['regression']);
const [question] = dataHeldOut(['table-question']);

function action(agentId: string, text: string, observation?: string, input = 'Task: ...'): Action {
  const role = DATA_CHAIN.agents.find((a) => a.id === agentId)!.role;
  return {
    agentId, role, turn: 1, messages: [{ role: 'system', content: role }, { role: 'user', content: input }], promptText: '', promptTokens: [1],
    tokens: [1, 2], logprobs: [-1, -1], text, truncated: false, observation, codeBlocks: observation ? 1 : 0,
  };
}

const sql = (code: string) => '```sql\n' + code + '\n```';
const ids = (task: DataRolloutTask, which: 'csv' | 'testCsv') => (task.data as TabularTask)[which].trim().split('\n').slice(1).map((l) => Number(l.split(',')[0]));
const csv = (header: string[], rows: (number | string)[][]) => [header.join(','), ...rows.map((r) => r.join(','))].join('\n') + '\n';

/** A workspace with the files the named stages produced (correct shapes), plus a submission scored by `predict`. */
function build(task: DataRolloutTask, stages: { features?: 'both' | 'train-only'; predictions?: boolean | 'no-probability'; submission?: (truth: number, i: number) => number }): Workspace {
  const ws = new Workspace();
  for (const [p, text] of Object.entries(task.files)) ws.write(p, text, 'task');
  const data = task.data as TabularTask;
  if (stages.features) {
    ws.write('train_features.csv', csv(['id', 'f1', data.target], ids(task, 'csv').map((id) => [id, id % 7, id % 2])), 'data_engineer');
    if (stages.features === 'both') ws.write('test_features.csv', csv(['id', 'f1'], ids(task, 'testCsv').map((id) => [id, id % 7])), 'data_engineer');
  }
  // fit_predict's columns: a logistic fit adds "probability"; a linear one (or a regression) has none.
  const withProbability = data.kind === 'classification' && stages.predictions !== 'no-probability';
  if (stages.predictions) {
    ws.write('predictions.csv', withProbability
      ? csv(['id', 'prediction', 'probability'], ids(task, 'testCsv').map((id) => [id, 0, 0.5]))
      : csv(['id', 'prediction'], ids(task, 'testCsv').map((id) => [id, 0.5])), 'modeler');
  }
  if (stages.submission) {
    const f = stages.submission;
    ws.write('submission.csv', csv(['id', 'prediction'], ids(task, 'testCsv').map((id, i) => [id, f(data.testTargets[i], i)])), 'analyst');
  }
  return ws;
}

async function coach(task: DataRolloutTask, ws: Workspace, actions: Action[], finalAnswer = 'submission.csv') {
  const t: Trajectory = { task, sample: 0, actions, finalAnswer, correct: false };
  const o = dataOutcome(t, ws, `\\boxed{${finalAnswer}}`); // the Analyst's text boxing the answer
  Object.assign(t, { correct: o.correct, metrics: o.metrics, report: o.report, files: ws.list() });
  const { coached } = await coachTrajectories(DATA_CHAIN, [t], dataRuleCoach(), DEFAULT_REWARDS, (tr, id) => dataFacts(tr, id));
  const score = (id: string) => coached[0].agentScores.get(id)!;
  return { t, de: score('data_engineer'), modeler: score('modeler'), analyst: score('analyst') };
}

const fullTeam = () => [
  action('data_engineer', sql('CREATE TABLE train_features AS ...'), '```output\nsaved table train_features\n```'),
  action('modeler', sql("CREATE TABLE predictions AS SELECT * FROM fit_predict('train_features', 'test_features', 'y')"), '```output\nfit_predict: logistic regression ...\n```'),
  action('analyst', sql('CREATE TABLE submission AS SELECT id, probability AS prediction FROM predictions') + '\n\\boxed{submission.csv}', '```output\nsaved table submission\n```'),
];

describe('data coach blame', () => {
  it('a missing feature table is the Data Engineer\'s fault, not the Modeler\'s or the Analyst\'s', async () => {
    const ws = build(classification, { features: 'train-only' });
    const r = await coach(classification, ws, [
      action('data_engineer', sql('CREATE TABLE train_features AS ...'), '```output\nsaved table train_features\n```'),
      action('modeler', sql("SELECT * FROM fit_predict('train_features', 'test_features', 'y')"), 'Error: Catalog Error: Table with name test_features does not exist!'),
      action('analyst', 'There are no predictions.\n\\boxed{submission.csv}'),
    ]);
    expect(r.t.correct).toBe(false);
    expect(r.de.score).toBe(3);
    expect(r.modeler.score).toBe(7);
    expect(r.analyst.score).toBe(7);
    expect(r.analyst.correct).toBe(false);
    expect(r.de.score).toBeLessThanOrEqual(Math.min(r.modeler.score, r.analyst.score) - 3);
  });

  it('the Modeler is blamed when the features were there and it made no predictions', async () => {
    const ws = build(classification, { features: 'both' });
    const r = await coach(classification, ws, [fullTeam()[0], action('modeler', sql('SELECT * FROM train_features'), '```output\n...\n```'), action('analyst', '\\boxed{submission.csv}')]);
    expect(r.de.score).toBe(10);
    expect(r.modeler.score).toBe(2);
    expect(r.analyst.score).toBe(7);
  });

  it('a test_features without a feature of train_features is the Data Engineer\'s fault, not the Modeler\'s', async () => {
    // As a measured run ended: the train table aliases area_m2 as income_m2, the test table does not.
    const ws = build(regression, { features: 'both' });
    const data = regression.data as TabularTask;
    ws.write('train_features.csv', csv(['id', 'f1', 'income_m2', data.target], ids(regression, 'csv').map((id) => [id, id % 7, id % 5, id % 3])), 'data_engineer');
    const r = await coach(regression, ws, [
      fullTeam()[0],
      action('modeler', sql("CREATE TABLE predictions AS SELECT * FROM fit_predict('train_features', 'test_features', 'y', 'linear')"), 'Error: fit_predict: table test_features lacks the feature columns income_m2 that train_features has'),
      action('analyst', '\\boxed{submission.csv}'),
    ]);
    expect(r.de.score).toBe(4); // one problem, and it breaks the fit
    expect(r.modeler.score).toBe(7);
    expect(r.analyst.score).toBe(7);
  });

  it('the Analyst is blamed when predictions were there and it wrote no submission', async () => {
    const ws = build(classification, { features: 'both', predictions: true });
    const r = await coach(classification, ws, [...fullTeam().slice(0, 2), action('analyst', 'Done.')]);
    expect([r.de.score, r.modeler.score, r.analyst.score]).toEqual([10, 10, 0]);
  });

  it('a fit without probabilities for a 0/1 target is the Modeler\'s fault, not the Analyst\'s', async () => {
    // fit_predict(..., 'linear') on a 0/1 target: predictions has no probability column, so the
    // Analyst's "probability AS prediction" fails and no submission is written.
    const ws = build(classification, { features: 'both', predictions: 'no-probability' });
    const r = await coach(classification, ws, [...fullTeam().slice(0, 2), action('analyst', sql('CREATE TABLE submission AS SELECT id, probability AS prediction FROM predictions'), 'Error: Binder Error: Referenced column "probability" not found')]);
    expect(r.t.correct).toBe(false);
    expect([r.de.score, r.modeler.score, r.analyst.score]).toEqual([10, 4, 7]);
    // The same predictions are fine for a regression target.
    const reg = await coach(regression, build(regression, { features: 'both', predictions: true }), [...fullTeam().slice(0, 2), action('analyst', 'Done.')]);
    expect(reg.modeler.score).toBe(10);
  });

  it('a good submission succeeds and scores 10 everywhere', async () => {
    const ws = build(classification, { features: 'both', predictions: true, submission: (y) => (y ? 0.8 : 0.2) });
    const r = await coach(classification, ws, fullTeam());
    expect(r.t.metrics).toMatchObject({ rocAuc: 1, accuracy: 1, f1: 1, coverage: 1, success: 1 });
    expect(r.t.correct).toBe(true);
    expect(JSON.parse(trajectoryLines(0, [r.t])).metrics).toEqual(r.t.metrics); // trajectories.jsonl keeps them per table
    expect([r.de.score, r.modeler.score, r.analyst.score]).toEqual([10, 10, 10]);
    expect(r.analyst.correct).toBe(true);
  });

  it('ROC-AUC under 0.55 caps the final agent at 3 when it changed the predictions (upstream agents keep their scores)', async () => {
    const ws = build(classification, { features: 'both', predictions: true, submission: (y) => (y ? 0.2 : 0.8) });
    const r = await coach(classification, ws, [...fullTeam().slice(0, 2), action('analyst', sql('CREATE TABLE submission AS SELECT id, 1 - probability AS prediction FROM predictions') + '\n\\boxed{submission.csv}', '```output\nsaved table submission\n```')]);
    expect(r.t.metrics!.rocAuc).toBe(0);
    expect(r.analyst.score).toBe(3);
    expect(r.analyst.correct).toBe(false);
    expect([r.de.score, r.modeler.score]).toEqual([10, 10]);
  });

  it('a regression submission no better than the mean is capped at 3; a fair one is 7', async () => {
    const data = regression.data as TabularTask;
    const mean = data.testTargets.reduce((a, b) => a + b, 0) / data.testTargets.length;
    const off = mean + 10 * data.generator.numeric[0].sd;
    const constant = await coach(regression, build(regression, { features: 'both', predictions: true, submission: () => off }), [...fullTeam().slice(0, 2), action('analyst', sql(`CREATE TABLE submission AS SELECT id, ${off} AS prediction FROM predictions`) + '\n\\boxed{submission.csv}')]);
    expect(constant.t.metrics!.rmseOverIqr).toBeGreaterThan(0.7);
    expect(constant.analyst.score).toBe(3);
    // Off by 0.65 IQR on every row: complete, not capped, but short of success (RMSE <= 0.6 IQR).
    const q = [...data.testTargets].sort((a, b) => a - b);
    const spread = q[Math.round(0.75 * (q.length - 1))] - q[Math.round(0.25 * (q.length - 1))];
    const fair = await coach(regression, build(regression, { features: 'both', predictions: true, submission: (y) => y + 0.65 * spread }), fullTeam());
    expect(fair.t.metrics!.rmseOverIqr).toBeGreaterThan(0.6);
    expect(fair.t.metrics!.rmseOverIqr).toBeLessThan(0.7);
    expect(fair.analyst.score).toBe(7);
  });

  it('an incomplete submission is the Analyst\'s fault', async () => {
    const ws = build(classification, { features: 'both', predictions: true, submission: (y) => y });
    const text = ws.readText('submission.csv')!.trim().split('\n');
    ws.write('submission.csv', text.slice(0, -3).join('\n') + '\n', 'analyst');
    const r = await coach(classification, ws, fullTeam());
    expect(r.t.metrics!.coverage).toBeLessThan(1);
    expect(r.analyst.score).toBe(3);
  });

  it('facts list files with owners for every agent and metrics for the final agent only', () => {
    const ws = build(classification, { features: 'train-only' });
    const t: Trajectory = { task: classification, sample: 0, actions: [], finalAnswer: null, correct: false };
    Object.assign(t, dataOutcome(t, ws, ''));
    const de = dataFacts(t, 'data_engineer');
    const analyst = dataFacts(t, 'analyst');
    expect(de).toMatch(/^Files \(path by owner\):\n- data\.csv by task: 200 rows, 7 columns \(id, .*\), \d+ missing, 1 text columns\n/);
    expect(de).toContain('- train_features.csv by data_engineer: 200 rows, 3 columns (id, f1, ');
    expect(de).not.toContain('Held-out metrics');
    expect(analyst).toContain('Held-out metrics: coverage=0 success=0');
    const parsed = parseDataFacts(analyst);
    expect(parsed.files.get('train_features.csv')).toMatchObject({ owner: 'data_engineer', rows: 200, missing: 0, textColumns: 0 });
    expect(parsed.metrics).toEqual({ coverage: 0, success: 0 });
  });
});

describe('one culprit, different positions: the culprit scores at least 3 below the agents that did their part', () => {
  const scores = (r: Awaited<ReturnType<typeof coach>>) => ({ data_engineer: r.de.score, modeler: r.modeler.score, analyst: r.analyst.score });
  const expectBlamed = (s: Record<string, number>, culprit: string) => {
    for (const [id, score] of Object.entries(s)) if (id !== culprit) expect(s[culprit], `${culprit} vs ${id}: ${JSON.stringify(s)}`).toBeLessThanOrEqual(score - 3);
  };
  const data = classification.data as TabularTask;
  const analystPassesOn = action('analyst', sql('CREATE TABLE submission AS SELECT id, probability AS prediction FROM predictions') + '\n\\boxed{submission.csv}', '```output\nsaved table submission\n```');

  it('the Data Engineer: missing cells left in train_features make the fit refuse; the Modeler tried, the Analyst had nothing', async () => {
    const ws = build(classification, { features: 'both' });
    ws.write('train_features.csv', csv(['id', 'f1', data.target], ids(classification, 'csv').map((id) => [id, id % 5 === 0 ? '' : id % 7, id % 2])), 'data_engineer');
    const r = await coach(classification, ws, [
      fullTeam()[0],
      action('modeler', fullTeam()[1].text, 'Error: fit_predict: column "f1" of table train_features has 40 missing values'),
      action('analyst', 'There are no predictions.\n\\boxed{submission.csv}'),
    ]);
    expect(scores(r)).toEqual({ data_engineer: 4, modeler: 7, analyst: 7 });
    expectBlamed(scores(r), 'data_engineer');
  });

  it('the Data Engineer: test_features drops rows; the Modeler predicts every row it got, the Analyst passes them all on', async () => {
    const kept = ids(classification, 'testCsv').slice(0, -10);
    const ws = build(classification, { features: 'train-only' });
    ws.write('test_features.csv', csv(['id', 'f1'], kept.map((id) => [id, id % 7])), 'data_engineer');
    ws.write('predictions.csv', csv(['id', 'prediction', 'probability'], kept.map((id) => [id, id % 2, id % 2 ? 0.7 : 0.3])), 'modeler');
    ws.write('submission.csv', csv(['id', 'prediction'], kept.map((id) => [id, id % 2 ? 0.7 : 0.3])), 'analyst');
    const r = await coach(classification, ws, [...fullTeam().slice(0, 2), analystPassesOn]);
    expect(r.t.metrics!.coverage).toBeLessThan(1);
    expect(scores(r)).toEqual({ data_engineer: 4, modeler: 10, analyst: 7 });
    expectBlamed(scores(r), 'data_engineer');
  });

  it('the Modeler: constant predictions without a fit; the Analyst passes them on and is not capped for their ROC-AUC', async () => {
    const ws = build(classification, { features: 'both', predictions: true, submission: () => 0.5 });
    const r = await coach(classification, ws, [
      fullTeam()[0],
      action('modeler', sql('CREATE TABLE predictions AS SELECT id, 0.5 AS probability, 0 AS prediction FROM test_features;'), '```output\nsaved table predictions\n```'),
      analystPassesOn,
    ]);
    expect(r.t.metrics!.rocAuc).toBe(0.5);
    expect(scores(r)).toEqual({ data_engineer: 10, modeler: 3, analyst: 7 });
    expectBlamed(scores(r), 'modeler');
  });

  it('the Modeler: a linear fit for a 0/1 target leaves no probability to submit', async () => {
    const ws = build(classification, { features: 'both', predictions: 'no-probability' });
    const r = await coach(classification, ws, [...fullTeam().slice(0, 2), action('analyst', analystPassesOn.text, 'Error: Binder Error: Referenced column "probability" not found')]);
    expectBlamed(scores(r), 'modeler');
  });

  it('the Analyst: a LIMIT drops test ids the predictions had', async () => {
    const ws = build(classification, { features: 'both', predictions: true, submission: (y) => (y ? 0.8 : 0.2) });
    const text = ws.readText('submission.csv')!.trim().split('\n');
    ws.write('submission.csv', text.slice(0, 21).join('\n') + '\n', 'analyst');
    const r = await coach(classification, ws, [...fullTeam().slice(0, 2), action('analyst', sql('CREATE TABLE submission AS SELECT id, probability AS prediction FROM predictions LIMIT 20') + '\n\\boxed{submission.csv}')]);
    expect(scores(r)).toEqual({ data_engineer: 10, modeler: 10, analyst: 3 });
    expectBlamed(scores(r), 'analyst');
  });

  describe('table questions', () => {
    const q = question.data as Extract<DataRolloutTask['data'], { kind: 'table-question' }>;
    const wrong = String(Number(q.answer) + 3);
    const printed = (n: string) => '```output\nanswer\n' + n + '\n(1 row)\nsaved table result -> result.csv (1 row, 1 columns)\n```';
    const play = async (rows: number, result: string, boxed: string) => {
      const ws = new Workspace();
      for (const [p, text] of Object.entries(question.files)) ws.write(p, text, 'task');
      ws.write('answer_rows.csv', csv(['id', 'x'], Array.from({ length: rows }, (_, i) => [i, i])), 'data_engineer');
      ws.write('result.csv', csv(['answer'], [[result]]), 'modeler');
      const modelerText = sql('CREATE TABLE result AS SELECT round(avg(x), 2) AS answer FROM answer_rows;\nSELECT * FROM result;');
      const r = await coach(question, ws, [
        action('data_engineer', sql('CREATE TABLE answer_rows AS SELECT * FROM "table" WHERE ...'), '```output\nn\n' + rows + '\n```'),
        action('modeler', modelerText, printed(result)),
        action('analyst', `The result table holds the answer.\n\\boxed{${boxed}}`, undefined, `Task: ...\n\nModeler:\n${modelerText}\n\nLast output:\n${printed(result)}`),
      ], boxed);
      return scores(r);
    };

    it('nobody at fault: 10 each', async () => {
      expect(await play(12, q.answer, q.answer)).toEqual({ data_engineer: 10, modeler: 10, analyst: 10 });
    });
    it('the Modeler: the wrong aggregate, boxed as printed', async () => {
      const s = await play(12, wrong, wrong);
      expect(s).toEqual({ data_engineer: 10, modeler: 4, analyst: 7 });
      expectBlamed(s, 'modeler');
    });
    it('the Data Engineer: an empty answer_rows, aggregated and boxed as printed', async () => {
      const s = await play(0, wrong, wrong);
      expect(s).toEqual({ data_engineer: 4, modeler: 7, analyst: 7 });
      expectBlamed(s, 'data_engineer');
    });
    it('the Analyst: another number than the Modeler printed', async () => {
      const s = await play(12, q.answer, wrong);
      expect(s).toEqual({ data_engineer: 10, modeler: 10, analyst: 1 });
      expectBlamed(s, 'analyst');
    });
  });
});
