/**
 * The memory plan: hand-worked numbers for a tiny config (every term below is worked out in the
 * comments from the formulas in src/core/engine/model/memory-plan.ts' top comment), the limits check, and
 * one real measurement on cpu (the bytes the backend holds, bench/memory.ts) within 25 %.
 */
import * as tf from '@tensorflow/tfjs-core';
import { describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/core/engine/backend.ts';
import { parseConfig } from '../../../src/core/engine/model/config.ts';
import { fitsLimits, loraParameters, planMemory, trainingFloatsPerToken } from '../../../src/core/engine/model/memory-plan.ts';
import { measureLayers, parseMemoryArgs, trackBackendBytes } from '../../../bench/memory.ts';
import { benchConfig } from '../../../bench/engine.ts';

// d 8, I 16, 1 layer, 2 heads (head_dim 4: q 8), 1 KV head (kv 4), vocab 32, tied.
const tiny = parseConfig({
  model_type: 'llama', hidden_size: 8, intermediate_size: 16, num_hidden_layers: 1, num_attention_heads: 2,
  num_key_value_heads: 1, vocab_size: 32, tie_word_embeddings: true,
});
// rows 2, prompt 3 + action 2 (T 5), LoRA rank 2 on q and v, micro-batch 1.
const run = { rows: 2, promptTokens: 3, actionTokens: 2, rank: 2, targets: ['q_proj', 'v_proj'] as const, microBatch: 1 };

describe('memory plan, worked by hand', () => {
  it('counts the floats per token per layer', () => {
    // forward  10d + 8q + 8kv + 5I + 3 nh T = 80 + 64 + 32 + 80 + 30 = 286;
    //          LoRA q (8 -> 8): 3*8 + 2 = 26; v (8 -> 4): 3*4 + 2 = 14          -> 326
    // backward 17d + 8.5q + 8.5kv + 7I + 3 nh T = 136 + 68 + 34 + 112 + 30 = 380;
    //          LoRA q: 8 + 8 + 2 = 18; v: 4 + 8 + 2 = 14                        -> 412
    expect(trainingFloatsPerToken(tiny, 5, 2, ['q_proj', 'v_proj'])).toEqual({ forward: 326, backward: 412 });
    // LoRA: r (in + out): q 2 * 16 + v 2 * 12 = 56 parameters
    expect(loraParameters(tiny, 2, ['q_proj', 'v_proj'])).toBe(56);
  });

  it('plans a cpu run', () => {
    const p = planMemory(tiny, { ...run, targets: [...run.targets], backend: 'cpu' });
    // parameters: embed 32*8 = 256, layer: norms 16 + q 64 + k 32 + v 32 + o 64 + MLP 3*128 = 592, final norm 8 -> 856
    expect(p.weights).toBe(856 * 4); // 3424
    expect(p.lora).toBe(56 * 4 * 4); // weights, Adam m and v, gradients: 896
    // KV: 2 (k, v) * 1 layer * 2 rows * 4 * 5 tokens * 4 B
    expect(p.kvCache).toBe(320);
    // prefill: rows * P * 4 B * (8d + 4q + 4kv + 3I + 3 nh P) + rows * V * 4 B * 2 = 24 * 178 + 512
    expect(p.prefillWorking).toBe(4784);
    expect(p.rolloutPeak).toBe(3424 + 320 + 4784);
    // update: 1 row of 5 tokens: 5 * (326 + 412) * 4 B; logits 2 rows * 32 * 4 B * 15; embeddings etc. 5 * 8 * 4 B * 4
    expect(p.microBatchRows).toBe(1);
    expect(p.activations).toBe(14_760);
    expect(p.logits).toBe(3840);
    expect(p.updateOther).toBe(640);
    expect(p.updatePeak).toBe(3424 + 896 + 14_760 + 3840 + 640); // 23,560
    expect(p.peak).toBe(23_560);
    expect(p.largest).toEqual({ what: 'embedding (tied output projection)', shape: [32, 8], bytes: 1024, splitByRows: true });
  });

  it('plans the same run on wasm (tied head copy, fused log-prob) and webgpu (fused log-prob)', () => {
    const w = planMemory(tiny, { ...run, targets: [...run.targets], backend: 'wasm' });
    // tied head copy [8, 32] = 1024 B; the tape's clones share buffers (kernels/wasm-identity.ts): activations as on cpu
    expect(w.weights).toBe(3424 + 1024);
    expect(w.activations).toBe(14_760);
    expect(w.logits).toBe(2 * 128 * 6);
    expect(w.updatePeak).toBe(4448 + 896 + 14_760 + 1536 + 640);
    const g = planMemory(tiny, { ...run, targets: [...run.targets], backend: 'webgpu' });
    expect(g.logits).toBe(2 * 128 * 6);
    expect(g.updatePeak).toBe(3424 + 896 + 14_760 + 1536 + 640);
  });

  it('says what does not fit and what to change', () => {
    const p = planMemory(tiny, { ...run, targets: [...run.targets], backend: 'cpu' });
    expect(fitsLimits(p, { memory: 1e6, maxStorageBufferBindingSize: 4096 })).toEqual({ fits: true, problems: [] });
    const v = fitsLimits(p, { memory: 20_000, maxStorageBufferBindingSize: 512, maxBufferSize: 2048 });
    expect(v.fits).toBe(false);
    expect(v.problems[0]).toMatch(/peak 0 MiB \(the update\) exceeds .* lower the micro-batch \(now 1\)/);
    // The 1024-byte embedding is over the 512-byte binding too, but the loader holds it in row blocks.
    expect(v.problems.join('\n')).not.toMatch(/embedding/);
    expect(() => planMemory(tiny, { ...run, targets: [...run.targets], rows: 0 })).toThrow(/rows must be a positive whole number, got 0/);
  });

  it('caps the micro-batch by the trainer\'s attention cells (2^21 = rows x T^2)', () => {
    const smol = benchConfig(2);
    expect(planMemory(smol, { rows: 8, promptTokens: 512, actionTokens: 512, rank: 8, microBatch: 4 }).microBatchRows).toBe(2);
  });
});

describe('memory plan against the bytes cpu really holds', () => {
  it('tracks the bytes of distinct buffers (a reshape view costs nothing)', async () => {
    await initBackend({ force: 'cpu' });
    const t = trackBackendBytes();
    try {
      const base = t.current;
      const a = tf.zeros([256, 1024]);
      const view = tf.reshape(a, [1024, 256]);
      expect(t.current - base).toBe(1 << 20);
      tf.dispose([a, view]);
      expect(t.current).toBe(base);
      expect(t.peak - base).toBe(1 << 20);
    } finally {
      t.stop();
    }
  });

  it('is within 25 % of the measured rollout and update peaks at a small shape', async () => {
    await initBackend({ force: 'cpu' });
    // A small model of the real kind: hidden 64, intermediate 192, 2 layers, 4 heads / 2 KV heads, vocab 2048, tied.
    const small = parseConfig({
      model_type: 'llama', hidden_size: 64, intermediate_size: 192, num_hidden_layers: 2, num_attention_heads: 4,
      num_key_value_heads: 2, vocab_size: 2048, tie_word_embeddings: true,
    });
    const o = { ...parseMemoryArgs([]), rows: 2, promptLen: 12, actionLen: 6, microBatch: 2 };
    const m = await measureLayers(2, o, small);
    expect(m.plan.updatePeak / m.updatePeak).toBeGreaterThan(0.75);
    expect(m.plan.updatePeak / m.updatePeak).toBeLessThan(1.25);
    expect(m.plan.rolloutPeak / m.rolloutPeak).toBeGreaterThan(0.75);
    expect(m.plan.rolloutPeak / m.rolloutPeak).toBeLessThan(1.25);
  }, 300_000);
});
