// "Compare credit methods" (src/core/lab/experiments/credit-methods/credit-methods-maths.ts, credit-methods-run.ts) on hand-made records: every
// method's run gets the lesson's budget of agent generations, counted as bench/credit.ts counts them; the
// table's costs (generations, coach calls its reward read, training seconds) and gains (held-out accuracy with
// its Wilson interval, the paired difference to outcome) and its words; a stored comparison read back with no
// model; the settings' hint for each reward.
import { describe, expect, it } from 'vitest';
import {
  COMPARE_AGENTS, comparePatch, CREDIT_METHODS, generationBudget, methodHint, methodRow, methodsView, runCost, type MethodRecord, type MethodRunData,
} from '../../../src/core/lab/experiments/credit-methods/credit-methods-maths.ts';
import { CreditComparison } from '../../../src/core/lab/experiments/credit-methods/credit-methods-run.ts';
import { coachQuality } from '../../../src/core/lab/coach-quality.ts';
import { LESSON_PLAN, lessonPatch } from '../../../src/core/lab/experiments/lesson/lesson-maths.ts';
import { RUN_TIME } from '../../../src/core/lab/experiments/stored-runs.ts';
import { resolveTrainConfig } from '../../../src/core/domains/index.ts';
import type { EvalResult } from '../../../src/core/loop/records.ts';
import { treeCost } from '../../../src/core/rl/counterfactual.ts';
import { pairedDifference, wilson } from '../../../src/core/stats/intervals.ts';
import { MemoryStore } from '../../helpers/loop.ts';

const IDS = Array.from({ length: 100 }, (_, i) => `t${i}`);
/** An evaluation with the first `k` of 100 problems right (greedy). */
const ev = (k: number): EvalResult => {
  const greedy = IDS.map((_, i) => i < k);
  return { greedy: k / 100, sampled: k / 100, tasks: 100, perTask: { ids: IDS, greedy, sampled: greedy } };
};
/** A finished run of `its` iterations: each with `gens` generations, `calls` coach calls and 1 s of training; the last evaluated at `k` of 100. */
function run(method: MethodRunData['method'], its: number, gens: number, calls: number, k: number): MethodRunData {
  const records: MethodRecord[] = [{ iteration: 0, eval: ev(40) }];
  for (let i = 1; i <= its; i++) {
    records.push({ iteration: i, perAgent: {}, generations: gens, trajectories: 16, coach: { calls }, seconds: { rollout: 0.6, coach: 0.1, update: 0.3, eval: 5, checkpoint: 0 } });
  }
  records.push({ iteration: its, eval: ev(k) });
  return { method, runId: method, iterations: its, agents: 4, records, done: true };
}

describe('the comparison\'s budget: the lesson\'s generations for every method', () => {
  it('gives every method 960 agent generations at 4 agents, as bench/credit.ts counts them', () => {
    const budget = generationBudget();
    expect(budget).toEqual({ perIteration: 8 * 2 * 4, total: LESSON_PLAN.iterations * 64 });
    for (const method of CREDIT_METHODS) {
      const c = resolveTrainConfig(comparePatch(method));
      expect(c.workflow.agents).toHaveLength(COMPARE_AGENTS);
      expect(c.seed).toBe(LESSON_PLAN.seed);
      expect(c.evalTasks).toBe(LESSON_PLAN.evalTasks);
      expect(c.rewards.mode).toBe(method);
      const perPrompt = method === 'counterfactual' ? treeCost(c.rewards.fanOut).generations : COMPARE_AGENTS;
      expect(c.iterations * c.promptsPerIteration * c.samplesPerPrompt * perPrompt, method).toBe(budget.total);
    }
    // Counterfactual: binary trees of 30 generations, 2 prompts an iteration, 16 iterations.
    const cf = resolveTrainConfig(comparePatch('counterfactual'));
    expect([cf.rewards.fanOut, cf.promptsPerIteration, cf.samplesPerPrompt, cf.iterations]).toEqual([[2, 2, 2, 2], 2, 1, 16]);
  });

  it('reuses the lesson\'s own runs for process and outcome; only process reads (and loads) a coach', () => {
    expect(comparePatch('process')).toEqual(lessonPatch(4, 'process'));
    expect(comparePatch('outcome')).toEqual(lessonPatch(4, 'outcome'));
    expect(resolveTrainConfig(comparePatch('process')).coach.kind).toBe('model'); // the relay team's own AI judge
    for (const m of ['outcome', 'counterfactual', 'groups'] as const) expect(resolveTrainConfig(comparePatch(m)).coach.kind, m).toBe('rule');
  });
});

describe('the comparison\'s table', () => {
  const runs = [run('process', 15, 64, 64, 81), run('outcome', 15, 64, 64, 63), run('counterfactual', 16, 60, 120, 70), run('groups', 15, 64, 64, 60)];

  it('costs: generations summed, the coach calls only a coach-reading reward makes, training seconds without the evaluations', () => {
    expect(runCost(runs[0])).toEqual({ generations: 960, coachCalls: 960, seconds: expect.closeTo(15, 9), iterations: 15 });
    expect(runCost(runs[2])).toEqual({ generations: 960, coachCalls: 0, seconds: expect.closeTo(16, 9), iterations: 16 });
    // Records from before `generations` was kept: a generation per agent of each trajectory.
    const old = { ...runs[1], records: runs[1].records.map(({ generations: _, ...r }) => r) };
    expect(runCost(old).generations).toBe(15 * 16 * 4);
  });

  it('gets: the final held-out accuracy with its Wilson interval, and the paired difference to outcome', () => {
    const cf = methodRow(runs[2], 'counterfactual', runs[1], null);
    expect(cf.final).toMatchObject(wilson(70, 100));
    const d = pairedDifference(ev(70).perTask!.greedy, ev(63).perTask!.greedy);
    expect(cf.vsOutcome).toEqual({ p: d.p, low: d.low, high: d.high, n: 100 });
    expect(cf.needs).toBe('no coach');
    expect(cf.words).toMatch(/^counterfactual: no coach; 960 generations, 0 coach calls, 16 s of training here; 70\.0 % \[60\.4, 78\.1\] held out, \+7\.0 pts \[\+1\.6, \+12\.4\] against outcome \(paired, a gain beyond the noise\)\.$/);
    expect(methodRow(runs[1], 'outcome', runs[1], null).vsOutcome).toBeNull();
    expect(methodRow(undefined, 'groups', runs[1], null).words).toBe('groups: not trained yet');
  });

  it('says it in one sentence: each accuracy, and which lie beyond the noise against outcome', () => {
    const judge = coachQuality('model:models/relay-judge', 'relay', null, { p: 1, low: 1, high: 1 }, 'models/relay-judge/report.json');
    const v = methodsView(runs, { status: 'done', current: null, elapsed: 0, remaining: 0, coach: judge });
    expect(v.rows.map((r) => r.method)).toEqual(['process', 'outcome', 'counterfactual', 'groups']);
    expect(v.rows[0].needs).toBe('an AI judge, models/relay-judge');
    expect(v.rows.map((r) => r.from)).toEqual(['lesson', 'lesson', 'comparison', 'comparison']);
    expect(v.budget).toBe(960);
    expect(v.untrained).toMatchObject({ ...wilson(40, 100), tasks: 100 });
    expect(v.words).toBe('At 4 agents and 960 generations each: process 81.0 %, outcome 63.0 %, counterfactual 70.0 %, groups 60.0 % '
      + '(greedy, 100 held-out problems; the untrained team 40.0 %). Against outcome, paired: a gain beyond the noise for process '
      + '(+18.0 pts [+10.2, +25.8]) and counterfactual (+7.0 pts [+1.6, +12.4]); within the noise: groups.');
    const worse = methodsView([...runs.slice(0, 3), run('groups', 15, 64, 0, 50)], { status: 'done', current: null, elapsed: 0, remaining: 0, coach: judge });
    expect(worse.words).toMatch(/; a loss beyond the noise for groups \(-13\.0 pts \[.*\]\)\.$/);
  });

  it('opens with its conclusion, from its own numbers: the largest gain, and the largest loss with its drift', () => {
    const v = methodsView(runs, { status: 'done', current: null, elapsed: 0, remaining: 0, coach: null });
    expect(v.takeaway).toBe('Process reward taught the team most: +18.0 pts [+10.2, +25.8] over outcome reward, paired.');
    // Groups 13 points below outcome; its agents' KL 2.78 against outcome's 0.23 (hand-set records): drift, not learning.
    const drifted = (r: MethodRunData, kl: number): MethodRunData => ({
      ...r, records: r.records.map((x) => (x.perAgent ? { ...x, perAgent: { agent1: { kl } } } as MethodRecord : x)),
    });
    const worse = [runs[0], drifted(runs[1], 0.23), runs[2], drifted(run('groups', 15, 64, 0, 50), 2.78)];
    const d = pairedDifference(ev(50).perTask!.greedy, ev(63).perTask!.greedy); // groups - outcome, paired, the interval's reference
    expect(methodsView(worse, { status: 'done', current: null, elapsed: 0, remaining: 0, coach: null }).takeaway).toBe(
      'Process reward taught the team most: +18.0 pts [+10.2, +25.8] over outcome reward, paired; groups drifted from the base model '
      + `instead of learning: KL 2.78 against outcome's 0.23, and ended -13.0 pts [${(d.low * 100).toFixed(1)}, ${(d.high * 100).toFixed(1)}] below it.`);
    expect(methodsView([runs[1]], { status: 'running', current: null, elapsed: 0, remaining: null, coach: null }).takeaway).toBe('');
  });
});

describe('a stored comparison is read back without a model', () => {
  it('shows the four runs from the store, done, and half of it as paused', async () => {
    const stores = new Map<string, MemoryStore>();
    const host = {
      parts: () => { throw new Error('a read-back loads no model'); },
      store: (runId: string) => stores.get(runId) ?? stores.set(runId, Object.assign(new MemoryStore(), { describe: async () => undefined })).get(runId)!,
      runId: (c: { rewards: { mode: string } }) => `relay-4-${c.rewards.mode}`,
      post: () => undefined,
    };
    expect((await new CreditComparison(host as never).readBack()).status).toBe('idle');
    const all = [run('process', 15, 64, 64, 81), run('outcome', 15, 64, 64, 63), run('counterfactual', 16, 60, 0, 70), run('groups', 15, 64, 0, 60)];
    for (const r of all) {
      const store = host.store(`relay-4-${r.method}`);
      for (const rec of r.records) await store.appendMetrics(rec);
      await store.writeFile(RUN_TIME, JSON.stringify({ seconds: 20, finishedAt: 1 }));
    }
    const v = await new CreditComparison(host as never).readBack();
    expect(v.status).toBe('done');
    expect(v.readBack).toBe(true);
    expect(v.rows.every((r) => r.done && r.final)).toBe(true);
    expect(v.rows[2].vsOutcome!.p).toBeCloseTo(0.07);
    await host.store('relay-4-groups').clear();
    const half = await new CreditComparison(host as never).readBack();
    expect(half.status).toBe('paused');
  });
});

describe('the words the page says about each method', () => {
  it('hints, for counterfactual, that it replays each agent\'s turn and costs generations, not coach calls', () => {
    const cf = resolveTrainConfig(comparePatch('counterfactual'));
    expect(methodHint(cf)).toMatch(/^Replays each agent's turn: every agent replies 2, 2, 2, 2 times to the same frozen input \(its fan-out\), so a prompt costs 30 agent generations \(16 leaves\) instead of 4: 60 an iteration\. It costs generations, not coach calls/);
    expect(methodHint(resolveTrainConfig(comparePatch('groups')))).toMatch(/^Groups the steps .* No coach, no extra generations/);
    expect(methodHint(resolveTrainConfig(comparePatch('process')))).toBe('Needs a coach; costs a coach call for every agent of every rollout; each step trained on its own score / 10.');
    expect(methodHint(resolveTrainConfig(comparePatch('outcome')))).toMatch(/^Needs no coach;/);
  });
});
