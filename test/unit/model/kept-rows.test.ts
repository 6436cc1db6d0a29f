/**
 * The last layer at the kept rows only (model/kept-rows.ts, ENGINE_PATHS.keptRows) against the full last
 * layer, on wasm and cpu: the slot plan by hand; a cached, left-padded prefill's last logits; the update's
 * log-probs and LoRA gradients (plain rows, a shared prefix, a team view in both forms) on the relay model,
 * a Qwen3 model (per-head q norm) and the llama parity fixture. The reference is the same pass with the
 * switch off, which runs every position and gathers the rows afterwards: every product row, softmax row and
 * norm is the same computation, so the numbers are the same to the bit.
 */
import * as tf from '@tensorflow/tfjs-core';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/core/engine/backend.ts';
import { ENGINE_PATHS } from '../../../src/core/engine/paths.ts';
import { BatchedAdapter } from '../../../src/core/engine/lora/batched-adapter.ts';
import { keepSlots, keptIndex } from '../../../src/core/engine/model/kept-rows.ts';
import { CausalLM, disposeCache, type AdapterView } from '../../../src/core/engine/model/llama.ts';
import { loadModel } from '../../../src/core/engine/model/load.ts';
import { leftPad } from '../../../src/core/engine/model/prefill.ts';
import { rowLogProbs } from '../../../src/core/engine/model/score.ts';
import { folderSource } from '../../../src/core/engine/model/sources.ts';
import { busyAdapter, fixtureModel, randomModel } from '../../helpers/decode-models.ts';
import { repoRoot } from '../../helpers/webgpu.ts';

afterEach(() => {
  ENGINE_PATHS.keptRows = true;
});

/** fn with the switch on and off. */
function both<T>(fn: () => T): [T, T] {
  ENGINE_PATHS.keptRows = true;
  const on = fn();
  ENGINE_PATHS.keptRows = false;
  const off = fn();
  ENGINE_PATHS.keptRows = true;
  return [on, off];
}

function maxDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

/** A cached prefill of left-padded prompts continued by a chunk and a one-token step: their last-position logits [2 * B * V]. */
function prefillLogits(model: CausalLM, adapter: AdapterView | null): Float32Array {
  const first = leftPad([[5, 9, 13, 2, 30, 7], [7, 7], [40, 3, 22, 11, 8, 1, 19]]);
  const head = model.forward(first.ids, { attentionMask: first.mask, useCache: true, lastOnly: true, adapter });
  head.logits.dispose();
  const next = model.forward([[4, 6], [9, 1], [3, 3]], { cache: head.cache, useCache: true, lastOnly: true, adapter });
  const step = model.forward([[8], [2], [5]], { cache: next.cache, useCache: true, lastOnly: true, adapter }); // one token: nothing left out
  disposeCache(step.cache!);
  const out = Float32Array.from([...next.logits.dataSync(), ...step.logits.dataSync()]);
  tf.dispose([next.logits, step.logits]);
  return out;
}

/** Rows of one agent's samples: a shared 7-token head, a prompt of 2-4 tokens and an action of 1-3, right-padded. */
const ROWS = [[1, 8, 9, 10, 11, 12, 13, 20, 21, 30], [1, 8, 9, 10, 11, 12, 13, 22, 31, 32], [1, 8, 9, 10, 11, 12, 13, 20, 23, 24]];
const MASK = [[1, 1, 1, 1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1, 1, 1, 1, 0]];
const ASKED = [8, 17, 18, 25, 26]; // flat b * 9 + t: row 0's last, row 1's last two, row 2's t = 7, 8

/** log-probs at ASKED and the gradient of their sum w.r.t. the adapter's variables, flattened. */
function logpAndGrad(model: CausalLM, view: AdapterView, vars: tf.Variable[], extra: { prefixGroups?: number[]; prefixAdapter?: AdapterView }) {
  let logp: Float32Array = new Float32Array();
  const { value, grads } = tf.variableGrads(() => {
    const { logp: lp } = rowLogProbs(model, ROWS, ASKED, { attentionMask: MASK, adapter: view, train: true, ...extra });
    logp = lp.dataSync() as Float32Array;
    return tf.sum(lp) as tf.Scalar;
  }, vars);
  const g = Float32Array.from(vars.flatMap((v) => Array.from(grads[v.name].dataSync())));
  tf.dispose([value, ...Object.values(grads)]);
  return { logp, g };
}

describe('the last layer at the kept rows', () => {
  it('plans the slots by hand: rows padded with their last kept position, asked rows mapped onto them', () => {
    expect(keepSlots([[3, 5], [4]], 6)).toEqual({ m: 2, slots: [3, 5, 10, 10] });
    expect(keepSlots([[], []], 4)).toEqual({ m: 1, slots: [0, 4] });
    expect(keptIndex([4, 9, 10], 2, 6)).toEqual({ keep: [[4], [3, 4]], at: [0, 2, 3] });
    expect(keptIndex([9, 4, 9], 2, 6)).toEqual({ keep: [[4], [3]], at: [1, 0, 1] });
    expect(() => keepSlots([[6]], 6)).toThrow(/outside the row's 6 tokens/);
  });

  for (const backend of ['wasm', 'cpu'] as const) {
    it(`${backend}: a cached left-padded prefill's logits, with and without an adapter, llama and qwen3`, async () => {
      await initBackend({ force: backend });
      for (const model of [await fixtureModel('llama'), randomModel({ architectures: ['Qwen3ForCausalLM'], model_type: 'qwen3', head_dim: 16 }, 4)]) {
        const adapter = busyAdapter(model.config, 3);
        for (const a of [null, adapter]) {
          const before = tf.memory().numTensors;
          const [on, off] = both(() => prefillLogits(model, a));
          expect(tf.memory().numTensors).toBe(before);
          expect(maxDiff(on, off)).toBe(0);
        }
        adapter.dispose();
        model.dispose();
      }
    });

    it(`${backend}: the relay model's log-probs and LoRA gradients, plain rows, a shared prefix and a team view`, async () => {
      await initBackend({ force: backend });
      const { model } = await loadModel(folderSource(path.join(repoRoot, 'models/relay')));
      const [a, b] = [busyAdapter(model.config, 5), busyAdapter(model.config, 6)];
      const cases: [string, AdapterView, tf.Variable[], { prefixGroups?: number[]; prefixAdapter?: AdapterView }][] = [
        ['plain', a, a.variables(), {}],
        ['shared prefix', a, a.variables(), { prefixGroups: [0, 0, 0] }],
      ];
      for (const form of ['masked', 'gather'] as const) {
        BatchedAdapter.form = form;
        const view = BatchedAdapter.over([a, b], [0, 1, 1]);
        cases.push([`team view, ${form}`, view, view.variables(), {}]);
        cases.push([`team view, ${form}, shared prefix`, view, view.variables(), { prefixGroups: [0, 1, 1], prefixAdapter: BatchedAdapter.over([a, b], [0, 1]) }]);
      }
      BatchedAdapter.form = 'masked';
      for (const [name, view, vars, extra] of cases) {
        logpAndGrad(model, view, vars, extra); // a team view keeps its row tensors from its first pass
        const before = tf.memory().numTensors;
        const [on, off] = both(() => logpAndGrad(model, view, vars, extra));
        expect(tf.memory().numTensors, name).toBe(before);
        expect(maxDiff(on.logp, off.logp), name).toBe(0);
        const scale = Math.max(...off.g.map(Math.abs));
        expect(scale, name).toBeGreaterThan(0);
        expect(maxDiff(on.g, off.g), name).toBe(0);
      }
      a.dispose();
      b.dispose();
      model.dispose();
    });
  }
});
