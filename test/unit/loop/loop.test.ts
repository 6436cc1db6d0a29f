/**
 * The MAPPA loop end to end on a tiny random team: rollouts through the real chain (code really
 * runs in the Python sandbox), coach, rewards, per-agent updates, evaluation, checkpoints — and a
 * resumed run equals an uninterrupted one.
 */
import { evaluateTeam } from '../../../src/core/loop/eval-queue.ts';
import * as tf from '@tensorflow/tfjs-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/core/engine/backend.ts';
import type { LoadedModel } from '../../../src/core/engine/model/load.ts';
import { ConfigFileError } from '../../../src/core/loop/config-fields.ts';
import { resolveTrainConfig, teamOf } from '../../../src/core/domains/index.ts';
import type { Trajectory } from '../../../src/core/loop/trajectory.ts';
import { Trainer, sharesOf } from '../../../src/core/loop/train.ts';
import type { IterationMetrics } from '../../../src/core/loop/records.ts';
import { disposeTools, type ToolRunners } from '../../../src/core/tools/runners.ts';
import { createSandbox } from '../../../src/core/tools/code-sandbox.ts';
import { tinyTeamModel } from '../../helpers/tiny-team.ts';
import { MemoryStore, stable, testCoach } from '../../helpers/loop.ts';
import { LocalCompute } from '../../../src/core/compute/local.ts';

describe('the MAPPA loop', () => {
  let model: LoadedModel;
  let tools: ToolRunners;
  const config = resolveTrainConfig({
    iterations: 3, promptsPerIteration: 2, samplesPerPrompt: 2, evalEvery: 2, evalTasks: 2, checkpointEvery: 1,
    lora: { rank: 2, targetModules: ['q_proj', 'v_proj'] }, update: { microBatchSize: 4 }, curriculum: { startLevel: 1 },
    coach: { kind: 'rule' },
    workflow: {
      name: 'math-chain-short', domain: 'math',
      agents: [
        { id: 'solver', role: 'Problem Solver', system: 'Solver {{position}}/{{count}}', user: 'Problem: {{problem}}', maxTokens: 6, turns: 1, tools: [], trainable: true },
        { id: 'executor', role: 'Code Executor', system: 'Executor', user: '{{problem}}\n{{output:solver}}', followUp: 'Output: {{observation}}', maxTokens: 6, turns: 2, tools: ['python'], trainable: true },
        { id: 'verifier', role: 'Verifier', system: 'Verifier', user: '{{output:executor}}\n{{tool:executor}}', maxTokens: 6, turns: 1, tools: [], trainable: false, final: true },
      ],
    },
  });

  beforeAll(async () => {
    await initBackend({ force: 'cpu' });
    model = await tinyTeamModel(1);
    const sandbox = createSandbox();
    tools = { python: sandbox, javascript: sandbox };
  });
  /** What a run of `agentModel` trains with, on this thread. */
  const run = (agentModel: LoadedModel) => {
    const team = teamOf(config.workflow);
    return { team, agentModel, coach: testCoach(), tools, compute: LocalCompute.forTeam({ team, agentModel, tools }) };
  };
  afterAll(async () => {
    model.model.dispose();
    await disposeTools(tools);
  });

  it('leaves samples longer than the model\'s context out of the update, and counts them', async () => {
    // A context of 1 position: every action (prompt + tokens) is longer, so nothing is trained.
    const short = { ...model, config: { ...model.config, maxPositionEmbeddings: 1 } } as LoadedModel;
    const trainer = await Trainer.create({ ...config, iterations: 1, evalEvery: 5 }, run(short));
    const m = await trainer.step();
    expect(m.perAgent.solver.samples).toBe(0);
    // The same seed with the real context: same rollouts, every sample of the trainable agents kept.
    const full = await (await Trainer.create({ ...config, iterations: 1, evalEvery: 5 }, run(model))).step();
    expect(full.filters.droppedOverContext).toBe(0);
    expect(full.perAgent.solver.samples).toBe(4);
    expect(m.filters.droppedOverContext).toBe(full.perAgent.solver.samples + full.perAgent.executor.samples);
  });

  it('runs iterations end to end and reports every metric; frozen agents stay frozen', async () => {
    const store = new MemoryStore();
    const trainer = await Trainer.create(config, run(model), { store });
    const events: string[] = [];
    let shown: Trajectory[] = [];
    trainer.on((e) => {
      events.push(e.type);
      if (e.type === 'trajectories') shown = e.trajectories;
    });
    const frozenBefore = await trainer.policies.get('verifier')!.adapter.values();
    const m = await trainer.step();
    expect(m.trajectories).toBe(4);
    expect(Object.keys(m.perAgent)).toEqual(['solver', 'executor', 'verifier']);
    expect(m.perAgent.solver.samples).toBe(4);
    expect(m.perAgent.verifier.samples).toBe(0); // frozen: takes part, never trained
    expect(m.perAgent.verifier.meanScore).toBeGreaterThanOrEqual(0);
    expect(m.coach.calls).toBeGreaterThan(0);
    expect(m.filters.level).toBe(1);
    expect(events).toContain('trajectories');
    expect(events).toContain('iteration');
    expect(events).toContain('checkpoint');
    // Every trained action carries the advantage it was trained on (mean over its tokens); the frozen
    // verifier's carry none. Batch whitening over every action token: the token-weighted mean is 0.
    const acts = shown.flatMap((t) => t.actions);
    const trained = acts.filter((a) => a.agentId !== 'verifier' && a.tokens.length > 0 && !a.truncated);
    expect(acts.filter((a) => a.agentId === 'verifier').every((a) => a.advantage === undefined)).toBe(true);
    expect(acts.filter((a) => a.agentId !== 'verifier' && a.tokens.length > 0).every((a) => Number.isFinite(a.advantage))).toBe(true);
    // Truncated actions are masked (advantage 0); the rest are whitened together: token-weighted mean 0.
    expect(acts.filter((a) => a.agentId !== 'verifier' && a.truncated).every((a) => a.advantage === 0)).toBe(true);
    if (trained.length) {
      const weighted = trained.reduce((s, a) => s + a.advantage! * a.tokens.length, 0) / trained.reduce((s, a) => s + a.tokens.length, 0);
      expect(Math.abs(weighted)).toBeLessThan(1e-6);
    }
    const after = await trainer.policies.get('verifier')!.adapter.values();
    for (const [k, v] of frozenBefore) expect(after.get(k)!.a).toEqual(v.a);
    // Iteration 2 is due an evaluation; the trainer asks whoever evaluates (here a whole-set chunk, as mappa train does).
    const evaluate = async () => (await evaluateTeam(config, teamOf(config.workflow), trainer.compute, { adapters: trainer.adapterValues() })).result;
    const m2 = await trainer.step({ evaluate });
    expect(m2.eval).toBeDefined();
    expect(m2.eval!.tasks).toBe(2);
    expect(store.records.length).toBe(2);
    trainer.dispose();
  }, 300_000);

  // With the per-state baseline too: its baselines travel in the checkpoint (state.json "baselines").
  it.each(['batch', 'state'] as const)('resume after a kill continues exactly as an uninterrupted run (%s whitening)', async (whitening) => {
    // Two iterations (the second with an evaluation) are enough to resume across; the CLI's kill -9 test
    // (test/unit/cli/run-safety.test.ts) covers whole runs.
    const two = { ...config, iterations: 2, update: { ...config.update, whitening } };
    const full = await Trainer.create(two, run(model), { store: new MemoryStore() });
    const uninterrupted = await runAll(full);
    full.dispose();

    const store = new MemoryStore();
    const first = await Trainer.create(two, run(model), { store });
    await first.step(); // checkpointEvery 1: saved after iteration 1
    first.dispose(); // "killed"
    const saved = JSON.parse(new TextDecoder().decode(store.files!['state.json'])) as { baselines?: unknown[] };
    expect((saved.baselines?.length ?? 0) > 0).toBe(whitening === 'state'); // the trained agents' inputs of iteration 1
    const resumed = await Trainer.create(two, run(model), { store, resume: true });
    expect(resumed.iteration).toBe(1);
    const rest = await runAll(resumed);
    expect(rest.map(stable)).toEqual(uninterrupted.map(stable));
    resumed.dispose();
  }, 300_000);

  it('leaks no tensors across an iteration', async () => {
    const trainer = await Trainer.create(config, run(model));
    await trainer.step();
    const before = tf.memory().numTensors;
    await trainer.step();
    expect(tf.memory().numTensors).toBe(before);
    trainer.dispose();
  }, 300_000);

  it('refuses bad configs by name', () => {
    expect(() => resolveTrainConfig({ lerning_rate: 1 })).toThrow(ConfigFileError);
    expect(() => resolveTrainConfig({ lerning_rate: 1 })).toThrow(/lerning_rate: unknown key/);
    expect(() => resolveTrainConfig({ rewards: { mode: 'vibes' } })).toThrow(/rewards\.mode \(reward\): must be one of process, outcome, mixed, counterfactual, groups, got "vibes"/);
    expect(() => resolveTrainConfig({ rewards: { mode: 'counterfactual', fanOut: [2, 0] } })).toThrow(/rewards\.fanOut \(replies per agent\): must be a list of at most 3 whole numbers in 1\.\.16/);
    expect(() => resolveTrainConfig({ iterations: '3' })).toThrow(/iterations: expected a number/);
    expect(() => resolveTrainConfig({ seed: Number('abc') })).toThrow(/seed: expected a finite number, got NaN/);
    expect(() => resolveTrainConfig({ update: { klCoef: -1 } })).toThrow(/update\.klCoef \(KL coefficient\): must be a number in 0\.\.100, got -1/);
    expect(() => resolveTrainConfig({ update: { clipEps: 0.1, foo: 1 } })).toThrow(/update.foo: unknown key/);
    expect(() => resolveTrainConfig({ workflow: { name: 'x', domain: 'math', agents: [] } })).toThrow(/"agents" must be a list of at least one agent/);
  });
});

/** Every iteration left, one step at a time (the session adds evaluations and pauses around this). */
async function runAll(t: Trainer): Promise<IterationMetrics[]> {
  while (t.iteration < t.config.iterations) await t.step();
  return t.metrics;
}

describe('sharesOf (the rollout passes)', () => {
  it('cuts the prompts into contiguous shares as equal as can be, in order, none empty', () => {
    expect(sharesOf(['a', 'b', 'c', 'd', 'e'], 2)).toEqual([['a', 'b', 'c'], ['d', 'e']]);
    expect(sharesOf(['a', 'b', 'c', 'd'], 3)).toEqual([['a', 'b'], ['c'], ['d']]);
    expect(sharesOf(['a'], 2)).toEqual([['a']]);
    expect(sharesOf([], 2)).toEqual([[]]);
    expect(sharesOf(['a', 'b'], 1)).toEqual([['a', 'b']]);
  });
});
