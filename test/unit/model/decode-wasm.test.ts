/**
 * The fused wasm decoding step (src/core/engine/model/decode-wasm.ts) against the plain tfjs path
 * (llama.ts `forward` with a KV cache) on the same wasm backend: logits within 1e-5 at every step,
 * greedy tokens identical, on the shipped agent with a LoRA adapter on every projection, the
 * llama and qwen2 parity fixtures (and transformers' own greedy tokens), and random Qwen3
 * (q/k norm), Llama 3 rope-scaling and attention-bias configs; with left padding and rows that stop;
 * with attention in the wasm SIMD kernel (the default) and in the JS loop.
 */
import * as tf from '@tensorflow/tfjs-core';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/core/engine/backend.ts';
import { FusedDecoder, fusedDecodeRefusal } from '../../../src/core/engine/model/decode-wasm.ts';
import { generate } from '../../../src/core/engine/model/generate.ts';
import { leftPad } from '../../../src/core/engine/model/prefill.ts';
import { CausalLM, disposeCache, type AdapterView } from '../../../src/core/engine/model/llama.ts';
import { loadModel } from '../../../src/core/engine/model/load.ts';
import { folderSource } from '../../../src/core/engine/model/sources.ts';
import { readReference } from '../../helpers/fixtures.ts';
import { busyAdapter, fixtureModel, randomModel } from '../../helpers/decode-models.ts';
import { setBlockBytes } from '../../../src/core/engine/model/tied-head.ts';
import { repoRoot } from '../../helpers/webgpu.ts';

const TOL = 1e-5;

/**
 * Prefill left-padded prompts, then `steps` tokens per row by both paths, teacher-forced with the
 * plain path's greedy picks; returns the largest logit difference and whether every pick agreed.
 */
function compareSteps(model: CausalLM, prompts: number[][], steps: number, adapter: AdapterView | null, simd = true): { maxDiff: number; samePicks: boolean } {
  const { ids, mask } = leftPad(prompts);
  const first = model.forward(ids, { attentionMask: mask, useCache: true, lastOnly: true, adapter });
  let cache = first.cache!;
  const V = model.config.vocabSize;
  const argmax = (a: Float32Array, r: number) => {
    let best = 0;
    for (let j = 1; j < V; j++) if (a[r * V + j] > a[r * V + best]) best = j;
    return best;
  };
  const firstLogits = first.logits.dataSync() as Float32Array;
  first.logits.dispose();
  let tokens = prompts.map((_, r) => argmax(firstLogits, r));
  const fused = FusedDecoder.open(model, cache, adapter, steps, { simd })!;
  expect(fused.simdAttention).toBe(simd);
  let maxDiff = 0;
  let samePicks = true;
  for (let s = 0; s < steps; s++) {
    const out = model.forward(tokens.map((t) => [t]), { cache, adapter, lastOnly: true });
    cache = out.cache!;
    const plain = out.logits.dataSync() as Float32Array;
    out.logits.dispose();
    const mine = fused.step(tokens);
    for (let i = 0; i < plain.length; i++) maxDiff = Math.max(maxDiff, Math.abs(plain[i] - mine[i]));
    const next = tokens.map((_, r) => argmax(plain, r));
    samePicks &&= next.every((t, r) => t === argmax(mine, r));
    tokens = next;
  }
  disposeCache(cache);
  fused.dispose();
  return { maxDiff, samePicks };
}

/** generate() with the fused step and without it: the same tokens, log-probs within TOL. */
async function compareGenerate(model: CausalLM, prompts: number[][], adapter: AdapterView | null, eos: number[] = []) {
  const o = { maxNewTokens: 12, temperature: 0, adapter, eosTokenIds: eos };
  const plain = await generate(model, prompts, { ...o, fused: false });
  const fused = await generate(model, prompts, o);
  expect(fused.map((g) => g.tokens)).toEqual(plain.map((g) => g.tokens));
  expect(fused.map((g) => g.finishReason)).toEqual(plain.map((g) => g.finishReason));
  for (let r = 0; r < plain.length; r++) plain[r].logprobs.forEach((lp, i) => expect(Math.abs(fused[r].logprobs[i] - lp)).toBeLessThan(TOL));
  return fused;
}

const PROMPTS = [[5, 9, 13, 2, 30], [7, 7], [40, 3, 22, 11, 8, 1, 19, 4]];

describe('the fused wasm decoding step against the plain path', () => {
  beforeAll(async () => {
    await initBackend({ force: 'wasm' });
  });

  it('declines, saying why, on another backend (generate then keeps the plain step)', async () => {
    const m = randomModel({}, 1);
    expect(fusedDecodeRefusal(m)).toBeNull();
    await tf.setBackend('cpu');
    expect(fusedDecodeRefusal(m)).toMatch(/backend is cpu/);
    await tf.setBackend('wasm');
    m.dispose();
  });

  it('the shipped agent with a LoRA adapter on every projection: logits within 1e-5, the same greedy tokens', async () => {
    const { model } = await loadModel(folderSource(path.join(repoRoot, 'models/agent')));
    const adapter = busyAdapter(model.config, 3);
    const prompts = [[1, 40, 300, 12, 9, 77], [1, 5], [1, 900, 901, 902, 903, 904, 905, 906, 907, 908, 1200]];
    for (const a of [null, adapter]) {
      for (const simd of [true, false]) { // the SIMD attention kernel, and the JS loop it replaces
        const { maxDiff, samePicks } = compareSteps(model, prompts, 10, a, simd);
        expect(maxDiff).toBeLessThan(TOL);
        expect(samePicks).toBe(true);
      }
    }
    // Rows that stop early (token 2 is the agent's EOS) are dropped from both caches alike.
    await compareGenerate(model, prompts, adapter, [2]);
    adapter.dispose();
    model.dispose();
  });

  it('the llama and qwen2 parity fixtures: transformers\' greedy tokens, and the plain path\'s logits', async () => {
    for (const name of ['llama', 'qwen2']) {
      const model = await fixtureModel(name);
      const ref = readReference(name).greedy;
      const [g] = await generate(model, [ref.prompt_ids], { maxNewTokens: ref.max_new_tokens, temperature: 0 });
      expect(g.tokens).toEqual(ref.new_ids);
      const { maxDiff, samePicks } = compareSteps(model, PROMPTS, 8, null);
      expect(maxDiff).toBeLessThan(TOL);
      expect(samePicks).toBe(true);
      model.dispose();
    }
  });

  it('Qwen3 q/k norms, Llama 3 rope scaling and attention bias, with an adapter; a cache that outgrows its room', async () => {
    const configs: Record<string, unknown>[] = [
      { architectures: ['Qwen3ForCausalLM'], model_type: 'qwen3', head_dim: 16 },
      { rope_scaling: { rope_type: 'llama3', factor: 8, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 16 }, rope_theta: 500000 },
      { attention_bias: true },
    ];
    for (const [i, raw] of configs.entries()) {
      const model = randomModel(raw, 10 + i);
      const adapter = busyAdapter(model.config, 20 + i);
      const { maxDiff, samePicks } = compareSteps(model, PROMPTS, 8, adapter);
      expect(maxDiff).toBeLessThan(TOL);
      expect(samePicks).toBe(true);
      await compareGenerate(model, PROMPTS, adapter);
      adapter.dispose();
      model.dispose();
    }
    // Room for 1 token, 6 asked: the decoder doubles its slots and stays equal to the plain path.
    const model = randomModel({}, 30);
    const { ids } = leftPad(PROMPTS);
    const first = model.forward(ids, { useCache: true, lastOnly: true });
    const dec = FusedDecoder.open(model, first.cache!, null, 1)!;
    first.logits.dispose();
    let cache = first.cache!;
    for (let s = 0; s < 6; s++) {
      const out = model.forward(PROMPTS.map(() => [s + 3]), { cache, lastOnly: true });
      cache = out.cache!;
      const plain = out.logits.dataSync();
      out.logits.dispose();
      const mine = dec.step(PROMPTS.map(() => s + 3));
      expect(Math.max(...Array.from(plain, (x, j) => Math.abs(x - mine[j])))).toBeLessThan(TOL);
    }
    disposeCache(cache);
    dec.dispose();
    model.dispose();
  });

  it('a tied head in several column blocks: logits within 1e-5 of the plain path, the same greedy tokens', async () => {
    const previous = setBlockBytes(16 * 48 * 4); // 16 columns a block: vocabulary 53 -> 16 + 16 + 16 + 5
    try {
      const model = randomModel({ tie_word_embeddings: true }, 50);
      expect(model.outputColumnBlocks()?.starts).toEqual([0, 16, 32, 48]);
      const adapter = busyAdapter(model.config, 51);
      const { maxDiff, samePicks } = compareSteps(model, PROMPTS, 6, adapter);
      expect(maxDiff).toBeLessThan(TOL);
      expect(samePicks).toBe(true);
      await compareGenerate(model, PROMPTS, adapter);
      adapter.dispose();
      model.dispose();
    } finally {
      setBlockBytes(previous);
    }
  });

  it('leaves no tensor behind', async () => {
    const model = randomModel({}, 40);
    const adapter = busyAdapter(model.config, 41);
    const before = tf.memory().numTensors;
    await generate(model, PROMPTS, { maxNewTokens: 6, temperature: 0, adapter });
    expect(tf.memory().numTensors).toBe(before);
    adapter.dispose();
    model.dispose();
  });
});
