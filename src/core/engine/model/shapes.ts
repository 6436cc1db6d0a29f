/**
 * The real model shapes the project measures and tests against: the config.json of
 * HuggingFaceTB/SmolLM2-135M and Qwen/Qwen2.5-0.5B, minus fields the engine ignores.
 *
 * For: benchmarks at a real shape (bench/), models of a real shape with random weights
 * (scripts/shape-model.ts, the real-shape e2e test), memory-plan checks. Not for: loading a real
 * checkpoint (its own config.json is read then).
 *
 * Example: shapeConfig('qwen2.5-0.5b', 2).vocabSize === 151936  (2 of its 24 layers)
 */
import { parseConfig, type ModelConfig } from './config.ts';

export const SMOLLM2_135M_CONFIG = {
  model_type: 'llama',
  architectures: ['LlamaForCausalLM'],
  hidden_size: 576,
  intermediate_size: 1536,
  num_hidden_layers: 30,
  num_attention_heads: 9,
  num_key_value_heads: 3,
  vocab_size: 49152,
  rms_norm_eps: 1e-5,
  rope_theta: 100000,
  max_position_embeddings: 8192,
  tie_word_embeddings: true,
};

/** Qwen2.5-0.5B (q/k/v bias: Qwen2; its 151,936-row embedding is 519 MiB in float32). */
export const QWEN25_05B_CONFIG = {
  model_type: 'qwen2',
  architectures: ['Qwen2ForCausalLM'],
  hidden_size: 896,
  intermediate_size: 4864,
  num_hidden_layers: 24,
  num_attention_heads: 14,
  num_key_value_heads: 2,
  vocab_size: 151936,
  rms_norm_eps: 1e-6,
  rope_theta: 1000000,
  max_position_embeddings: 32768,
  tie_word_embeddings: true,
};

/** Real shapes by name (the benchmarks' `--shape`). */
export const SHAPES: Record<string, { label: string; config: Record<string, unknown> }> = {
  'smollm2-135m': { label: 'SmolLM2-135M', config: SMOLLM2_135M_CONFIG },
  'qwen2.5-0.5b': { label: 'Qwen2.5-0.5B', config: QWEN25_05B_CONFIG },
};

/** The shape named `name`, or a clear error listing the known ones; `who` names the caller. */
export function shapeNamed(name: string, who: string): string {
  if (!(name in SHAPES)) throw new Error(`${who}: unknown shape "${name}"; use one of ${Object.keys(SHAPES).join(', ')}`);
  return name;
}

/** A real shape with `layers` of its layers (all when omitted), parsed. */
export function shapeConfig(name: string, layers?: number): ModelConfig {
  const s = SHAPES[shapeNamed(name, 'shapeConfig')];
  return parseConfig({ ...s.config, ...(layers ? { num_hidden_layers: layers } : {}) }, `${s.label} config`);
}
