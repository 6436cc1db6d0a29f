// Data-parallel pretraining (scripts/pretrain/data-parallel.ts): a batch cut into shards, one shard
// computed by a worker thread with its own wasm backend, gives the single-thread gradient (the
// reference: the same loss on the whole batch in this thread), and training steps stay in step.
import * as tf from '@tensorflow/tfjs-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GradientWorkers, shardLoss, shardRows, type Shard } from '../../../scripts/pretrain/data-parallel.ts';
import { initWeights, trainModel } from '../../../scripts/pretrain/train.ts';
import type { Example } from '../../../scripts/pretrain/transcripts.ts';
import { initBackend } from '../../../src/core/engine/backend.ts';
import { parseConfig } from '../../../src/core/engine/model/config.ts';
import { CausalLM } from '../../../src/core/engine/model/llama.ts';
import { Rng } from '../../../src/core/stats/rng.ts';

const config = parseConfig({
  architectures: ['LlamaForCausalLM'], model_type: 'llama', vocab_size: 48, hidden_size: 32, intermediate_size: 64,
  num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2, max_position_embeddings: 64, rms_norm_eps: 1e-5,
  rope_theta: 10000, tie_word_embeddings: true,
}, 'test config');

function examples(n: number, rng: Rng): Example[] {
  return [...Array(n)].map(() => {
    const len = 6 + Math.floor(rng.next() * 10);
    const ids = [...Array(len)].map(() => Math.floor(rng.next() * 48));
    return { ids, lossMask: ids.map((_, t) => (t > len / 2 ? 1 : 0)) };
  });
}

/** initWeights' values as unnamed variables (initWeights names them by weight, and names are global in tfjs). */
function fresh(seed: string): Map<string, tf.Variable> {
  const named = initWeights(config, new Rng(seed));
  const out = new Map([...named].map(([k, v]) => [k, tf.variable(v.clone(), true)]));
  for (const v of named.values()) v.dispose();
  return out;
}

const maxDiff = (a: Float32Array, b: Float32Array) => a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i])), 0);

describe('data-parallel pretraining', () => {
  let pool: GradientWorkers;
  beforeAll(async () => {
    await initBackend({ force: 'wasm' });
    const shapes = fresh('dp-shapes');
    pool = await GradientWorkers.start(1, config, shapes);
    for (const v of shapes.values()) v.dispose();
  }, 300_000);
  afterAll(async () => { await pool?.close(); });

  it('shardRows cuts consecutive rows, the first shards one row larger, never an empty shard', () => {
    const s: Shard = { ids: [[1], [2], [3]], attentionMask: [[1], [1], [1]], targets: [[0], [0], [0]], weights: [[1], [1], [1]] };
    expect(shardRows(s, 2).map((x) => x.ids)).toEqual([[[1], [2]], [[3]]]);
    expect(shardRows(s, 5).map((x) => x.ids)).toEqual([[[1]], [[2]], [[3]]]);
  });

  it('the worker shard + this thread\'s shard = the whole batch\'s gradient', async () => {
    const weights = fresh('dp-grad');
    const model = new CausalLM(config, weights as Map<string, tf.Tensor>);
    const rng = new Rng('dp-batch');
    const rows = 5, width = 12;
    const ids = [...Array(rows)].map(() => [...Array(width)].map(() => Math.floor(rng.next() * 48)));
    const batch: Shard = {
      ids, attentionMask: ids.map((r, i) => r.map((_, t) => (t < width - i ? 1 : 0))), targets: ids.map((r) => [...r.slice(1), 0]),
      weights: ids.map((r, i) => r.map((_, t) => (t < width - i - 1 ? (t % 3 ? 1 : 0.2) : 0))),
    };
    const count = batch.weights.flat().reduce((a, b) => a + b, 0);
    const vars = [...weights.values()];
    const whole = tf.variableGrads(() => shardLoss(model, config, batch, count), vars);
    const [mine, theirs] = shardRows(batch, 2);
    const pending = pool.gradients([theirs], weights, count);
    const part = tf.variableGrads(() => shardLoss(model, config, mine, count), vars);
    const other = await pending;
    expect(part.value.dataSync()[0] + other.losses[0]).toBeCloseTo(whole.value.dataSync()[0], 5);
    let worst = 0, scale = 0;
    for (const [name, v] of weights) {
      const sum = tf.add(part.grads[v.name], other.grads[0].get(name)!);
      const ref = whole.grads[v.name].dataSync() as Float32Array;
      worst = Math.max(worst, maxDiff(sum.dataSync() as Float32Array, ref));
      scale = Math.max(scale, ...ref.map(Math.abs));
      sum.dispose();
    }
    expect(scale).toBeGreaterThan(1e-3);
    expect(worst).toBeLessThan(1e-6 + 1e-5 * scale);
    tf.dispose([whole.value, part.value, ...Object.values(whole.grads), ...Object.values(part.grads), ...other.grads.flatMap((g) => [...g.values()])]);
    for (const w of vars) w.dispose();
  }, 300_000);

  it('five Adam steps with a worker end where five single-thread steps end', async () => {
    const data = examples(24, new Rng('dp-train'));
    const opts = { steps: 5, tokensPerBatch: 64, lr: 3e-3, seed: 0, promptWeight: 0.2, warmup: 1 };
    const alone = fresh('dp-init');
    const shared = fresh('dp-init');
    const a = await trainModel(config, alone, data, opts);
    const b = await trainModel(config, shared, data, { ...opts, workers: pool });
    expect(b.finalLoss).toBeCloseTo(a.finalLoss, 4);
    for (const [name, w] of alone) expect(maxDiff(w.dataSync() as Float32Array, shared.get(name)!.dataSync() as Float32Array)).toBeLessThan(1e-5);
    for (const w of [...alone.values(), ...shared.values()]) w.dispose();
  }, 300_000);
});
