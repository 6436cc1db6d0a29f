/**
 * The counterfactual credit method's rollout shape: a tree of replays. Before each agent's turn every
 * trajectory so far is forked (its fan-out), so siblings continue the same frozen prefix: the same
 * action objects upstream (same tokens), the same prompt for the next agent (one cache row in the
 * shared prefill: planPrefill maps them to one distinct prompt), and workspaces that no longer see
 * each other's writes. Then one iteration trains on it, counting its generations once per node.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/core/engine/backend.ts';
import type { LoadedModel } from '../../../src/core/engine/model/load.ts';
import { planPrefill } from '../../../src/core/engine/model/prefill.ts';
import { EngineAgents } from '../../../src/core/loop/agents.ts';
import { runRollouts } from '../../../src/core/loop/rollout.ts';
import { Trainer } from '../../../src/core/loop/train.ts';
import { LocalCompute } from '../../../src/core/compute/local.ts';
import { relayConfig, relayRuleCoach, relayWorkflow } from '../../../src/core/domains/relay/team.ts';
import { relayTasks } from '../../../src/core/domains/relay/tasks.ts';
import { teamOf, resolveTrainConfig } from '../../../src/core/domains/index.ts';
import { treeCost } from '../../../src/core/rl/counterfactual.ts';
import { Workspace } from '../../../src/core/tools/workspace.ts';
import { tinyTeamModel } from '../../helpers/tiny-team.ts';

describe('tree-shaped rollouts (counterfactual replays)', () => {
  let model: LoadedModel;
  beforeAll(async () => {
    await initBackend({ force: 'cpu' });
    model = await tinyTeamModel(4);
  });
  afterAll(() => model.model.dispose());

  it('siblings share their frozen prefix exactly: the same actions, the same next prompt, one prefill row', async () => {
    const w = relayWorkflow(3);
    const tasks = relayTasks(3, 'tree', 2);
    const trajs = await runRollouts(w, tasks, {
      agents: new EngineAgents(model, new Map()), tools: {}, samplesPerTask: 1, fanOut: [2, 2, 1], temperature: 1, seed: 5,
      outcome: teamOf(w).outcome,
    });
    expect(trajs).toHaveLength(2 * 4); // 2 tasks x 2 x 2 leaves
    expect(trajs.map((t) => t.branch)).toEqual([[0, 0, 0], [0, 1, 0], [1, 0, 0], [1, 1, 0], [0, 0, 0], [0, 1, 0], [1, 0, 0], [1, 1, 0]]);
    const [a, b, c] = trajs; // task 0: leaves [0,0], [0,1], [1,0]
    expect(a.actions[0]).toBe(b.actions[0]); // the same object: same tokens, same log-probs
    expect(a.actions[0]).not.toBe(c.actions[0]); // another reply of agent 1
    // Agent 2's siblings read the same frozen input: the same prompt tokens, run once by the prefill.
    expect(a.actions[1].promptTokens).toEqual(b.actions[1].promptTokens);
    const plan = planPrefill([a.actions[1].promptTokens, b.actions[1].promptTokens, c.actions[1].promptTokens]);
    expect(plan.order[0]).toBe(plan.order[1]);
    expect(plan.distinct.length).toBeLessThanOrEqual(2);
    expect(new Set(trajs.flatMap((t) => t.actions)).size).toBe(2 * treeCost([2, 2, 1]).generations);
  }, 300_000);

  it('a forked workspace does not see its sibling\'s writes', () => {
    const w = new Workspace();
    w.write('a.csv', '1', 'task');
    const left = w.clone();
    const right = w.clone();
    left.write('b.csv', 'left', 'agent1');
    expect(right.has('b.csv')).toBe(false);
    expect(w.has('b.csv')).toBe(false);
    expect(right.readText('a.csv')).toBe('1');
  });

  it('one counterfactual iteration trains on the tree, each distinct action once, counting its generations', async () => {
    const config = resolveTrainConfig({
      ...relayConfig(3), agentModel: 'tiny', iterations: 1, promptsPerIteration: 2, samplesPerPrompt: 1, rolloutPasses: 1,
      rewards: { mode: 'counterfactual', fanOut: [2, 2, 1] }, lora: { rank: 2, targetModules: ['q_proj', 'v_proj'] },
    });
    const tools = {};
    const team = teamOf(config.workflow);
    const trainer = await Trainer.create(config, { team, agentModel: model, coach: relayRuleCoach(), tools, compute: LocalCompute.forTeam({ team, agentModel: model, tools }) });
    const m = await trainer.step();
    expect(m.trajectories).toBe(8);
    expect(m.generations).toBe(2 * treeCost([2, 2, 1]).generations); // 2 prompts x (2 + 4 + 4)
    expect(m.perAgent.agent1.samples + m.perAgent.agent2.samples + m.perAgent.agent3.samples).toBeLessThanOrEqual(m.generations!);
    expect(m.perAgent.agent1.samples).toBeLessThanOrEqual(4); // 2 per prompt, not one per leaf
    trainer.dispose();
  }, 300_000);
});
