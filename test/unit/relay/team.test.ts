/**
 * The relay team (src/core/domains/relay/): tasks worked by hand, the rubric judged in context with
 * one culprit at each position, the domain's outcome, and the shipped configs: relayConfigFile(n), one
 * repeated agent that the loader expands to exactly the fully written workflow they replaced.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { RELAY_CONFIG_SIZES, relayHeldOut, relayStep, relayTasks } from '../../../src/core/domains/relay/tasks.ts';
import { relayConfig, relayConfigFile, relayScaleRecipe, relayOutcome, relayRuleScore, relayStepVerdict, relayWorkflow } from '../../../src/core/domains/relay/team.ts';
import { teamOf, resolveTrainConfig } from '../../../src/core/domains/index.ts';
import { agentContext, agentReward } from '../../../src/core/loop/rewards.ts';
import type { Action, Trajectory } from '../../../src/core/loop/trajectory.ts';
import { DEFAULT_REWARDS } from '../../../src/core/loop/rewards.ts';
import { placeVars, renderTemplate } from '../../../src/core/loop/workflow.ts';
import { trajectoryViews } from '../../../src/core/lab/transfer.ts';

describe('relay tasks', () => {
  it('adds on a 10-position dial, and the answer chains the steps', () => {
    expect(relayStep(7, 5)).toBe(2);
    expect(relayStep(3, 4)).toBe(7);
    expect(relayStep(0, 9)).toBe(9);
    for (const t of relayTasks(4, 0, 20)) {
      expect(t.adds).toHaveLength(4);
      expect(t.parts[0]).toBe(`${t.start} + ${t.adds[0]}`);
      expect(t.parts.slice(1)).toEqual(t.adds.slice(1).map((k) => `+ ${k}`));
      expect(Number(t.answer)).toBe(t.adds.reduce((x, k) => (x + k) % 10, t.start));
      for (const k of t.adds) expect(k).toBeGreaterThanOrEqual(1);
    }
  });

  it('keeps 200 fixed held-out tasks per size, never drawn for training', () => {
    const held = relayHeldOut(4);
    expect(held).toHaveLength(200);
    expect(relayHeldOut(4)[17].id).toBe(held[17].id);
    const heldIds = new Set(held.map((t) => `${t.start}:${t.adds}`));
    const train = relayTasks(4, 3, 500);
    expect(new Set(train.map((t) => t.id)).size).toBe(500);
    expect(train.some((t) => heldIds.has(`${t.start}:${t.adds}`))).toBe(false);
    // One agent has 90 tasks: a quarter held out, the rest to train on.
    expect(relayHeldOut(1)).toHaveLength(22);
    expect(relayTasks(1, 0, 1000)).toHaveLength(68);
    expect(() => relayTasks(129, 0, 1)).toThrow(/1\.\.128/);
    expect(() => relayHeldOut(0)).toThrow(/1\.\.128/);
  });

  it('holds any size up to 128: 200 distinct held-out tasks, training tasks apart from them', () => {
    const held = relayHeldOut(128);
    expect(held).toHaveLength(200);
    expect(held[0].adds).toHaveLength(128);
    expect(held[0].parts).toHaveLength(128);
    expect(new Set(held.map((t) => t.id)).size).toBe(200);
    expect(held[0].answer).toBe(String(held[0].adds.reduce(relayStep, held[0].start)));
    const heldIds = new Set(held.map((t) => `${t.start}:${t.adds}`));
    expect(relayTasks(128, 0, 50).some((t) => heldIds.has(`${t.start}:${t.adds}`))).toBe(false);
  });
});

describe('relay rubric, judged in context', () => {
  it('scores a step by what the agent received', () => {
    expect(relayStepVerdict('7 + 5', '2')).toMatchObject({ score: 10, right: true });
    expect(relayStepVerdict('7 + 5', ' 2 ')).toMatchObject({ score: 10, right: true });
    expect(relayStepVerdict('7 + 5', '7')).toMatchObject({ score: 0, right: false, reason: expect.stringMatching(/unchanged/) });
    expect(relayStepVerdict('7 + 5', '3')).toMatchObject({ score: 0, reason: expect.stringMatching(/wrong digit 3/) });
    expect(relayStepVerdict('7 + 5', '12')).toMatchObject({ score: 0, reason: expect.stringMatching(/no single digit/) });
    expect(relayStepVerdict(' + 5', '5')).toMatchObject({ score: 5, reason: expect.stringMatching(/no digit/) });
    expect(relayStepVerdict(' + 5', '5').right).toBeUndefined();
  });

  /** A 4-agent trajectory where agent `culprit` (1-based) passes its input on and the others do their step. */
  function trajectory(culprit: number): Trajectory {
    const w = relayWorkflow(4);
    const task = relayTasks(4, 11, 1)[0];
    const actions: Action[] = [];
    let x = task.start;
    let previous = '';
    w.agents.forEach((spec, i) => {
      const vars: Record<string, string | number> = { ...placeVars(w, i), part: task.parts[i], problem: task.problem };
      if (i > 0) vars[`output:${w.agents[i - 1].id}`] = previous;
      const messages = [{ role: 'system' as const, content: renderTemplate(spec.system, vars) }, { role: 'user' as const, content: renderTemplate(spec.user, vars) }];
      const reply = i + 1 === culprit ? x : relayStep(x, task.adds[i]);
      previous = String(reply);
      x = reply;
      actions.push({ agentId: spec.id, role: spec.role, turn: 1, messages, text: previous, codeBlocks: 0, promptText: '', promptTokens: [1], tokens: [2], logprobs: [0], truncated: false });
    });
    const t: Trajectory = { task, sample: 0, actions, finalAnswer: null, correct: false };
    Object.assign(t, relayOutcome(t));
    return t;
  }

  it.each([1, 2, 3, 4])('one culprit at position %i: it alone scores 0, the others 10; outcome gives all 0', (culprit) => {
    const w = relayWorkflow(4);
    const t = trajectory(culprit);
    expect(t.correct).toBe(false);
    expect(t.metrics).toEqual({ stepAccuracy: 0.75 });
    const scores = w.agents.map((a) => relayRuleScore(agentContext(w, t, a.id)!).score);
    expect(scores).toEqual(w.agents.map((_, i) => (i + 1 === culprit ? 0 : 10)));
    const process = scores.map((s) => agentReward({ ...DEFAULT_REWARDS, mode: 'process' }, t, s));
    const outcome = scores.map((s) => agentReward({ ...DEFAULT_REWARDS, mode: 'outcome' }, t, s));
    expect(process).toEqual(scores.map((s) => s / 10));
    expect(outcome).toEqual([0, 0, 0, 0]);
  });

  it('beside an AI coach\'s score, the inspector gets the rater\'s verdict on the same context; a rubric-scored batch none', async () => {
    const w = relayWorkflow(4);
    const views = await trajectoryViews(w, [trajectory(2)], 'model:models/relay-judge');
    expect(views[0].actions.map((a) => a.rater?.score)).toEqual([10, 0, 10, 10]);
    expect(views[0].actions[1].rater?.reason).toMatch(/unchanged/);
    expect((await trajectoryViews(w, [trajectory(2)], 'rule:relay'))[0].actions.every((a) => a.rater === undefined)).toBe(true);
  });

  it('a team with no culprit is correct and every agent scores 10', () => {
    const w = relayWorkflow(4);
    const t = trajectory(0);
    expect(t.correct).toBe(true);
    expect(t.finalAnswer).toBe(t.task.answer);
    const final = relayRuleScore(agentContext(w, t, 'agent4')!);
    expect(final).toMatchObject({ score: 10, correct: true });
  });
});

/**
 * The workflow of configs/relay-<n>.json as it was fully written out (1,310 lines at n = 128), before the
 * repeated agent replaced it: sha256 of its JSON with keys sorted, made at commit 5452f0d by
 *   git show 5452f0d:configs/relay-$n.json | node -e '<canon(c.workflow), sorted keys, JSON.stringify, sha256>'
 */
const WRITTEN_OUT: Record<number, string> = {
  1: 'e6c500192e9f5eab1946ee86469fda87583a7509b156df37172e19f2cede5a7f',
  2: 'b4da11534aa35e3a9e439a4814abbe7852e2ca75773a8e595fd3b8e5e3a0ecf1',
  3: '397da53a60b5360ab614bbd0551a97ced5a7a8b74ac27ee335c3805c7ae7b916',
  4: 'ddd1086fb1a6b03f7085cbc0ae4231f95edffe693b04ef812b41765b101770d6',
  5: '21d17d68867678384abf04da4367e992beccd17f8e577e094bbbe1776381e202',
  6: '86430048ba44cb20cce2f99288893b1a7b72f768eca91b299ebb9d640ae2685f',
  8: 'f87ac453fd27281d328f26f327f63e970ac23dfaba6fe6e9b68ddd896fd6d6f2',
  16: 'aed76757f11df331a78b0ae0501064a351ce36568a272faf55e548b66dcdc011',
  32: '3cc541b6874513a773864a57a0baf03bea7afd571319efb9b38336d39c2fedd8',
  64: 'cc2f226e3f812a6a88bebdb18b36811783b1187938752ec8fc15e7a024850735',
  128: '6145aed1856fcd83a4a7a236dca4b7a6c0c89d6d88511c741603c697ae94143f',
};
const canon = (x: unknown): unknown => (Array.isArray(x) ? x.map(canon)
  : x && typeof x === 'object' ? Object.fromEntries(Object.keys(x).sort().map((k) => [k, canon((x as Record<string, unknown>)[k])])) : x);
const digest = (x: unknown) => createHash('sha256').update(JSON.stringify(canon(x))).digest('hex');

describe('relay configs', () => {
  it.each(RELAY_CONFIG_SIZES)('configs/relay-%i.json is relayConfigFile(n), valid, on the relay domain, and expands to the workflow it replaced', (n) => {
    const text = readFileSync(new URL(`../../../configs/relay-${n}.json`, import.meta.url), 'utf8');
    const file = JSON.parse(text);
    expect(file).toEqual(JSON.parse(JSON.stringify(relayConfigFile(n))));
    expect(text.split('\n').length).toBeLessThan(60);
    const c = resolveTrainConfig(file);
    expect(c.workflow.agents).toHaveLength(n);
    expect(digest(c.workflow)).toBe(WRITTEN_OUT[n]);
    expect(c.workflow).toEqual(relayWorkflow(n));
    expect(teamOf(c.workflow).name).toBe('relay');
    expect(teamOf(c.workflow).heldOut(200)).toHaveLength(n === 1 ? 22 : 200); // one agent has 90 tasks in all
  });

  it('a fully written relay config still loads, to the same config', () => {
    const compact = resolveTrainConfig(relayConfigFile(6));
    expect(resolveTrainConfig({ ...relayConfigFile(6), workflow: relayWorkflow(6) })).toEqual(compact);
    expect(resolveTrainConfig(relayConfig(6))).toEqual(compact);
  });

  it('from 16 agents the shipped configs run the scale recipe: 64 rollouts an iteration in wide batches, evaluated untrained and at the end', () => {
    expect(relayScaleRecipe(8)).toEqual({});
    expect(resolveTrainConfig(relayConfigFile(8)).promptsPerIteration).toBe(8);
    for (const n of [16, 32, 64, 128]) {
      const c = resolveTrainConfig(relayConfigFile(n));
      expect(c.promptsPerIteration * c.samplesPerPrompt).toBe(64);
      expect([c.rolloutBatch, c.coach.batch, c.update.microBatchSize, c.update.sharedPrefix, c.update.reuseRolloutLogprobs]).toEqual([64, 64, 64, true, true]);
      expect([c.update.whitening, c.update.rememberReference]).toEqual(['state', true]); // a per-state baseline: the stubborn cells learn (docs/relay-128-recipe.md)
      expect([c.temperature, c.evalTemperature]).toEqual([1, 0]); // the rollout's log-probs are the policy's at T = 1; greedy evaluation only
      expect(c.evalEvery).toBe(c.iterations);
      expect(c.coach.kind).toBe('model');
      expect(c.lr).toBe(relayConfig(n).lr); // the team's own rate: 6e-3 broke greedy cells (docs/relay-128-recipe.md)
    }
    expect(resolveTrainConfig(relayConfigFile(128)).iterations).toBe(64);
  });
});
