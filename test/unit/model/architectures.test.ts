/**
 * Architectures with no transformers dump in the fixtures (Qwen3's q/k RMSNorm and free head_dim,
 * Llama 3 rope scaling, attention_bias) checked against the naive float64 decoder in
 * test/helpers/naive-decoder.ts — which is itself checked here against the transformers logits.
 */
import * as tf from '@tensorflow/tfjs-core';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/core/engine/backend.ts';
import { ConfigError, expectedWeights, parseConfig, type ModelConfig } from '../../../src/core/engine/model/config.ts';
import { CausalLM } from '../../../src/core/engine/model/llama.ts';
import { decodeSafetensors } from '../../../src/core/engine/model/safetensors.ts';
import { Rng } from '../../../src/core/stats/rng.ts';
import { naiveForward, type Weights } from '../../helpers/naive-decoder.ts';
import { PARITY, maxAbsDiff, readReference } from '../../helpers/fixtures.ts';

function randomWeights(c: ModelConfig, seed: number): Weights {
  const rng = new Rng(seed);
  const w: Weights = new Map();
  for (const [name, shape] of expectedWeights(c)) {
    const n = shape.reduce((a, b) => a * b, 1);
    const data = new Float32Array(n);
    const isNorm = name.endsWith('norm.weight');
    for (let i = 0; i < n; i++) data[i] = isNorm ? 1 + 0.3 * (rng.next() - 0.5) : 0.4 * (rng.next() - 0.5);
    w.set(name, { shape, data });
  }
  return w;
}

function toModel(c: ModelConfig, w: Weights): CausalLM {
  return new CausalLM(c, new Map([...w].map(([k, v]) => [k, tf.tensor(v.data, v.shape, 'float32')])));
}

async function compare(c: ModelConfig, seed: number, ids: number[]): Promise<number> {
  const w = randomWeights(c, seed);
  const m = toModel(c, w);
  const { logits } = m.forward([ids]);
  const got = ((await logits.array()) as number[][][])[0];
  logits.dispose();
  m.dispose();
  return maxAbsDiff(got, naiveForward(c, w, ids));
}

const base = {
  hidden_size: 48, intermediate_size: 80, num_hidden_layers: 2, num_attention_heads: 4,
  num_key_value_heads: 2, vocab_size: 53, rms_norm_eps: 1e-6, max_position_embeddings: 4096,
};
const ids = [3, 17, 52, 0, 9, 9, 41, 7, 30, 12, 2, 50];

describe('architectures against the naive reference', () => {
  beforeAll(async () => {
    await initBackend({ force: 'cpu' });
  });

  it('the naive reference itself matches transformers on the llama and qwen2 fixtures', async () => {
    for (const name of ['llama', 'qwen2']) {
      const c = parseConfig(JSON.parse(readFileSync(path.join(PARITY, name, 'config.json'), 'utf8')));
      const { tensors } = await decodeSafetensors(readFileSync(path.join(PARITY, name, 'model.safetensors')));
      const w: Weights = new Map([...tensors].map(([k, t]) => [k, { shape: t.shape, data: t.data }]));
      const ref = readReference(name);
      expect(maxAbsDiff(naiveForward(c, w, ref.cases.short.input_ids), ref.cases.short.logits)).toBeLessThan(1e-4);
    }
  });

  it('Qwen3: q/k RMSNorm per head, head_dim independent of hidden_size', async () => {
    const c = parseConfig({ ...base, model_type: 'qwen3', architectures: ['Qwen3ForCausalLM'], head_dim: 16, rope_theta: 1e6, tie_word_embeddings: true });
    expect(c.qkNorm).toBe(true);
    expect(c.headDim).toBe(16); // 48 / 4 would be 12
    expect(expectedWeights(c).get('model.layers.0.self_attn.q_proj.weight')).toEqual([64, 48]);
    expect(await compare(c, 1, ids)).toBeLessThan(1e-4);
  });

  it('Llama 3 rope scaling (rope_type llama3) and attention_bias', async () => {
    const c = parseConfig({
      ...base, model_type: 'llama', architectures: ['LlamaForCausalLM'], rope_theta: 500000, attention_bias: true,
      rope_scaling: { rope_type: 'llama3', factor: 32, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 64 },
    });
    expect(c.ropeScaling?.factor).toBe(32);
    expect(c.oBias).toBe(true);
    // Positions well past original_max_position_embeddings / high_freq_factor exercise all three bands.
    const long = Array.from({ length: 40 }, (_, i) => (i * 7) % 53);
    expect(await compare(c, 2, long)).toBeLessThan(1e-4);
  });

  it('SmolLM2-style Llama with tied embeddings and no KV grouping', async () => {
    const c = parseConfig({ ...base, model_type: 'llama', architectures: ['LlamaForCausalLM'], num_key_value_heads: 4, tie_word_embeddings: true, rope_theta: 100000 });
    expect(expectedWeights(c).has('lm_head.weight')).toBe(false);
    expect(await compare(c, 3, ids)).toBeLessThan(1e-4);
  });

  it('refuses what it cannot run, naming the field and value', () => {
    const llama = { ...base, model_type: 'llama' };
    expect(() => parseConfig({ ...llama, model_type: 'gpt2' })).toThrow(/model_type "gpt2" is not supported/);
    expect(() => parseConfig({ ...llama, rope_scaling: { rope_type: 'yarn', factor: 4 } })).toThrow(/rope_scaling type "yarn"/);
    expect(() => parseConfig({ ...llama, hidden_size: undefined })).toThrow(/"hidden_size" is missing/);
    expect(() => parseConfig({ ...llama, num_key_value_heads: 3 })).toThrow(/not a multiple of num_key_value_heads 3/);
    expect(() => parseConfig({ ...llama, architectures: ['LlamaForSequenceClassification'] })).toThrow(/architectures/);
    expect(() => parseConfig({ ...llama, hidden_act: 'gelu' })).toThrow(/hidden_act "gelu"/);
    expect(() => parseConfig('nope')).toThrow(ConfigError);
  });
});
