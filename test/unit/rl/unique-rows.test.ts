/**
 * Repeated rows run once (score.ts `uniqueRows`, what the per-agent PPO pass asks for): the plan on a
 * hand-worked example, and on a batch where samples repeat (same prompt and action, other advantages)
 * the same log-probs, entropies and adapter gradients as every row run whole (the independent
 * reference: the plain pass), with and without the shared prefix, on the cpu backend.
 */
import * as tf from '@tensorflow/tfjs-core';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/core/engine/backend.ts';
import { LoraAdapter } from '../../../src/core/engine/lora/adapter.ts';
import { loadModel, type LoadedModel } from '../../../src/core/engine/model/load.ts';
import { distinctRows, rowLogProbs } from '../../../src/core/engine/model/score.ts';
import { folderSource } from '../../../src/core/engine/model/sources.ts';
import { makeBatch, type TrainSample } from '../../../src/core/rl/batches.ts';
import { Rng } from '../../../src/core/stats/rng.ts';
import { PARITY } from '../../helpers/fixtures.ts';

let base: LoadedModel;
beforeAll(async () => {
  await initBackend({ force: 'cpu' });
  base = await loadModel(folderSource(path.join(PARITY, 'llama')));
});

describe('distinctRows', () => {
  it('keeps each row once and maps the asked positions onto the kept rows (the docstring example)', () => {
    expect(distinctRows([[1, 2], [3, 4], [1, 2]], undefined, undefined, [0, 1, 2])).toEqual({ keep: [0, 1], rows: [0, 1], back: [0, 1, 0] });
    // the same ids under another mask or group are other rows; nothing repeated: null
    expect(distinctRows([[1, 2], [1, 2]], [[1, 1], [1, 0]], undefined, [0])).toBeNull();
    expect(distinctRows([[1, 2], [1, 2]], undefined, [0, 1], [0])).toBeNull();
  });
});

describe('repeated rows run once', () => {
  it.each([false, true])('gives every row the plain pass\'s log-prob, entropy and gradient (shared prefix %s)', (shared) => {
    const rng = new Rng('unique-rows');
    const V = base.config.vocabSize;
    const a = LoraAdapter.create(base.config, { rank: 4, alpha: 8, targetModules: ['q_proj', 'v_proj', 'up_proj'] }, 'a', 1);
    a.variables().forEach((v, i) => v.assign(tf.randomNormal(v.shape, 0, 0.2, 'float32', i)));
    const system = Array.from({ length: 7 }, () => rng.int(1, V - 1));
    const distinct: TrainSample[] = Array.from({ length: 4 }, () => ({
      agent: 'a', prompt: [...system, ...Array.from({ length: rng.int(1, 4) }, () => rng.int(1, V - 1))],
      action: Array.from({ length: rng.int(1, 3) }, () => rng.int(1, V - 1)), reward: 0,
    }));
    const samples = [0, 1, 0, 2, 3, 0, 2].map((k) => ({ ...distinct[k], reward: rng.next() }));
    const b = makeBatch(samples);
    const rows: number[] = [];
    b.actionMask.forEach((row, r) => row.forEach((m, t) => m && rows.push(r * row.length + t)));
    expect(distinctRows(b.ids, b.mask, undefined, rows)!.keep).toEqual([0, 1, 3, 4]);
    const weights = tf.tensor1d(rows.map(() => rng.next() * 2 - 1)); // a different "advantage" per row
    const pass = (uniqueRows: boolean) => {
      const opts = { attentionMask: b.mask, adapter: a, train: true, withEntropy: true, uniqueRows, ...(shared ? { prefixGroups: b.ids.map(() => 0) } : {}) };
      const { logp, entropy } = rowLogProbs(base.model, b.ids, rows, opts);
      const { grads } = tf.variableGrads(() => tf.sum(tf.mul(rowLogProbs(base.model, b.ids, rows, opts).logp, weights)) as tf.Scalar, a.variables());
      return { logp: logp.arraySync(), entropy: entropy!.arraySync(), grads: a.variables().map((v) => Array.from(grads[v.name].dataSync())) };
    };
    const plain = pass(false);
    const once = pass(true);
    once.logp.forEach((v, i) => expect(Math.abs(v - plain.logp[i])).toBeLessThan(1e-5));
    once.entropy.forEach((v, i) => expect(Math.abs(v - plain.entropy[i])).toBeLessThan(1e-5));
    once.grads.forEach((g, k) => g.forEach((v, i) => expect(Math.abs(v - plain.grads[k][i])).toBeLessThan(1e-5 * Math.max(1, Math.abs(plain.grads[k][i])))));
    expect(plain.grads.flat().some((v) => Math.abs(v) > 1e-3)).toBe(true); // the gradient is not trivially zero
    a.dispose();
    weights.dispose();
  });
});
