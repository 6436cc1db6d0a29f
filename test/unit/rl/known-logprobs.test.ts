/**
 * Log-probs the update need not compute (rl/update-steps.ts `knownLogProbs`, `RefMemory`), against the passes they replace, on the
 * cpu backend: the rollout's own log-probs at temperature 1 (real `generate` on the parity fixture,
 * each agent through its adapter) leave the adapters where the update's own sampling pass leaves them,
 * and the reference's remembered log-probs give a second update exactly what a fresh one computes;
 * each with the pass's rows counted, per agent and batched. The memory's bound and the config's
 * refusal at another temperature, hand-worked.
 */
import * as tf from '@tensorflow/tfjs-core';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/core/engine/backend.ts';
import { LoraAdapter } from '../../../src/core/engine/lora/adapter.ts';
import { generate } from '../../../src/core/engine/model/generate.ts';
import { loadModel, type LoadedModel } from '../../../src/core/engine/model/load.ts';
import { folderSource } from '../../../src/core/engine/model/sources.ts';
import { AdamW } from '../../../src/core/rl/adamw.ts';
import { policyUpdate } from '../../../src/core/rl/update.ts';
import { knownLogProbs, RefMemory, type AgentPolicy, type Gradients } from '../../../src/core/rl/update-steps.ts';
import { type UpdateSettings } from '../../../src/core/rl/update-settings.ts';
import { type TrainSample } from '../../../src/core/rl/batches.ts';
import { thisThread } from '../../../src/core/compute/local.ts';
import { resolveTrainConfig } from '../../../src/core/domains/index.ts';
import { relayWorkflow } from '../../../src/core/domains/relay/team.ts';
import { Rng } from '../../../src/core/stats/rng.ts';
import { PARITY } from '../../helpers/fixtures.ts';
import { adapterData, maxRelDiff } from '../../helpers/adapter-diff.ts';

let base: LoadedModel;
beforeAll(async () => {
  await initBackend({ force: 'cpu' });
  base = await loadModel(folderSource(path.join(PARITY, 'llama')));
});

const LORA = { rank: 4, alpha: 8, targetModules: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'up_proj', 'down_proj'] as const };

function team(names: string[]): Map<string, AgentPolicy> {
  const out = new Map<string, AgentPolicy>();
  names.forEach((n, k) => {
    const a = LoraAdapter.create(base.config, { ...LORA, targetModules: [...LORA.targetModules] }, n, k + 1);
    a.variables().forEach((v, i) => v.assign(tf.randomNormal(v.shape, 0, 0.2, 'float32', 100 * (k + 1) + i)));
    out.set(n, { adapter: a, optimizer: new AdamW(a.variables(), { lr: 1e-2 }), trainable: true });
  });
  return out;
}

/** Each agent's replies sampled at temperature 1 through its own adapter, as a rollout makes them, with the sampler's log-probs. */
async function sampled(policies: Map<string, AgentPolicy>, perAgent: number): Promise<TrainSample[]> {
  const rng = new Rng('known-logprobs');
  const V = base.config.vocabSize;
  const out: TrainSample[] = [];
  for (const [agent, p] of policies) {
    const system = Array.from({ length: 6 }, () => rng.int(1, V - 1));
    const prompts = Array.from({ length: perAgent }, () => [...system, ...Array.from({ length: rng.int(1, 4) }, () => rng.int(1, V - 1))]);
    const gens = await generate(base.model, prompts, { maxNewTokens: 3, temperature: 1, seed: out.length, adapter: p.adapter });
    gens.forEach((g, i) => out.push({ agent, prompt: prompts[i], action: g.tokens, reward: rng.next(), sampledLogprobs: g.logprobs }));
  }
  return out;
}

/** The compute, counting the rows its log-prob passes run with an adapter (the sampling policy's) and without (the reference's). */
function counted(): Gradients & { rows: { own: number; ref: number } } {
  const inner = thisThread(base.model);
  const rows = { own: 0, ref: 0 };
  return {
    rows,
    logProbs: (jobs) => {
      for (const j of jobs) rows[j.adapter ? 'own' : 'ref'] += j.ids.length;
      return inner.logProbs(jobs);
    },
    gradients: (a, jobs) => inner.gradients(a, jobs),
    batchedLogProbs: (jobs) => {
      for (const j of jobs) rows.own += j.ids.length;
      return inner.batchedLogProbs!(jobs);
    },
    batchedGradients: (jobs) => inner.batchedGradients!(jobs),
  };
}

function dispose(...teams: Map<string, AgentPolicy>[]): void {
  for (const t of teams) for (const p of t.values()) {
    p.adapter.dispose();
    p.optimizer.dispose();
  }
}

/** The two updates: one pass per agent, and one pass over the whole team. */
const SHAPES: [string, Partial<UpdateSettings>][] = [
  ['per agent', { microBatchSize: 4 }],
  ['batched over the team', { microBatchSize: 8, batched: true }],
];

describe('log-probs the update already knows', () => {
  it.each(SHAPES)('the rollout\'s log-probs at T = 1 leave the adapters where the sampling pass does, with no sampling pass (%s)', async (_name, settings) => {
    const names = ['a', 'b'];
    const own = team(names);
    const reused = team(names);
    const samples = await sampled(own, 5);
    const plain = counted();
    const fast = counted();
    const m1 = await policyUpdate(plain, own, samples, settings);
    const before = tf.memory().numTensors;
    const m2 = await policyUpdate(fast, reused, samples, { ...settings, reuseRolloutLogprobs: true });
    expect(tf.memory().numTensors).toBe(before);
    expect(plain.rows.own).toBe(10);
    expect(fast.rows.own).toBe(0);
    expect(fast.rows.ref).toBe(10);
    expect(maxRelDiff(await adapterData(own), await adapterData(reused))).toBeLessThan(1e-4);
    expect(m2.kl).toBeCloseTo(m1.kl, 5);
    for (const n of names) expect(m2.agents[n].clipFraction).toBe(m1.agents[n].clipFraction);
    dispose(own, reused);
  }, 120_000);

  it.each(SHAPES)('the reference\'s remembered log-probs give a later update what a fresh pass gives, without the pass (%s)', async (_name, settings) => {
    const names = ['a', 'b'];
    const p1 = team(names);
    const p2 = team(names);
    const samples = await sampled(p1, 4);
    const memory = new RefMemory();
    await policyUpdate(counted(), p1, samples, settings, memory);
    await policyUpdate(counted(), p2, samples, settings);
    expect(memory.size).toBe(new Set(samples.map((s) => `${s.prompt}|${s.action}`)).size);
    // The second update: the remembered reference against a fresh one, from the same adapters.
    const remembered = counted();
    const fresh = counted();
    const a = await policyUpdate(remembered, p1, samples, settings, memory);
    const b = await policyUpdate(fresh, p2, samples, settings);
    expect(remembered.rows.ref).toBe(0);
    expect(fresh.rows.ref).toBe(8);
    expect(a.kl).toBeCloseTo(b.kl, 5);
    expect(maxRelDiff(await adapterData(p1), await adapterData(p2))).toBeLessThan(1e-4);
    dispose(p1, p2);
  }, 120_000);

  it('knows only what it may: a sampled log-prob per action token, asked for; the memory forgets its oldest past its bound', () => {
    const s = (prompt: number[], action: number[], lp?: number[]): TrainSample => ({ agent: 'a', prompt, action, reward: 1, ...(lp ? { sampledLogprobs: lp } : {}) });
    const xs = [s([1, 2], [3], [-0.5]), s([1, 2], [3, 4], [-0.5]), s([1], [2])];
    expect(knownLogProbs(xs, { reuseSampled: true }).old).toEqual([[-0.5], undefined, undefined]); // a length that does not match is not used
    expect(knownLogProbs(xs, {}).old).toEqual([undefined, undefined, undefined]);
    // Keys "1,2|3" (5 characters) and "1|2" (3): a bound of 8 holds both, a third key pushes the oldest out.
    const memory = new RefMemory(8);
    memory.keep(xs[0], [-1]);
    memory.keep(xs[2], [-2]);
    expect(knownLogProbs(xs, { memory }).ref).toEqual([[-1], undefined, [-2]]);
    memory.keep(s([9], [9]), [-3]);
    expect(memory.size).toBe(2);
    expect(memory.get(xs[0])).toBeUndefined();
    expect(memory.get(xs[2])).toEqual([-2]);
    expect([memory.hits, memory.lookups]).toEqual([3, 5]);
  });

  it('is refused at any rollout temperature but 1, by name', () => {
    expect(resolveTrainConfig({ workflow: relayWorkflow(2), update: { reuseRolloutLogprobs: true } }).update.reuseRolloutLogprobs).toBe(true);
    expect(() => resolveTrainConfig({ workflow: relayWorkflow(2), temperature: 0.7, update: { reuseRolloutLogprobs: true } }))
      .toThrow(/update\.reuseRolloutLogprobs .*needs temperature 1, got temperature 0\.7/);
  });
});
