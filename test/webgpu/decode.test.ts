// The fused WebGPU decoding step (src/core/engine/model/decode-webgpu.ts) on real WebGPU (Dawn in Node
// over SwiftShader) against the plain tfjs path (llama.ts `forward` with a KV cache) on the same
// backend: logits within 1e-4 at every step, greedy picks identical, with a LoRA adapter on every
// projection, left padding, rows dropped mid-way, a cache that outgrows its room, Qwen3 q/k norms,
// Llama 3 rope scaling and attention bias; generate's tokens unchanged; at most 8 dispatches a layer.
// Skips loudly without Debian's chromium (which ships the SwiftShader Vulkan driver).

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as tf from '@tensorflow/tfjs-core';
import path from 'node:path';
import { initBackend } from '../../src/core/engine/backend.ts';
import { GpuDecoder, gpuDecodeRefusal } from '../../src/core/engine/model/decode-webgpu.ts';
import { generate } from '../../src/core/engine/model/generate.ts';
import { disposeCache, selectCacheRows, type AdapterView, type CausalLM } from '../../src/core/engine/model/llama.ts';
import { leftPad } from '../../src/core/engine/model/prefill.ts';
import { loadModel } from '../../src/core/engine/model/load.ts';
import { folderSource } from '../../src/core/engine/model/sources.ts';
import { busyAdapter, randomModel } from '../helpers/decode-models.ts';
import { repoRoot, warnIfSkipped, webgpuAvailable } from '../helpers/webgpu.ts';

const gpu = webgpuAvailable();
warnIfSkipped('WebGPU fused decoding suite (test/webgpu/decode.test.ts)', gpu);

const TOL = 1e-4;
const PROMPTS = [[5, 9, 13, 2, 30], [7, 7], [40, 3, 22, 11, 8, 1, 19, 4]];

const argmax = (a: Float32Array, r: number, V: number) => {
  let best = 0;
  for (let j = 1; j < V; j++) if (a[r * V + j] > a[r * V + best]) best = j;
  return best;
};

/**
 * Prefill, then `steps` tokens per row by both paths, teacher-forced with the plain path's greedy picks;
 * row 0 is dropped after step `dropAt`; `room` slots are announced (fewer than `steps` make it grow).
 * Returns the largest logit difference, whether every pick agreed, and the dispatches of one step.
 */
async function compareSteps(model: CausalLM, prompts: number[][], steps: number, adapter: AdapterView | null, opts: { room?: number; dropAt?: number } = {}) {
  const V = model.config.vocabSize;
  const { ids, mask } = leftPad(prompts);
  const first = model.forward(ids, { attentionMask: mask, useCache: true, lastOnly: true, adapter });
  let cache = first.cache!;
  const firstLogits = (await first.logits.data()) as Float32Array;
  first.logits.dispose();
  let tokens = prompts.map((_, r) => argmax(firstLogits, r, V));
  const dec = (await GpuDecoder.open(model, cache, adapter, opts.room ?? steps))!;
  expect(dec).not.toBeNull();
  let maxDiff = 0;
  let samePicks = true;
  let perStep = 0;
  for (let s = 0; s < steps; s++) {
    const out = model.forward(tokens.map((t) => [t]), { cache, adapter, lastOnly: true });
    cache = out.cache!;
    const plain = (await out.logits.data()) as Float32Array;
    out.logits.dispose();
    const before = dec.dispatches;
    const mine = await dec.step(tokens);
    perStep = dec.dispatches - before;
    for (let i = 0; i < plain.length; i++) maxDiff = Math.max(maxDiff, Math.abs(plain[i] - mine[i]));
    const next = tokens.map((_, r) => argmax(plain, r, V));
    samePicks &&= next.every((t, r) => t === argmax(mine, r, V));
    tokens = next;
    if (s === opts.dropAt && tokens.length > 1) {
      const keep = tokens.map((_, r) => r).slice(1);
      cache = selectCacheRows(cache, keep);
      dec.keepRows(keep);
      tokens = keep.map((r) => tokens[r]);
    }
  }
  disposeCache(cache);
  dec.dispose();
  return { maxDiff, samePicks, perStep };
}

describe.skipIf(!gpu.ok)('the fused WebGPU decoding step against the plain path (SwiftShader)', () => {
  beforeAll(async () => {
    await initBackend({ force: 'webgpu' });
  });
  afterAll(async () => {
    await tf.setBackend('cpu');
  });

  it('the shipped agent, with and without a LoRA adapter on every projection: logits within 1e-4, the same picks, 5 dispatches a layer', async () => {
    const { model } = await loadModel(folderSource(path.join(repoRoot, 'models/agent')));
    expect(gpuDecodeRefusal(model)).toBeNull();
    const adapter = busyAdapter(model.config, 3);
    const prompts = [[1, 40, 300, 12, 9, 77], [1, 5], [1, 900, 901, 902, 903, 904, 905, 906, 907, 908, 1200]];
    for (const a of [null, adapter]) {
      const { maxDiff, samePicks, perStep } = await compareSteps(model, prompts, 6, a, { room: 2, dropAt: 2 });
      console.log(`[decode-webgpu] agent, adapter ${a ? 'on' : 'off'}: max |diff| ${maxDiff.toExponential(2)}, ${perStep} dispatches a step`);
      expect(maxDiff).toBeLessThan(TOL);
      expect(samePicks).toBe(true);
      expect(perStep).toBe(5 * model.config.numLayers + 2); // the embedding and the head besides the layers
      expect((perStep - 2) / model.config.numLayers).toBeLessThanOrEqual(8);
    }
    adapter.dispose();
    model.dispose();
  });

  it('Qwen3 q/k norms, Llama 3 rope scaling and attention bias, with an adapter; more rows than a workgroup serves', async () => {
    const configs: Record<string, unknown>[] = [
      { architectures: ['Qwen3ForCausalLM'], model_type: 'qwen3', head_dim: 16 },
      { rope_scaling: { rope_type: 'llama3', factor: 8, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 16 }, rope_theta: 500000 },
      { attention_bias: true },
    ];
    for (const [i, raw] of configs.entries()) {
      const model = randomModel(raw, 10 + i);
      const adapter = busyAdapter(model.config, 20 + i);
      const prompts = i === 2 ? Array.from({ length: 11 }, (_, r) => PROMPTS[r % 3].map((t) => (t + r) % 53)) : PROMPTS;
      const { maxDiff, samePicks } = await compareSteps(model, prompts, 5, adapter, { dropAt: 1 });
      console.log(`[decode-webgpu] ${JSON.stringify(raw).slice(0, 40)}: max |diff| ${maxDiff.toExponential(2)}`);
      expect(maxDiff).toBeLessThan(TOL);
      expect(samePicks).toBe(true);
      adapter.dispose();
      model.dispose();
    }
  });

  it('generate: the same tokens as the plain step, rows that stop early, no tensor left', async () => {
    const model = randomModel({}, 40);
    const adapter = busyAdapter(model.config, 41);
    const o = { maxNewTokens: 8, temperature: 0, adapter, eosTokenIds: [3] };
    const before = tf.memory().numTensors;
    const plain = await generate(model, PROMPTS, { ...o, fused: false });
    const fused = await generate(model, PROMPTS, o);
    expect(fused.map((g) => g.tokens)).toEqual(plain.map((g) => g.tokens));
    expect(fused.map((g) => g.finishReason)).toEqual(plain.map((g) => g.finishReason));
    for (let r = 0; r < plain.length; r++) plain[r].logprobs.forEach((lp, i) => expect(Math.abs(fused[r].logprobs[i] - lp)).toBeLessThan(TOL));
    expect(tf.memory().numTensors).toBe(before);
    adapter.dispose();
    model.dispose();
  });
});
