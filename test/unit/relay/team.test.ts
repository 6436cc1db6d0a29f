/**
 * The relay team (src/core/domains/relay/): tasks worked by hand, the rubric judged in context with
 * one culprit at each position, the domain's outcome, and the shipped configs equal to relayConfig(n).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { RELAY_CONFIG_SIZES, relayHeldOut, relayStep, relayTasks } from '../../../src/core/domains/relay/tasks.ts';
import { relayConfig, relayOutcome, relayRuleScore, relayStepVerdict, relayWorkflow } from '../../../src/core/domains/relay/team.ts';
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

describe('relay configs', () => {
  it.each(RELAY_CONFIG_SIZES)('configs/relay-%i.json is relayConfig(n), valid, on the relay domain', (n) => {
    const file = JSON.parse(readFileSync(new URL(`../../../configs/relay-${n}.json`, import.meta.url), 'utf8'));
    expect(file).toEqual(JSON.parse(JSON.stringify(relayConfig(n))));
    const c = resolveTrainConfig(file);
    expect(c.workflow.agents).toHaveLength(n);
    expect(teamOf(c.workflow).name).toBe('relay');
    expect(teamOf(c.workflow).heldOut(200)).toHaveLength(n === 1 ? 22 : 200); // one agent has 90 tasks in all
  });
});
