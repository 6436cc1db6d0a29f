/**
 * The update with each agent's common prompt prefix run once (update.sharedPrefix) against the update
 * that runs every row whole, on the cpu backend: the plan on a hand-worked example, the same
 * log-probs per row, and one update (per agent, and batched over the team) that leaves every adapter,
 * optimizer moment and metric where the plain per-agent update leaves it, to float tolerance, with no
 * tensor left behind.
 */
import * as tf from '@tensorflow/tfjs-core';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/core/engine/backend.ts';
import { LoraAdapter } from '../../../src/core/engine/lora/adapter.ts';
import { loadModel, type LoadedModel } from '../../../src/core/engine/model/load.ts';
import { rowLogProbs } from '../../../src/core/engine/model/score.ts';
import { planSharedPrefix } from '../../../src/core/engine/model/shared-prefix.ts';
import { folderSource } from '../../../src/core/engine/model/sources.ts';
import { AdamW } from '../../../src/core/rl/adamw.ts';
import { policyUpdate } from '../../../src/core/rl/update.ts';
import { type AgentPolicy } from '../../../src/core/rl/update-steps.ts';
import { type UpdateSettings } from '../../../src/core/rl/update-settings.ts';
import { makeBatch, type TrainSample } from '../../../src/core/rl/batches.ts';
import { thisThread } from '../../../src/core/compute/local.ts';
import { Rng } from '../../../src/core/stats/rng.ts';
import { PARITY } from '../../helpers/fixtures.ts';
import { adapterData, maxRelDiff } from '../../helpers/adapter-diff.ts';

let base: LoadedModel;
beforeAll(async () => {
  await initBackend({ force: 'cpu' });
  base = await loadModel(folderSource(path.join(PARITY, 'llama')));
});

const LORA = { rank: 4, alpha: 8, targetModules: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'up_proj', 'down_proj'] as const };

function adapter(name: string, seed: number): LoraAdapter {
  const a = LoraAdapter.create(base.config, { ...LORA, targetModules: [...LORA.targetModules] }, name, seed);
  a.variables().forEach((v, i) => v.assign(tf.randomNormal(v.shape, 0, 0.2, 'float32', 100 * seed + i)));
  return a;
}

async function team(names: string[]): Promise<Map<string, AgentPolicy>> {
  const out = new Map<string, AgentPolicy>();
  names.forEach((n, k) => {
    const a = adapter(n, k + 1);
    out.set(n, { adapter: a, optimizer: new AdamW(a.variables(), { lr: 1e-2 }), trainable: true });
  });
  return out;
}

/** Each agent's samples start with its own "system prompt" (6-9 tokens), then a prompt and an action of their own. */
function samplesFor(counts: Record<string, number>, seed: number): TrainSample[] {
  const rng = new Rng(`shared-prefix/${seed}`);
  const V = base.config.vocabSize;
  const out: TrainSample[] = [];
  for (const [agent, n] of Object.entries(counts)) {
    const system = Array.from({ length: rng.int(6, 9) }, () => rng.int(1, V - 1));
    for (let i = 0; i < n; i++) {
      const own = Array.from({ length: rng.int(1, 5) }, () => rng.int(1, V - 1));
      const action = Array.from({ length: rng.int(1, 4) }, () => rng.int(1, V - 1));
      out.push({ agent, prompt: [...system, ...own], action, reward: rng.next() });
    }
  }
  return out.map((x) => ({ x, k: rng.next() })).sort((a, b) => a.k - b.k).map((e) => e.x);
}

describe('planSharedPrefix', () => {
  it('shares the longest common prefix of a group, cut before its first asked position (hand-worked)', () => {
    // Rows 0 and 1 share [1, 5, 6, 7]; asked positions: row 0 t = 3 (flat 3), row 1 t = 3 (flat 4 + 3 = 7).
    const ids = [[1, 5, 6, 7, 7, 9], [1, 5, 6, 7, 8, 0]];
    const mask = [[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 0]];
    expect(planSharedPrefix(ids, mask, [3, 4, 8], [0, 0], 2)).toEqual({ group: [0, 0], prefix: [3], first: [0] });
    // Two groups, labelled 7 and 2: each its own prefix.
    const two = planSharedPrefix([[4, 4, 4, 1, 2], [3, 3, 9, 9, 9], [4, 4, 4, 2, 1]], undefined, [3, 7, 11], [7, 2, 7], 2);
    expect(two).toEqual({ group: [0, 1, 0], prefix: [3, 3], first: [0, 1] });
    // Too short a prefix: none.
    expect(planSharedPrefix(ids, mask, [1], [0, 0], 2)).toBeNull();
  });
});

describe('the shared-prefix passes equal the whole-row passes', () => {
  it('gives every asked position the same log-prob', () => {
    const a = adapter('a', 1);
    const samples = samplesFor({ a: 6 }, 2);
    const b = makeBatch(samples);
    const rows: number[] = [];
    b.actionMask.forEach((row, r) => row.forEach((m, t) => m && rows.push(r * row.length + t)));
    const plain = rowLogProbs(base.model, b.ids, rows, { attentionMask: b.mask, adapter: a }).logp.arraySync();
    expect(planSharedPrefix(b.ids, b.mask, rows, b.ids.map(() => 0))).not.toBeNull(); // the test does share
    const shared = rowLogProbs(base.model, b.ids, rows, { attentionMask: b.mask, adapter: a, prefixGroups: b.ids.map(() => 0) }).logp.arraySync();
    shared.forEach((v, i) => expect(Math.abs(v - plain[i])).toBeLessThan(1e-5));
    a.dispose();
  });

  it.each<[string, Partial<UpdateSettings>]>([
    ['per agent', { microBatchSize: 4 }],
    ['batched over the team', { microBatchSize: 8, batched: true }],
  ])('one update, %s, leaves the adapters where the plain per-agent update does', async (_name, settings) => {
    const names = ['solver', 'coder', 'checker'];
    const samples = samplesFor({ solver: 5, coder: 3, checker: 7 }, 1);
    const plain = await team(names);
    const shared = await team(names);
    const initial = await adapterData(shared);
    const compute = thisThread(base.model);
    const a = await policyUpdate(compute, plain, samples, { microBatchSize: 4 });
    const before = tf.memory().numTensors;
    const b = await policyUpdate(compute, shared, samples, { ...settings, sharedPrefix: true });
    expect(tf.memory().numTensors).toBe(before); // nothing left behind
    expect(maxRelDiff(initial, await adapterData(shared))).toBeGreaterThan(1e-2); // it did move the adapters
    expect(maxRelDiff(await adapterData(plain), await adapterData(shared))).toBeLessThan(1e-4);
    for (const [name, p] of plain) {
      const [sa, sb] = [await p.optimizer.getState(), await shared.get(name)!.optimizer.getState()];
      expect(maxRelDiff(sa.m, sb.m)).toBeLessThan(1e-4);
      expect(maxRelDiff(sa.v, sb.v)).toBeLessThan(1e-4);
    }
    expect(b.kl).toBeCloseTo(a.kl, 5);
    b.sampleAdvantages.forEach((v, i) => expect(v).toBeCloseTo(a.sampleAdvantages[i], 4));
    for (const name of names) {
      for (const k of ['loss', 'kl', 'entropy', 'clipFraction', 'gradNorm'] as const) expect(b.agents[name][k]).toBeCloseTo(a.agents[name][k], 4);
    }
    for (const p of [...plain.values(), ...shared.values()]) {
      p.adapter.dispose();
      p.optimizer.dispose();
    }
  });
});
