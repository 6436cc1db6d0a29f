/**
 * The policy-gradient update: gradients against finite differences, learning on a toy task,
 * non-finite steps skipped, exact resume from optimizer state, and no tensor leaks.
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
import { type AgentPolicy } from '../../../src/core/rl/update-steps.ts';
import { ppoLoss } from '../../../src/core/rl/ppo.ts';
import { actionLogProbs, microBatches, type TrainSample } from '../../../src/core/rl/batches.ts';
import { thisThread } from '../../../src/core/compute/local.ts';
import { PARITY } from '../../helpers/fixtures.ts';

let base: LoadedModel;
beforeAll(async () => {
  await initBackend({ force: 'cpu' });
  base = await loadModel(folderSource(path.join(PARITY, 'llama')));
});

function policy(name: string, lr = 1e-2, seed = 0): AgentPolicy {
  const adapter = LoraAdapter.create(base.config, { rank: 4, alpha: 8, targetModules: ['q_proj', 'v_proj', 'up_proj'] }, name, seed);
  return { adapter, optimizer: new AdamW(adapter.variables(), { lr }), trainable: true };
}

describe('policy-gradient update', () => {
  it('micro-batches bound rows x length^2: short samples share one, long ones go fewer at a time', () => {
    const sample = (len: number): TrainSample => ({ agent: 'a', prompt: new Array(len - 10).fill(1), action: new Array(10).fill(2), reward: 0 });
    const short = [600, 500, 700, 650].map(sample);
    expect(microBatches(short, [0, 1, 2, 3], 4)).toEqual([[0, 1, 2, 3]]); // 4 x 700^2 = 1.96M <= 2.1M cells
    const long = [1000, 1000, 1400, 300, 200].map(sample);
    expect(microBatches(long, [0, 1, 2, 3, 4], 4)).toEqual([[0, 1], [2], [3, 4]]); // 2 x 1000^2 = 2M; 1400 goes alone
    expect(microBatches(long, [4, 3], 4)).toEqual([[4, 3]]); // indices and order kept
  });

  it('AdamW: one step from w = 1, g = 0.5, lr 0.1 gives 0.9 (bias-corrected)', () => {
    const w = tf.variable(tf.scalar(1));
    const opt = new AdamW([w], { lr: 0.1 });
    opt.apply([tf.scalar(0.5)]);
    expect(w.dataSync()[0]).toBeCloseTo(0.9, 5);
  });

  it('gradient of the PPO loss w.r.t. the adapter agrees with finite differences', async () => {
    const p = policy('fd', 1e-2, 1);
    // Give B non-zero values so every parameter influences the loss.
    for (const v of p.adapter.variables()) v.assign(tf.randomNormal(v.shape, 0, 0.2, 'float32', 11));
    const batch = {
      ids: [[1, 5, 9, 14, 3], [2, 7, 7, 0, 0]],
      mask: [[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]],
      actionMask: [[0, 0, 1, 1], [0, 1, 0, 0]],
      advantages: [[0, 0, 0.7, -1.2], [0, 0.9, 0, 0]],
      oldLogprobs: [[0, 0, -4.5, -4.4], [0, -4.6, 0, 0]],
      refLogprobs: [[0, 0, 0, 0], [0, 0, 0, 0]],
    };
    const vars = p.adapter.variables();
    const f = () => ppoLoss(base.model, p.adapter, batch, 10 /* no clipping: smooth */, 3);
    const { grads } = tf.variableGrads(f, vars);
    const eps = 1e-2;
    let checked = 0;
    for (const v of [vars[0], vars[1], vars[5]]) {
      const g = grads[v.name].dataSync();
      const values = v.dataSync().slice();
      for (const idx of [0, 7, values.length - 1]) {
        const at = (delta: number) => {
          const copy = values.slice();
          copy[idx] += delta;
          v.assign(tf.tensor(copy, v.shape));
          return f().dataSync()[0];
        };
        const fd = (at(eps) - at(-eps)) / (2 * eps);
        v.assign(tf.tensor(values, v.shape));
        expect(Math.abs(fd - g[idx])).toBeLessThan(2e-3 + 0.02 * Math.abs(fd));
        checked++;
      }
    }
    expect(checked).toBe(9);
    p.adapter.dispose();
  });

  it('learns: reward for small token ids rises clearly above its start in a few dozen updates', async () => {
    const p = policy('learner', 3e-2, 2);
    const policies = new Map([['learner', p]]);
    const prompts = [[1, 10, 12], [1, 40, 3], [1, 77, 5, 6]];
    const rewardOf = (tokens: number[]) => tokens.filter((t) => t < 20).length / tokens.length;
    const meanReward = async (seed: number) => {
      const gens = await generate(base.model, [...prompts, ...prompts], { maxNewTokens: 6, temperature: 1, seed, adapter: p.adapter });
      return gens.reduce((a, g) => a + rewardOf(g.tokens), 0) / gens.length;
    };
    const start = (await meanReward(1000)) + (await meanReward(1001));
    for (let it = 0; it < 30; it++) {
      const gens = await generate(base.model, [...prompts, ...prompts], { maxNewTokens: 6, temperature: 1, seed: it, adapter: p.adapter });
      const samples: TrainSample[] = gens.map((g, i) => ({ agent: 'learner', prompt: [...prompts, ...prompts][i], action: g.tokens, reward: rewardOf(g.tokens) }));
      const m = await policyUpdate(thisThread(base.model), policies, samples, { microBatchSize: 3, klCoef: 0.001 });
      expect(m.agents.learner.skippedSteps).toBe(0);
    }
    const end = (await meanReward(1000)) + (await meanReward(1001));
    expect(end / 2).toBeGreaterThan(start / 2 + 0.25);
    p.adapter.dispose();
  }, 300_000);

  it('a non-finite reward is refused; a non-finite gradient skips the step and keeps the adapter', async () => {
    const p = policy('nan');
    const policies = new Map([['nan', p]]);
    await expect(policyUpdate(thisThread(base.model), policies, [{ agent: 'nan', prompt: [1, 2], action: [3], reward: NaN }])).rejects.toThrow(/non-finite reward/);
    const before = await p.adapter.values();
    // Poison one parameter: the forward pass produces NaN, so loss and gradient are not finite.
    const v = p.adapter.variables()[0];
    const poisoned = v.dataSync().slice();
    poisoned[0] = NaN;
    v.assign(tf.tensor(poisoned, v.shape));
    const m = await policyUpdate(thisThread(base.model), policies, [
      { agent: 'nan', prompt: [1, 2], action: [3, 4], reward: 1 }, { agent: 'nan', prompt: [1, 5], action: [6], reward: 0 }]);
    expect(m.agents.nan.skippedSteps).toBe(1);
    expect(m.agents.nan.skipReasons[0]).toMatch(/non-finite/);
    const after = await p.adapter.values();
    for (const [k, x] of before) if (k !== '0.q_proj') expect(after.get(k)!.b).toEqual(x.b);
    p.adapter.dispose();
  });

  it('truncated actions are masked by default; update.maskTruncated false trains them on their rewards', async () => {
    const cut: TrainSample[] = [
      { agent: 'cut', prompt: [1, 2], action: [3, 4], reward: 1, truncated: true },
      { agent: 'cut', prompt: [1, 5], action: [6, 7], reward: 0, truncated: true },
    ];
    const masked = policy('cut');
    const before = await masked.adapter.values();
    const m1 = await policyUpdate(thisThread(base.model), new Map([['cut', masked]]), cut);
    expect(m1.agents.cut.steps).toBe(0); // nothing to learn from
    for (const [k, x] of await masked.adapter.values()) expect(x.b).toEqual(before.get(k)!.b);
    const trained = policy('cut');
    const m2 = await policyUpdate(thisThread(base.model), new Map([['cut', trained]]), cut, { maskTruncated: false });
    expect(m2.agents.cut.steps).toBe(1);
    const changed = [...(await trained.adapter.values())].some(([k, x]) => x.b.some((v, i) => v !== before.get(k)!.b[i]));
    expect(changed).toBe(true);
    masked.adapter.dispose();
    trained.adapter.dispose();
  });

  it('resume from adapter + optimizer state continues exactly, and nothing leaks over 20 steps', async () => {
    const samples = (k: number): TrainSample[] => [
      { agent: 'a', prompt: [1, 2 + k], action: [3, 4, 5], reward: (k % 3) / 2 },
      { agent: 'a', prompt: [1, 9], action: [8, k + 10], reward: 1 - (k % 2) },
      { agent: 'b', prompt: [4, 4, 4], action: [k + 1], reward: 0.3, tokenRewards: [0.1] },
    ];
    const p1 = new Map([['a', policy('a', 1e-2, 5)], ['b', policy('b', 1e-2, 6)]]);
    for (let k = 0; k < 2; k++) await policyUpdate(thisThread(base.model), p1, samples(k), { microBatchSize: 1 });
    // Snapshot and restore into fresh policies.
    const p2 = new Map<string, AgentPolicy>();
    for (const [name, pol] of p1) {
      const adapter = LoraAdapter.fromValues(base.config, pol.adapter.settings, name + '-resumed', await pol.adapter.values());
      const optimizer = new AdamW(adapter.variables(), pol.optimizer.settings);
      optimizer.setState(await pol.optimizer.getState());
      p2.set(name, { adapter, optimizer, trainable: true });
    }
    const before = tf.memory().numTensors;
    for (let k = 2; k < 22; k++) {
      await policyUpdate(thisThread(base.model), p1, samples(k), { microBatchSize: 2 });
      await policyUpdate(thisThread(base.model), p2, samples(k), { microBatchSize: 2 });
    }
    expect(tf.memory().numTensors).toBe(before);
    for (const name of ['a', 'b']) {
      const x = await p1.get(name)!.adapter.values();
      const y = await p2.get(name)!.adapter.values();
      for (const [k, v] of x) expect(y.get(k)!.b).toEqual(v.b);
    }
    const lp1 = await actionLogProbs(base.model, samples(0), p1.get('a')!.adapter, 2);
    const lp2 = await actionLogProbs(base.model, samples(0), p2.get('a')!.adapter, 2);
    expect(lp2).toEqual(lp1);
  }, 300_000);
});
