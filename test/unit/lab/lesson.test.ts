// The lesson's summary maths (src/core/lab/experiments/lesson/lesson-maths.ts) on hand-made results: the curves' Wilson
// intervals, the paired process - outcome gap, the predicted gap, rollouts to the target, the
// per-agent rows and the words the page shows; a finished lesson read back from storage with its
// training time and date (no model, no training); and the per-agent counts from relay trajectories.
import { describe, expect, it } from 'vitest';
import { agentList, agentWords, gapWords, curveOf, lessonPatch, lessonView, LESSON_PLAN, rolloutsTo, runUnits, trainedTime, type LessonRunData } from '../../../src/core/lab/experiments/lesson/lesson-maths.ts';
import { agentStepsOfEval, pairedGap, remainingSeconds } from '../../../src/core/lab/experiments/run-maths.ts';
import { Lesson } from '../../../src/core/lab/experiments/lesson/lesson-run.ts';
import { RUN_TIME } from '../../../src/core/lab/experiments/stored-runs.ts';
import { MemoryStore } from '../../helpers/loop.ts';
import { resolveTrainConfig, teamOf } from '../../../src/core/domains/index.ts';
import type { Trajectory } from '../../../src/core/loop/trajectory.ts';
import type { EvalResult } from '../../../src/core/loop/records.ts';
import { agentStepsOf } from '../../../src/core/loop/evaluate.ts';
import { relayWorkflow } from '../../../src/core/domains/relay/team.ts';
import { MATH_CHAIN } from '../../../src/core/domains/math/index.ts';
import { pairedDifference, wilson } from '../../../src/core/stats/intervals.ts';
import { coachQuality, judgeBuild, reportRanking } from '../../../src/core/lab/coach-quality.ts';
import { judgePromptExample, lessonCoachWords } from '../../../src/core/lab/experiments/lesson/lesson-maths.ts';
import { readFileSync } from 'node:fs';

const IDS = Array.from({ length: 100 }, (_, i) => `t${i}`);
/** An evaluation with the first `k` of 100 problems right (greedy), and a step accuracy. */
function ev(k: number, stepAccuracy = 0.8, of?: number): EvalResult {
  const greedy = IDS.map((_, i) => i < k);
  return { greedy: k / 100, sampled: k / 100, tasks: 100, ...(of ? { of } : {}), metrics: { stepAccuracy }, perTask: { ids: IDS, greedy, sampled: greedy } };
}
const steps = (right: number[], judged = 100) => ({ right, judged: right.map(() => judged) });
function run(n: number, mode: 'process' | 'outcome', ks: [number, number][], agents: LessonRunData['agents'], done = true): LessonRunData {
  return { n, mode, runId: `${n}-${mode}`, iteration: ks.at(-1)![0], done, evals: ks.map(([iteration, k]) => ({ iteration, result: ev(k, iteration === 0 ? 0.8 : 0.9) })), agents };
}
const PLAN = { ...LESSON_PLAN, sizes: [2, 4], iterations: 10, evalEvery: 5, target: 0.9 };

describe('the lesson summary', () => {
  it('draws each finished evaluation with its Wilson interval, by iteration, and skips running ones', () => {
    const c = curveOf([{ iteration: 5, result: ev(70) }, { iteration: 0, result: ev(40) }, { iteration: 10, result: ev(30, 0.8, 200) }]);
    expect(c.map((p) => p.iteration)).toEqual([0, 5]);
    expect(c[1]).toMatchObject({ ...wilson(70, 100), tasks: 100 });
  });

  it('counts rollouts to the target from the first evaluation that reaches it', () => {
    const c = curveOf([{ iteration: 0, result: ev(50) }, { iteration: 5, result: ev(90) }, { iteration: 10, result: ev(95) }]);
    expect(rolloutsTo(c, 0.9, 16)).toBe(80);
    expect(rolloutsTo(c, 0.99, 16)).toBeNull();
  });

  it('pairs the two runs problem by problem, and refuses different problems', () => {
    const a = ev(97);
    const b = ev(60);
    const d = pairedGap(a, b)!;
    const ref = pairedDifference(a.perTask!.greedy, b.perTask!.greedy);
    expect(d).toEqual({ p: ref.p, low: ref.low, high: ref.high, n: 100 });
    expect(d.p).toBeCloseTo(0.37);
    expect(d.low).toBeGreaterThan(0.25);
    expect(pairedGap(a, { ...b, perTask: { ...b.perTask!, ids: IDS.map((x) => `${x}!`) } })).toBeNull();
  });

  it('writes a size with a gap: both accuracies, the paired gap, and which agents each reward changed beyond the noise', () => {
    const base = steps([80, 80, 80, 80]);
    const v = lessonView([
      run(4, 'process', [[0, 40], [5, 80], [10, 97]], { base, final: steps([99, 98, 97, 99]) }),
      run(4, 'outcome', [[0, 40], [5, 50], [10, 60]], { base, final: steps([93, 92, 94, 80]) }),
    ], PLAN, 16, { status: 'done', current: null, elapsed: 100, remaining: 0 });
    const row = v.rows.find((r) => r.n === 4)!;
    expect(row.final.process!.p).toBe(0.97);
    expect(row.gap!.p).toBeCloseTo(0.37);
    expect(row.words).toMatch(/^4 agents: process 97\.0 % vs outcome 60\.0 %, a gap of \+37\.0 pts \[\+\d+\.\d, \+\d+\.\d\] \(paired, the same 100 problems\)\. /);
    expect(row.words).toContain('Step accuracy by agent, in points: process +19.0, +18.0, +17.0, +19.0; outcome +13.0, +12.0, +14.0, 0.0 (beyond the noise: process raised agents 1-4; outcome raised agents 1-3).');
    // docs/credit.md: outcome gains lambda^(N-1) of process's gain, lambda = (10 p - 1) / 9 = 7 / 9 at p = 0.8 (a wrong
    // chain's errors can cancel on the dial); untrained step accuracy 0.8, team 40 %, process +57 points.
    expect(row.predictedGap).toBeCloseTo((1 - (7 / 9) ** 3) * 0.57);
    expect(row.agents[3]).toMatchObject({ agent: 4, base: wilson(80, 100), outcome: wilson(80, 100) });
    // The size with no runs yet says so.
    expect(v.rows.find((r) => r.n === 2)!.words).toBe('2 agents: not finished yet');
  });

  it('says why there is no gap at the ceiling: the difference is how fast', () => {
    const v = lessonView([
      run(2, 'process', [[0, 70], [5, 95], [10, 97]], {}),
      run(2, 'outcome', [[0, 70], [5, 85], [10, 96]], {}),
    ], PLAN, 16, { status: 'done', current: null, elapsed: 1, remaining: 0 });
    const row = v.rows[0];
    expect(row.gap!.low).toBeLessThan(0);
    expect(row.reached).toEqual({ process: 80, outcome: 160 });
    expect(row.words).toContain('No gap: both reach the ceiling; the difference is how fast: process reached 90 % after 80 rollouts, outcome reached 90 % after 160 rollouts');
  });

  it('says when neither run was faster, with the signal ratio the theory gives', () => {
    const v = lessonView([
      run(2, 'process', [[0, 70], [5, 80], [10, 80]], {}),
      run(2, 'outcome', [[0, 70], [5, 79], [10, 79]], {}),
    ], PLAN, 16, { status: 'done', current: null, elapsed: 1, remaining: 0 });
    expect(v.rows[0].words).toContain('No gap shown at this budget: both end within the noise of this many problems, and neither was faster (both reached 79 % after 80 rollouts): with 2 agents outcome reward\'s signal is lambda^1 = 0.78 of process reward\'s');
  });

  it('notes a measured gap above the prediction, and unlearning when outcome reward\'s agents fell', () => {
    const base = steps([80, 80, 80, 80]);
    const v = lessonView([
      run(4, 'process', [[0, 40], [10, 97]], { base, final: steps([99, 98, 97, 99]) }),
      run(4, 'outcome', [[0, 40], [10, 30]], { base, final: steps([70, 75, 80, 78]) }),
    ], PLAN, 16, { status: 'done', current: null, elapsed: 1, remaining: 0 });
    expect(v.rows[1].words).toContain('outcome lowered agent 1)');
    expect(v.gapWords).toBe('At 4 agents the gap is above the prediction: under outcome reward the agents\' step accuracy fell at 4 agents, so outcome reward did not only learn slower, it unlearned (docs/credit.md, "Its limits").');
    expect(gapWords([])).toBe('');
  });

  it('shows a run still training on its chart, not in the table', () => {
    const v = lessonView([run(2, 'process', [[0, 70], [5, 90]], {}, false)], PLAN, 16, { status: 'running', current: 0, elapsed: 10, remaining: 50 });
    expect(v.rows[0].curves.process).toHaveLength(2);
    expect(v.rows[0].final.process).toBeNull();
    expect(v.runs).toEqual([{ n: 2, mode: 'process', runId: '2-process', iteration: 5, done: false }]);
  });

  it('never calls a change within the noise a gain, nor leaves it unsaid', () => {
    const base = steps([80, 80]);
    const words = agentWords([
      { agent: 1, base: wilson(80, 100), process: wilson(95, 100), outcome: wilson(82, 100) },
      { agent: 2, base: wilson(80, 100), process: wilson(96, 100), outcome: wilson(84, 100) },
    ]);
    expect(words).toBe('step accuracy by agent, in points: process +15.0, +16.0; outcome +2.0, +4.0 (beyond the noise: process raised agents 1, 2; outcome, none)');
    expect(words).not.toMatch(/improved no agent/);
    expect(base.right).toHaveLength(2);
  });

  it('names agents in words', () => {
    expect(agentList([1, 2, 3])).toBe('agents 1-3');
    expect(agentList([2])).toBe('agent 2');
    expect(agentList([1, 3])).toBe('agents 1, 3');
    expect(agentList([])).toBe('no agent');
  });

  it('estimates the time left from the pace so far, with work growing with the team', () => {
    expect(remainingSeconds(0, 0, 100)).toBeNull();
    expect(remainingSeconds(30, 60, 120)).toBe(60);
    expect(runUnits(4, PLAN) / runUnits(2, PLAN)).toBeCloseTo(5 / 3); // a run's time grew about as n + 1 in the page
  });

  it('trains the relay of n under the chosen reward with the lesson budget', () => {
    const c = resolveTrainConfig(lessonPatch(4, 'outcome'));
    expect(c.workflow.agents).toHaveLength(4);
    expect(c.rewards.mode).toBe('outcome');
    expect(c.iterations).toBe(LESSON_PLAN.iterations);
    expect(c.seed).toBe(LESSON_PLAN.seed);
  });
});

describe('a finished lesson is a saved result', () => {
  const SMALL = { ...LESSON_PLAN, sizes: [2], iterations: 10, evalEvery: 5 };
  const done = (n: number, mode: 'process' | 'outcome', seconds: number, finishedAt: number): LessonRunData =>
    ({ ...run(n, mode, [[0, 40], [10, mode === 'process' ? 90 : 60]], {}), seconds, finishedAt });

  it('sums the stored training times of its runs, and ends when the last one ended; nothing until all are recorded', () => {
    expect(trainedTime([done(2, 'process', 30, 1000), done(2, 'outcome', 25, 2000)], SMALL)).toEqual({ seconds: 55, finishedAt: 2000 });
    expect(trainedTime([done(2, 'process', 30, 1000)], SMALL)).toBeNull();
    expect(trainedTime([done(2, 'process', 30, 1000), { ...done(2, 'outcome', 25, 2000), seconds: undefined }], SMALL)).toBeNull();
  });

  it('reads back from the store without a model: the curves, the table and the training time (not the time to read it)', async () => {
    const stores = new Map<string, MemoryStore>();
    const host = {
      parts: () => { throw new Error('a read-back loads no model'); },
      store: (runId: string) => stores.get(runId) ?? stores.set(runId, new MemoryStore()).get(runId)!,
      runId: (c: { rewards: { mode: string }; workflow: { agents: unknown[] } }) => `relay-${c.workflow.agents.length}-${c.rewards.mode}`,
      post: () => undefined,
    };
    const lesson = () => new Lesson(host as never, SMALL);
    expect((await lesson().readBack()).status).toBe('idle');
    for (const [mode, k, seconds, at] of [['process', 90, 31.5, 1_700_000_000_000], ['outcome', 60, 28.5, 1_700_000_100_000]] as const) {
      const store = host.store(`relay-2-${mode}`);
      await store.appendMetrics({ iteration: 0, eval: ev(40) });
      for (let it = 1; it <= 10; it++) await store.appendMetrics({ iteration: it, perAgent: {}, ...(it === 10 ? { eval: ev(k) } : {}) });
      await store.writeFile(RUN_TIME, JSON.stringify({ seconds, finishedAt: at }));
    }
    const v = await lesson().readBack();
    expect(v.status).toBe('done');
    expect(v.readBack).toBe(true);
    expect(v.trained).toEqual({ seconds: 60, finishedAt: 1_700_000_100_000 });
    expect(v.rows[0].gap!.p).toBeCloseTo(0.3);
    expect(v.rows[0].curves.process.map((p) => p.iteration)).toEqual([0, 10]);
    // Half a lesson stored: paused, with what is left in words.
    await host.store('relay-2-outcome').clear();
    const half = await lesson().readBack();
    expect(half.status).toBe('paused');
    expect(half.message).toMatch(/after 1 of 2 runs/);
    expect(half.trained).toBeNull();
  });
});

describe('per-agent step counts (the relay domain, read from an evaluation)', () => {
  const action = (agentId: string, given: string, text: string) => ({ agentId, role: 'r', turn: 0, messages: [{ role: 'user', content: given }], text }) as unknown as Trajectory['actions'][number];
  it('judges each agent given the input it received, and skips a step with no input digit', () => {
    const trajs = [
      { actions: [action('agent1', '3 + 4', '7'), action('agent2', '7 + 5', '2')] },
      { actions: [action('agent1', '3 + 4', '3'), action('agent2', '3 + 5', '8')] },
      { actions: [action('agent1', '3 + 4', 'x'), action('agent2', ' + 5', '5')] },
    ] as unknown as Trajectory[];
    expect(agentStepsOf(teamOf(relayWorkflow(2)), relayWorkflow(2), trajs)).toEqual({ ids: ['agent1', 'agent2'], right: [1, 2], judged: [3, 2] });
    expect(agentStepsOfEval({ greedy: 0, sampled: 0, tasks: 3, agentSteps: agentStepsOf(teamOf(relayWorkflow(2)), relayWorkflow(2), trajs) })).toEqual({ right: [1, 2], judged: [3, 2] });
    expect(agentStepsOf(teamOf(MATH_CHAIN), MATH_CHAIN, trajs)).toBeUndefined(); // a team that judges no steps
  });
});

describe('the lesson\'s coach, in words', () => {
  it('coaches the process runs with the relay team\'s own AI judge, and loads no judge for outcome reward', () => {
    expect(resolveTrainConfig(lessonPatch(4, 'process')).coach).toMatchObject({ kind: 'model', model: 'team' });
    expect(resolveTrainConfig(lessonPatch(4, 'outcome')).coach.kind).toBe('rule');
  });

  it('names the AI judge with its ranking and build, read from its own report, and says outcome reward needs no coach', () => {
    const report = JSON.parse(readFileSync('models/relay-judge/report.json', 'utf8'));
    const q = { ...coachQuality('model:models/relay-judge', 'relay', null, reportRanking(report), 'models/relay-judge/report.json'), build: judgeBuild(report) };
    const r = reportRanking(report)!;
    const span = `${(r.p * 100).toFixed(1)} % [${(r.low * 100).toFixed(1)}, ${(r.high * 100).toFixed(1)}]`;
    expect(lessonCoachWords(q, true)).toBe(`An AI judge, models/relay-judge, scored every step of the process runs: it ranks ${span} of an agent's `
      + `differently-rated steps as the rubric does (${report.check.steps} held-out steps, models/relay-judge/report.json). `
      + 'Outcome reward needs no coach: every agent gets the team\'s 1 or 0.');
    // Built in three stages (teams of 1..6 from models/relay, then twice on teams up to 128): its start is the first stage's.
    expect(q.build).toEqual({ parameters: report.parameters, from: 'models/relay', examples: 24268 + 45082 + 45087, stages: 3, template: 'team',
      checkSteps: report.check.steps });
    expect(judgeBuild({ parameters: 10, examples: 5, flags: { init: 'models/x', template: 'team' } })).toEqual({ parameters: 10, from: 'models/x', examples: 5,
      stages: 1, template: 'team', checkSteps: null });
    expect(lessonCoachWords(coachQuality('rule:relay', 'relay', null), false)).toMatch(/^The rubric \(the rater itself\) scores every step/);
  });

  it('shows what the judge reads, built as its coach builds it: the reply, then the input ending with the step', () => {
    expect(judgePromptExample()).toBe('Relay agent 2 replied "2".\nRelay agent 2 of 4: reply with the last digit of the sum.\n\n7 + 5');
  });
});
