/**
 * Rewards on a hand-made trajectory of the math chain (Solver, a 2-turn Code Executor, Verifier) with a
 * scripted coach: what the coach is shown, process / outcome / mixed rewards by hand, where reward
 * shaping puts its per-token reward (and what the advantages then see), and which actions become
 * training samples.
 */
import { describe, expect, it } from 'vitest';
import { computeAdvantages } from '../../../src/core/rl/advantages.ts';
import type { ActionContext } from '../../../src/core/coach/coach-format.ts';
import type { Coach, CoachResult } from '../../../src/core/coach/coach.ts';
import {
  actionVerdicts, agentReward, coachTrajectories, DEFAULT_REWARDS, creditedTrajectories, trainSamples, type RewardSettings,
} from '../../../src/core/loop/rewards.ts';
import type { Action, Trajectory } from '../../../src/core/loop/trajectory.ts';
import type { AgentSpec, WorkflowSpec } from '../../../src/core/loop/workflow.ts';

const agent = (id: string, role: string, turns: number, extra: Partial<AgentSpec> = {}): AgentSpec =>
  ({ id, role, system: '', user: '', maxTokens: 16, turns, tools: [], trainable: true, ...extra });

const TEAM: WorkflowSpec = {
  name: 'test-chain', domain: 'math',
  agents: [agent('solver', 'Problem Solver', 1), agent('executor', 'Code Executor', 2), agent('verifier', 'Verifier', 1, { final: true })],
};

function action(agentId: string, turn: number, text: string, tokens: number[], extra: Partial<Action> = {}): Action {
  return {
    agentId, role: TEAM.agents.find((a) => a.id === agentId)!.role, turn, text, tokens,
    messages: [{ role: 'user', content: `input of ${agentId} turn ${turn}` }], codeBlocks: 0,
    promptText: '', promptTokens: [100 + turn], logprobs: tokens.map(() => -1), truncated: false, ...extra,
  } as Action;
}

/** Solver 3 tokens, Executor turn 1 (2 tokens, runs code) and turn 2 (3 tokens), Verifier 1 token. */
function trajectory(correct: boolean, id = 'p1'): Trajectory {
  return {
    task: { id, problem: 'What is 2 + 3?', answer: '5' }, sample: 0, finalAnswer: correct ? '5' : '6', correct,
    actions: [
      action('solver', 1, '2 + 3 = 5. Answer: 5', [1, 2, 3]),
      action('executor', 1, '```python\nprint(2+3)\n```', [4, 5], { observation: '5', codeBlocks: 1 }),
      action('executor', 2, 'The code printed 5.', [6, 7, 8]),
      action('verifier', 1, '\\boxed{6}', [9]),
    ],
  };
}

/** Scores by the coach's view: the whole work of an agent, or (role "... (turn k)") one turn. */
const SCORES: Record<string, number> = {
  'Problem Solver': 9, 'Code Executor': 8, Verifier: 2, 'Code Executor (turn 1)': 3, 'Code Executor (turn 2)': 7,
};

class ScriptedCoach implements Coach {
  readonly name = 'scripted';
  readonly seen: ActionContext[] = [];
  constructor(private readonly failRole?: string) {}
  async scoreBatch(actions: ActionContext[]): Promise<CoachResult[]> {
    this.seen.push(...actions);
    return actions.map((a) => a.role === this.failRole
      ? { score: 5, raw: 'gibberish', ok: false, attempts: 2 }
      : { score: SCORES[a.role], raw: `PROCESS_SCORE: ${SCORES[a.role]}`, ok: true, attempts: 1 });
  }
}

const settings = (s: Partial<RewardSettings>): RewardSettings => ({ ...DEFAULT_REWARDS, ...s });

async function rewards(s: RewardSettings, correct = false) {
  const played = trajectory(correct);
  const coach = new ScriptedCoach();
  const { coached, stats } = await coachTrajectories(TEAM, [played], coach, s);
  const { samples, rewards: byAction } = trainSamples(TEAM, [played], coached, s, () => true);
  const [t] = creditedTrajectories([played], { verdicts: actionVerdicts([played], coached), rewards: byAction });
  return { t, coach, coached, stats, samples, rewards: t.actions.map((a) => a.reward) };
}

describe('rewards', () => {
  it('the coach sees each agent once, on all its turns; the final agent alone gets the ground truth', async () => {
    const { coach, stats } = await rewards(settings({}));
    expect(coach.seen.map((c) => c.role)).toEqual(['Problem Solver', 'Code Executor', 'Verifier']);
    const executor = coach.seen[1];
    expect(executor.output).toBe('```python\nprint(2+3)\n```\nThe code printed 5.'); // both turns
    expect(executor.observation).toBe('5');
    expect(executor.input).toBe('input of executor turn 1'); // the first turn's input
    expect(executor.groundTruth).toBeUndefined();
    expect(coach.seen[2]).toMatchObject({ final: true, groundTruth: '5' });
    expect(stats).toEqual({ calls: 3, failures: 0, cached: 0 });
  });

  it('process: score / 10 per agent, on every turn of that agent, whatever the outcome', async () => {
    expect((await rewards(settings({ mode: 'process' }))).rewards).toEqual([0.9, 0.8, 0.8, 0.2]);
    expect((await rewards(settings({ mode: 'process' }), true)).rewards).toEqual([0.9, 0.8, 0.8, 0.2]);
  });

  it('outcome: 1 or 0 for every action, from the final answer alone', async () => {
    expect((await rewards(settings({ mode: 'outcome' }))).rewards).toEqual([0, 0, 0, 0]);
    expect((await rewards(settings({ mode: 'outcome' }), true)).rewards).toEqual([1, 1, 1, 1]);
  });

  it('mixed: w * process + (1 - w) * outcome', async () => {
    // w = 0.25, wrong: 0.25 * [0.9, 0.8, 0.8, 0.2] = [0.225, 0.2, 0.2, 0.05]; right: + 0.75.
    const wrong = (await rewards(settings({ mode: 'mixed', processWeight: 0.25 }))).rewards;
    [0.225, 0.2, 0.2, 0.05].forEach((x, i) => expect(wrong[i]).toBeCloseTo(x, 12));
    const right = (await rewards(settings({ mode: 'mixed', processWeight: 0.25 }), true)).rewards;
    [0.975, 0.95, 0.95, 0.8].forEach((x, i) => expect(right[i]).toBeCloseTo(x, 12));
    const t = trajectory(true);
    expect(agentReward(settings({ mode: 'mixed', processWeight: 1 }), t, 7)).toBeCloseTo(0.7, 12); // the paper's setting
    expect(agentReward(settings({ mode: 'mixed', processWeight: 0 }), t, 7)).toBe(1);
  });

  it("shaping: each turn of a multi-turn agent is coached too, w * score / 10 on that turn's last token", async () => {
    const { t, coach, stats, samples } = await rewards(settings({ mode: 'process', shaping: true, shapingWeight: 0.5 }));
    // 3 agents + the Executor's 2 turns; single-turn agents are not coached twice.
    expect(coach.seen.map((c) => c.role)).toEqual(['Problem Solver', 'Code Executor', 'Code Executor (turn 1)', 'Code Executor (turn 2)', 'Verifier']);
    expect(coach.seen[2]).toMatchObject({ output: '```python\nprint(2+3)\n```', observation: '5', final: false, input: 'input of executor turn 1' });
    expect(coach.seen[3]).toMatchObject({ output: 'The code printed 5.', observation: undefined, input: 'input of executor turn 2' });
    expect(stats.calls).toBe(5);
    // The agent's reward is unchanged (its whole work: 8 -> 0.8); the turn scores 3 and 7 become
    // 0.5 * 0.3 = 0.15 and 0.5 * 0.7 = 0.35 on the last token of each turn.
    expect(t.actions.map((a) => a.reward)).toEqual([0.9, 0.8, 0.8, 0.2]);
    expect(t.actions.map((a) => a.tokenRewards)).toEqual([undefined, [0, 0.15], [0, 0, 0.35], undefined]);
    expect(samples.map((s) => s.tokenRewards)).toEqual([undefined, [0, 0.15], [0, 0, 0.35], undefined]);
    // What the advantages see (no KL, group whitening off): turn 2's returns are 0.8 + 0.35 = 1.15 on
    // every token (discount 1), turn 1's 0.8 + 0.15 = 0.95.
    const out = computeAdvantages(samples.map((s) => ({ agent: s.agent, reward: s.reward, tokenRewards: s.tokenRewards, oldLogprobs: s.action.map(() => 0), refLogprobs: s.action.map(() => 0) })),
      { klCoef: 0, whitening: 'batch' });
    expect(out.returns.map((g) => g.map((x) => +x.toFixed(12)))).toEqual([[0.9, 0.9, 0.9], [0.95, 0.95], [1.15, 1.15, 1.15], [0.2]]);
  });

  it("each action keeps the verdict its reward came from (the agent's), also under shaping", async () => {
    const { t } = await rewards(settings({ mode: 'process', shaping: true, shapingWeight: 0.5 }));
    // The page's credit view, the per-agent score metric and the export read a.coach.score as the
    // score the reward is from: the Executor's 8, not its turns' 3 and 7 (those are in tokenRewards).
    expect(t.actions.map((a) => a.coach?.score)).toEqual([9, 8, 8, 2]);
    expect(t.actions.map((a) => a.reward)).toEqual(t.actions.map((a) => agentReward(settings({}), t, a.coach!.score)));
    // The turn's own answer stays readable in the raw text.
    expect(t.actions[2].coach!.raw).toBe('PROCESS_SCORE: 8\n--- turn 2 alone (shaping) ---\nPROCESS_SCORE: 7');
    expect(t.actions[0].coach!.raw).toBe('PROCESS_SCORE: 9');
  });

  it('a failed coach answer counts as a failure and scores the neutral 5 -> 0.5', async () => {
    const played = trajectory(false);
    const { coached, stats } = await coachTrajectories(TEAM, [played], new ScriptedCoach('Verifier'), settings({}));
    const { rewards: byAction } = trainSamples(TEAM, [played], coached, settings({}), () => true);
    const [t] = creditedTrajectories([played], { verdicts: actionVerdicts([played], coached), rewards: byAction });
    // Every stage returns values: the played trajectory carries nothing; its record carries the credit.
    expect(played.actions.map((a) => [a.coach, a.reward])).toEqual(played.actions.map(() => [undefined, undefined]));
    expect(stats).toEqual({ calls: 3, failures: 1, cached: 0 });
    expect(t.actions[3].reward).toBe(0.5);
    expect(t.actions[3].coach).toMatchObject({ ok: false, attempts: 2, score: 5 });
  });

  it('samples: one per action of a trainable agent, reward on the action, grouped by task/agent/turn', async () => {
    const played = trajectory(false);
    played.actions.push(action('verifier', 2, '', [])); // an empty action: rewarded, but nothing to train on
    const frozen = new Set(['solver']);
    const { coached } = await coachTrajectories(TEAM, [played], new ScriptedCoach(), settings({}));
    const { samples, rewards: byAction, actionOf } = trainSamples(TEAM, [played], coached, settings({}), (id) => !frozen.has(id));
    const [t] = creditedTrajectories([played], { verdicts: actionVerdicts([played], coached), rewards: byAction });
    expect(samples.map((s) => played.actions.indexOf(actionOf.get(s)!))).toEqual([1, 2, 3]);
    expect(samples.map((s) => [s.agent, s.group, s.reward, s.action])).toEqual([
      ['executor', 'p1/executor/1', 0.8, [4, 5]],
      ['executor', 'p1/executor/2', 0.8, [6, 7, 8]],
      ['verifier', 'p1/verifier/1', 0.2, [9]],
    ]);
    expect(samples[0]).toMatchObject({ prompt: [101], truncated: false, tokenRewards: undefined });
    expect(t.actions[0].reward).toBe(0.9); // the frozen Solver's reward is still shown
    expect(t.actions[4].reward).toBe(0.2);
  });
});

describe('coach-free credit over the whole iteration', () => {
  const relay: WorkflowSpec = { name: 'relay-2', domain: 'relay', agents: [agent('agent1', 'Relay agent 1', 1), agent('agent2', 'Relay agent 2', 1, { final: true })] };
  const step = (agentId: string, input: string, text: string): Action =>
    ({ agentId, role: agentId, turn: 1, text, tokens: [1], messages: [{ role: 'user', content: input }], codeBlocks: 0, promptText: '', promptTokens: [9], logprobs: [-1], truncated: false }) as Action;
  const none = () => ({ agentScores: new Map(), turnScores: new Map() });

  it('groups: the worked example of rl/state-groups.ts, one sample per action', () => {
    const trajs = [
      { task: { id: 'p', problem: '', answer: '2' }, sample: 0, actions: [step('agent1', '3 + 4', '7'), step('agent2', '7 + 5', '2')], finalAnswer: '2', correct: true },
      { task: { id: 'p', problem: '', answer: '2' }, sample: 1, actions: [step('agent1', '3 + 4', '3'), step('agent2', '3 + 5', '8')], finalAnswer: '8', correct: false },
    ] as Trajectory[];
    const out = trainSamples(relay, trajs, [none(), none()], { ...DEFAULT_REWARDS, mode: 'groups' }, () => true);
    expect(out.samples.map((s) => s.reward)).toEqual([2, 1, -2, -1]);
    expect(out.groups).toEqual({ steps: 4, groups: 3, meanGroupSize: 1.5, sharedShare: 0.5 });
  });

  it('counterfactual: a tree\'s shared ancestor is one sample with its node\'s credit', () => {
    const root = step('agent1', '3 + 4', '7');
    const other = step('agent1', '3 + 4', '3');
    const leaf = (a1: Action, b: number[], correct: boolean) =>
      ({ task: { id: 'p', problem: '', answer: '2' }, sample: 0, branch: b, actions: [a1, step('agent2', `${a1.text} + 5`, correct ? '2' : '9')], finalAnswer: null, correct });
    const trajs = [leaf(root, [0, 0], true), leaf(root, [0, 1], false), leaf(other, [1, 0], false), leaf(other, [1, 1], false)] as Trajectory[];
    const out = trainSamples(relay, trajs, trajs.map(none), { ...DEFAULT_REWARDS, mode: 'counterfactual' }, () => true);
    // rl/counterfactual.ts's worked example: agent 1 +0.5 / -0.5 (once each), agent 2 +1, -1, 0, 0.
    expect(out.samples.map((s) => [s.agent, s.reward])).toEqual([['agent1', 0.5], ['agent2', 1], ['agent2', -1], ['agent1', -0.5], ['agent2', 0], ['agent2', 0]]);
  });
});
