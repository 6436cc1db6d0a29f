/**
 * Vocabulary tables held as row blocks (src/core/engine/model/vocab-table.ts): block sizes worked by
 * hand, lookup and projection against the whole table, and the parity fixtures loaded with a small
 * tensor limit (embedding, or embedding and untied lm_head, in 4 blocks) against the same fixtures
 * loaded whole: logits, log-probs and the LoRA gradient equal, on `cpu` and `wasm`.
 */
import * as tf from '@tensorflow/tfjs-core';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend, type BackendName } from '../../../src/core/engine/backend.ts';
import { LoraAdapter } from '../../../src/core/engine/lora/adapter.ts';
import { checkFits } from '../../../src/core/engine/model/fits.ts';
import { loadModel, type LoadedModel } from '../../../src/core/engine/model/load.ts';
import { rowLogProbs } from '../../../src/core/engine/model/score.ts';
import { folderSource, memorySource } from '../../../src/core/engine/model/sources.ts';
import { blockRows, blocksOf, RowBlocks, rowsPerBlock } from '../../../src/core/engine/model/vocab-table.ts';
import { PARITY, maxAbsDiff, readReference } from '../../helpers/fixtures.ts';

describe('block sizes', () => {
  it("Qwen2.5-0.5B's [151936, 896] embedding under 128 MiB: 5 blocks of at most 37,449 rows", () => {
    const per = rowsPerBlock(896, 128 * 2 ** 20); // floor(134217728 / 3584) = 37449.3
    expect(per).toBe(37449);
    expect(blockRows(151936, per)).toEqual([37449, 37449, 37449, 37449, 2140]);
    expect(per * 896 * 4).toBeLessThanOrEqual(128 * 2 ** 20);
    expect(rowsPerBlock(896, 100)).toBe(1); // a row larger than the limit still makes progress
  });
});

describe('checkFits', () => {
  // SmolLM2-135M's config: its [49152, 576] embedding is 108 MiB, its MLP weights [1536, 576] 3.4 MiB.
  const smol = memorySource({ 'config.json': JSON.stringify({
    architectures: ['LlamaForCausalLM'], model_type: 'llama', vocab_size: 49152, hidden_size: 576, intermediate_size: 1536,
    num_hidden_layers: 30, num_attention_heads: 9, num_key_value_heads: 3, rms_norm_eps: 1e-5, tie_word_embeddings: true,
  }) }, 'SmolLM2-135M');

  it('exempts the embedding (split into blocks) and refuses the largest other tensor over a buffer', async () => {
    await expect(checkFits(smol, { maxBufferSize: 64 * 2 ** 20 })).resolves.toMatchObject({ parameters: 134_515_008 });
    await expect(checkFits(smol, { maxBufferSize: 2 * 2 ** 20 })).rejects.toThrow(
      /SmolLM2-135M is too big for this GPU: its tensor model\.layers\.0\.mlp\.gate_proj\.weight needs 3 MiB but the adapter allows 2 MiB per buffer/);
  });
});

describe('RowBlocks', () => {
  beforeAll(() => initBackend({ force: 'cpu' }));

  it('lookup and project equal gather and matmul on the whole table (the docstring example)', async () => {
    const t = new RowBlocks([tf.tensor2d([[1, 1], [2, 2]]), tf.tensor2d([[3, 3]])]);
    expect(await t.lookup([2, 0]).array()).toEqual([[3, 3], [1, 1]]);
    expect(await t.lookup([1, 2, 1, 0, 2]).array()).toEqual([[2, 2], [3, 3], [2, 2], [1, 1], [3, 3]]);
    expect(await t.project(tf.tensor2d([[1, 0]])).array()).toEqual([[1, 2, 3]]);
    expect(() => t.lookup([3])).toThrow(/id 3 is outside \[0, 3\)/);
  });
});

for (const backend of ['cpu', 'wasm'] as BackendName[]) {
  describe(`a fixture loaded in blocks equals it loaded whole, on ${backend}`, () => {
    const whole: Record<string, LoadedModel> = {};
    const split: Record<string, LoadedModel> = {};
    beforeAll(async () => {
      await initBackend({ force: backend });
      for (const name of ['llama', 'qwen2']) {
        whole[name] = await loadModel(folderSource(path.join(PARITY, name)));
        const h = whole[name].config.hiddenSize;
        // ~25 rows per block: a 97- or 101-row table in 4 blocks.
        split[name] = await loadModel(folderSource(path.join(PARITY, name)), { maxTensorBytes: 25 * h * 4 });
      }
    });
    afterAll(() => {
      for (const m of [...Object.values(whole), ...Object.values(split)]) m.model.dispose();
    });

    for (const name of ['llama', 'qwen2']) {
      it(`${name}: blocks as planned; logits, log-probs and the LoRA gradient equal`, async () => {
        const m = split[name].model;
        expect(blocksOf(m.weights, 'model.embed_tokens.weight').map((b) => b.shape[0])).toEqual(blockRows(m.config.vocabSize, 25));
        expect(m.weights.has('model.embed_tokens.weight')).toBe(false);
        // llama's fixture has an untied lm_head, split the same way; qwen2's is tied (none).
        expect(blocksOf(m.weights, 'lm_head.weight').length).toBe(name === 'llama' ? 4 : 0);
        expect(m.hfNames()).toEqual(whole[name].model.hfNames());
        expect(m.parameterCount()).toBe(whole[name].model.parameterCount());

        const ids = readReference(name).cases.long.input_ids;
        const a = whole[name].model.forward([ids]).logits;
        const b = m.forward([ids]).logits;
        expect(maxAbsDiff((await a.array())[0], (await b.array())[0])).toBeLessThan(1e-6);
        expect(maxAbsDiff((await b.array())[0], readReference(name).cases.long.logits)).toBeLessThan(1e-4);
        tf.dispose([a, b]);

        // The gradient of summed log-probs with respect to a LoRA adapter, both ways.
        const rows = ids.slice(0, -1).map((_, i) => i);
        const grads = async (model: typeof m) => {
          const adapter = LoraAdapter.create(model.config, { rank: 2, alpha: 4, dropout: 0, targetModules: ['q_proj', 'v_proj'] }, 'g', 7);
          const { value, grads: g } = tf.variableGrads(() => tf.sum(rowLogProbs(model, [ids], rows, { adapter, train: true }).logp) as tf.Scalar, adapter.variables());
          const out = { value: await value.data(), grads: await Promise.all(Object.values(g).map((t) => t.data())) };
          tf.dispose([value, ...Object.values(g)]);
          adapter.dispose();
          return out;
        };
        const [gw, gs] = [await grads(whole[name].model), await grads(m)];
        expect(Math.abs(gw.value[0] - gs.value[0])).toBeLessThan(1e-4);
        gw.grads.forEach((g, i) => expect(maxAbsDiff([g], [gs.grads[i]])).toBeLessThan(1e-5));
      });
    }
  });
}
