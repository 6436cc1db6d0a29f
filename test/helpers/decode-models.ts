/**
 * Test helper: the models the fused decoding steps are checked on (test/unit/model/decode-wasm.test.ts,
 * test/webgpu/decode.test.ts): a LoRA adapter that does something, small random Llama-family models
 * of any config, and the parity fixtures as tensors.
 *
 * Example: const m = randomModel({ model_type: 'qwen3', head_dim: 16 }, 4); const a = busyAdapter(m.config, 3);
 */
import * as tf from '@tensorflow/tfjs-core';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { LoraAdapter } from '../../src/core/engine/lora/adapter.ts';
import { expectedWeights, parseConfig, type ModelConfig } from '../../src/core/engine/model/config.ts';
import { CausalLM, PROJECTIONS } from '../../src/core/engine/model/llama.ts';
import { decodeSafetensors } from '../../src/core/engine/model/safetensors.ts';
import { Rng } from '../../src/core/stats/rng.ts';
import { PARITY } from './fixtures.ts';

/** An adapter on every projection with B made non-zero (a fresh one has B = 0: no effect to test). */
export function busyAdapter(c: ModelConfig, seed: number): LoraAdapter {
  const a = LoraAdapter.create(c, { rank: 4, alpha: 8, targetModules: [...PROJECTIONS] }, `fused-${seed}`, seed);
  const rng = new Rng(seed + 100);
  for (const p of a.pairs.values()) p.b.assign(tf.tensor2d(Float32Array.from({ length: p.b.size }, () => 0.2 * (rng.next() - 0.5)), p.b.shape));
  return a;
}

export function randomModel(raw: Record<string, unknown>, seed: number): CausalLM {
  const c = parseConfig({ architectures: ['LlamaForCausalLM'], model_type: 'llama', hidden_size: 48, intermediate_size: 80,
    num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2, vocab_size: 53, rms_norm_eps: 1e-6,
    max_position_embeddings: 4096, ...raw });
  const rng = new Rng(seed);
  const w = new Map<string, tf.Tensor>();
  for (const [name, shape] of expectedWeights(c)) {
    const n = shape.reduce((x, y) => x * y, 1);
    const norm = name.endsWith('norm.weight');
    w.set(name, tf.tensor(Float32Array.from({ length: n }, () => (norm ? 1 + 0.3 * (rng.next() - 0.5) : 0.4 * (rng.next() - 0.5))), shape));
  }
  return new CausalLM(c, w);
}

export async function fixtureModel(name: string): Promise<CausalLM> {
  const c = parseConfig(JSON.parse(readFileSync(path.join(PARITY, name, 'config.json'), 'utf8')));
  const { tensors } = await decodeSafetensors(readFileSync(path.join(PARITY, name, 'model.safetensors')));
  return new CausalLM(c, new Map([...tensors].map(([k, t]) => [k, tf.tensor(t.data, t.shape, 'float32')])));
}

