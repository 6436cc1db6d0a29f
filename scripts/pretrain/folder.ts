/**
 * A trained tiny model as a Hugging Face folder: config.json for a Llama of the given size, every file
 * the loader reads (tokenizer, generation settings) and model.safetensors; written, and read back as
 * parts to train on.
 *
 * For: the pretraining scripts (scripts/pretrain.ts, scripts/pretrain-relay.ts). Not for: loading a
 * model to run it (src/core/engine/model/load.ts).
 * Example: await writeModelFolder('models/relay', { 'config.json': llamaConfigJson({hidden: 64, layers: 2, ...}), ... }, weights);
 *          const parts = await readModelFolder('models/relay', 2048);   // parts.weights: trainable variables
 */
import * as tf from '@tensorflow/tfjs-core';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { expectedWeights, parseConfig } from '../../src/core/engine/model/config.ts';
import { decodeSafetensors, encodeSafetensors } from '../../src/core/engine/model/safetensors.ts';

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

/** A model's folder contents while it is made: tokenizer and config JSON, and the weights (trained in place). */
export interface ModelParts {
  tokJson: Record<string, unknown>;
  tokConfig: Record<string, unknown>;
  configJson: Record<string, unknown>;
  weights: Map<string, tf.Variable>;
}

/** A model folder read back to train on: its JSON files with the context length set to `maxTokens`, and its weights as trainable variables. */
export async function readModelFolder(dir: string, maxTokens: number): Promise<ModelParts> {
  const tokJson: Record<string, unknown> = JSON.parse(await readFile(`${dir}/tokenizer.json`, 'utf8'));
  const tokConfig: Record<string, unknown> = { ...JSON.parse(await readFile(`${dir}/tokenizer_config.json`, 'utf8')), model_max_length: maxTokens };
  const configJson: Record<string, unknown> = { ...JSON.parse(await readFile(`${dir}/config.json`, 'utf8')), max_position_embeddings: maxTokens };
  const { tensors } = await decodeSafetensors(new Uint8Array(await readFile(`${dir}/model.safetensors`)), `${dir}/model.safetensors`);
  const weights = new Map([...tensors].map(([name, t]) => [name, tf.variable(tf.tensor(t.data, t.shape), true, name)]));
  return { tokJson, tokConfig, configJson, weights };
}
