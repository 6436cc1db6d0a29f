/**
 * Writing a trained tiny model as a Hugging Face folder: config.json for a Llama of the given size,
 * then every file the loader reads (tokenizer, generation settings) and model.safetensors.
 *
 * For: the pretraining scripts (scripts/pretrain-relay.ts). Not for: loading (src/core/engine/model/load.ts).
 * Example: await writeModelFolder('models/relay', llamaConfigJson({hidden: 64, layers: 2, ...}), files, weights)
 */
import * as tf from '@tensorflow/tfjs-core';
import { mkdir, writeFile } from 'node:fs/promises';
import { expectedWeights, parseConfig } from '../../src/core/engine/model/config.ts';
import { encodeSafetensors } from '../../src/core/engine/model/safetensors.ts';

export interface LlamaSize {
  vocabSize: number;
  hidden: number;
  layers: number;
  heads: number;
  kvHeads: number;
  /** MLP width (SwiGLU), e.g. 3 x hidden. */
  intermediate: number;
  positions: number;
  eosTokenId: number;
  padTokenId: number;
}

/** config.json of a tied-embedding Llama (the project's tiny models' architecture). */
export function llamaConfigJson(s: LlamaSize): Record<string, unknown> {
  return {
    architectures: ['LlamaForCausalLM'], model_type: 'llama', vocab_size: s.vocabSize, hidden_size: s.hidden,
    intermediate_size: s.intermediate, num_hidden_layers: s.layers, num_attention_heads: s.heads, num_key_value_heads: s.kvHeads,
    head_dim: s.hidden / s.heads, hidden_act: 'silu', max_position_embeddings: s.positions, rms_norm_eps: 1e-5, rope_theta: 10000,
    rope_scaling: null, attention_bias: false, mlp_bias: false, tie_word_embeddings: true, initializer_range: 0.02,
    eos_token_id: s.eosTokenId, pad_token_id: s.padTokenId, torch_dtype: 'float32', use_cache: true,
  };
}

/** Writes `files` (name -> JSON or text) and the weights, in the order config.json lists them. */
export async function writeModelFolder(dir: string, files: Record<string, unknown>, weights: Map<string, tf.Tensor>): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (const [name, content] of Object.entries(files)) {
    await writeFile(`${dir}/${name}`, typeof content === 'string' ? content : JSON.stringify(content, null, 2) + '\n');
  }
  const config = parseConfig(files['config.json'] as Record<string, unknown>);
  const tensors = [];
  for (const [name, shape] of expectedWeights(config)) tensors.push({ name, shape, data: (await weights.get(name)!.data()) as Float32Array });
  await writeFile(`${dir}/model.safetensors`, encodeSafetensors(tensors, { format: 'pt' }));
}
