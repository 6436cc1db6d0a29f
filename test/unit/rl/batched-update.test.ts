/**
 * The batched update against the per-agent one on the cpu backend: a team pass (each row through its
 * own agent's adapter) gives each row the logits of its agent's own pass, and one batched update
 * leaves every adapter, optimizer moment and metric where the per-agent update leaves it, to float
 * tolerance, with mini-batches, epochs, a frozen agent and a truncated action in play; no tensor leaks.
 */
import * as tf from '@tensorflow/tfjs-core';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/core/engine/backend.ts';
import { LoraAdapter } from '../../../src/core/engine/lora/adapter.ts';
import { BatchedAdapter } from '../../../src/core/engine/lora/batched-adapter.ts';
import { loadModel, type LoadedModel } from '../../../src/core/engine/model/load.ts';
import { folderSource } from '../../../src/core/engine/model/sources.ts';
import { AdamW } from '../../../src/core/rl/adamw.ts';
import { policyUpdate } from '../../../src/core/rl/update.ts';
import { type AgentPolicy } from '../../../src/core/rl/update-steps.ts';
import { type UpdateSettings } from '../../../src/core/rl/update-settings.ts';
import { type TrainSample } from '../../../src/core/rl/batches.ts';
import { thisThread } from '../../../src/core/compute/local.ts';
import { Rng } from '../../../src/core/stats/rng.ts';
import { PARITY } from '../../helpers/fixtures.ts';
import { adapterData, maxRelDiff } from '../../helpers/adapter-diff.ts';

let base: LoadedModel;
const FORM = BatchedAdapter.form;
beforeAll(async () => {
  await initBackend({ force: 'cpu' });
  base = await loadModel(folderSource(path.join(PARITY, 'llama')));
});

const LORA = { rank: 4, alpha: 8, targetModules: ['q_proj', 'v_proj', 'up_proj'] as const };

/** An adapter with B non-zero (so every agent's policy differs from the reference and from each other). */
function adapter(name: string, seed: number): LoraAdapter {
  const a = LoraAdapter.create(base.config, { ...LORA, targetModules: [...LORA.targetModules] }, name, seed);
  a.variables().forEach((v, i) => v.assign(tf.randomNormal(v.shape, 0, 0.2, 'float32', 100 * seed + i)));
  return a;
}

async function team(names: string[], frozen: string[] = []): Promise<Map<string, AgentPolicy>> {
  const out = new Map<string, AgentPolicy>();
  names.forEach((n, k) => {
    const a = adapter(n, k + 1);
    out.set(n, { adapter: a, optimizer: new AdamW(a.variables(), { lr: 1e-2 }), trainable: !frozen.includes(n) });
  });
  return out;
}

function samplesFor(counts: Record<string, number>, seed: number): TrainSample[] {
  const rng = new Rng(`team-update/${seed}`);
  const out: TrainSample[] = [];
  const V = base.config.vocabSize;
  for (const [agent, n] of Object.entries(counts)) {
    for (let i = 0; i < n; i++) {
      const prompt = Array.from({ length: rng.int(3, 9) }, () => rng.int(1, V - 1));
      const action = Array.from({ length: rng.int(1, 4) }, () => rng.int(1, V - 1));
      out.push({ agent, prompt, action, reward: rng.next() });
    }
  }
  // Interleave agents, as the trainer's samples come (trajectory after trajectory).
  return out.map((x, i) => ({ x, k: rng.next() + i * 0 })).sort((a, b) => a.k - b.k).map((e) => e.x);
}

describe('a team pass: every row through its own adapter', () => {
  it.each(['gather', 'masked'] as const)("gives each row its own agent's logits (%s)", (form) => {
    BatchedAdapter.form = form;
    const adapters = [adapter('a', 1), adapter('b', 2), adapter('c', 3)];
    const ids = [[1, 5, 9, 14, 3], [2, 7, 7, 4, 8], [6, 6, 1, 2, 9], [3, 1, 4, 1, 5]];
    const rowAdapter = [2, 0, 2, 1];
    const view = BatchedAdapter.over(adapters, rowAdapter);
    expect(view.usedIndex).toEqual([2, 0, 1]);
    const together = base.model.forward(ids, { adapter: view }).logits.arraySync();
    rowAdapter.forEach((k, r) => {
      const alone = base.model.forward([ids[r]], { adapter: adapters[k] }).logits.arraySync()[0];
      alone.forEach((row, t) => row.forEach((v, j) => expect(Math.abs(v - together[r][t][j])).toBeLessThan(1e-4)));
    });
    view.dispose();
    adapters.forEach((a) => a.dispose());
    BatchedAdapter.form = FORM;
  });

  it('refuses a team whose adapters differ in shape, and decoding through a team view', () => {
    const a = adapter('a', 1);
    const b = LoraAdapter.create(base.config, { rank: 2, alpha: 8, targetModules: ['q_proj'] }, 'b', 2);
    expect(() => BatchedAdapter.over([a, b], [0, 1])).toThrow(/one LoRA shape for every agent: "b" differs from "a"/);
    expect(() => BatchedAdapter.over([a], [0]).lora(0, 'q_proj')).toThrow(/decode each agent with its own adapter/);
    a.dispose();
    b.dispose();
  });
});

describe('the batched update equals the per-agent update', () => {
  afterAll(() => (BatchedAdapter.form = FORM));
  it.each<[string, Partial<UpdateSettings>, 'gather' | 'masked']>([
    ['one mini-batch, one epoch (masked pairs)', { microBatchSize: 3 }, 'masked'],
    ['one mini-batch, one epoch (gathered pairs)', { microBatchSize: 3 }, 'gather'],
    ['2 mini-batches, 2 epochs, per-agent whitening', { microBatchSize: 4, miniBatches: 2, epochs: 2, whitening: 'agent' as const }, 'masked'],
  ])('%s', async (_name, settings, form) => {
    BatchedAdapter.form = form;
    const names = ['solver', 'coder', 'checker', 'frozen'];
    const counts = { solver: 5, coder: 3, checker: 7, frozen: 2 };
    const samples = samplesFor(counts, 1);
    samples.find((x) => x.agent === 'coder')!.truncated = true; // masked out of the loss in both paths
    const perAgent = await team(names, ['frozen']);
    const batched = await team(names, ['frozen']);
    const initial = await adapterData(batched);
    expect(maxRelDiff(await adapterData(perAgent), initial)).toBe(0);
    const compute = thisThread(base.model);
    const before = tf.memory().numTensors;
    const a = await policyUpdate(compute, perAgent, samples, settings);
    const afterPerAgent = tf.memory().numTensors;
    const b = await policyUpdate(compute, batched, samples, { ...settings, batched: true });
    expect(tf.memory().numTensors).toBe(afterPerAgent); // the batched update leaves nothing behind
    expect(afterPerAgent).toBeGreaterThanOrEqual(before);

    expect(maxRelDiff(initial, await adapterData(batched))).toBeGreaterThan(1e-2); // it did move the adapters
    expect(maxRelDiff(await adapterData(perAgent), await adapterData(batched))).toBeLessThan(1e-4);
    for (const [name, p] of perAgent) {
      const q = batched.get(name)!;
      // The optimizer's moments too: the next step starts from the same state.
      const [sa, sb] = [await p.optimizer.getState(), await q.optimizer.getState()];
      expect(sb.step).toBe(sa.step);
      expect(maxRelDiff(sa.m, sb.m)).toBeLessThan(1e-4);
      expect(maxRelDiff(sa.v, sb.v)).toBeLessThan(1e-4);
    }
    expect(b.kl).toBeCloseTo(a.kl, 5);
    b.sampleAdvantages.forEach((v, i) => expect(v).toBeCloseTo(a.sampleAdvantages[i], 4));
    for (const name of names) {
      const x = a.agents[name];
      const y = b.agents[name];
      expect(y.steps).toBe(x.steps);
      expect(y.tokens).toBe(x.tokens);
      expect(y.samples).toBe(x.samples);
      for (const k of ['loss', 'kl', 'entropy', 'clipFraction', 'gradNorm', 'meanReward'] as const) expect(y[k]).toBeCloseTo(x[k], 4);
    }
    expect(a.agents.frozen.steps).toBe(0);
    expect(a.agents.solver.steps).toBe((settings.miniBatches ?? 1) * (settings.epochs ?? 1));
    for (const p of [...perAgent.values(), ...batched.values()]) {
      p.adapter.dispose();
      p.optimizer.dispose();
    }
  });
});
