/**
 * A tiny random Llama with a real byte-level BPE tokenizer and ChatML template — enough to run the
 * whole MAPPA loop (or the page) in a test in seconds. Its outputs are noise; tests of plumbing do
 * not need a skilled team.
 *
 * Example: const m = await tinyTeamModel(1);                 // loaded through the normal loader
 *          writeTinyModel('test-results/tiny-models/agent');  // the same files in an HF folder
 */
import fs from 'node:fs';
import path from 'node:path';
import { loadModel, type LoadedModel } from '../../src/core/engine/model/load.ts';
import { expectedWeights, parseConfig } from '../../src/core/engine/model/config.ts';
import { encodeSafetensors } from '../../src/core/engine/model/safetensors.ts';
import { memorySource } from '../../src/core/engine/model/sources.ts';
import { Rng } from '../../src/core/stats/rng.ts';
import { tokenizerConfig, tokenizerJson, trainBpe } from '../../scripts/pretrain/bpe.ts';

/** The files of a tiny random model folder: config.json, model.safetensors, tokenizer files. */
export function tinyModelFiles(seed = 0, hidden = 32): Record<string, Uint8Array | string> {
  const bpe = trainBpe(['Problem: Answer: Result: \\boxed{12} print(3 + 4) The answer is 7.'], { vocabSize: 300 });
  const rawConfig = {
    architectures: ['LlamaForCausalLM'], model_type: 'llama', hidden_size: hidden, intermediate_size: 2 * hidden,
    num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2, vocab_size: bpe.vocab.size,
    max_position_embeddings: 2048, rms_norm_eps: 1e-5, rope_theta: 10000, tie_word_embeddings: true,
    eos_token_id: bpe.vocab.get('<|im_end|>'),
  };
  const config = parseConfig(rawConfig);
  const rng = new Rng(`tiny-team:${seed}`);
  const tensors = [...expectedWeights(config)].map(([name, shape]) => {
    const data = new Float32Array(shape.reduce((a, b) => a * b, 1));
    for (let i = 0; i < data.length; i++) data[i] = name.endsWith('norm.weight') ? 1 : rng.normal(0, 0.2);
    return { name, shape, data };
  });
  return {
    'config.json': JSON.stringify(rawConfig),
    'model.safetensors': encodeSafetensors(tensors),
    'tokenizer.json': JSON.stringify(tokenizerJson(bpe)),
    'tokenizer_config.json': JSON.stringify(tokenizerConfig(bpe, 2048)),
  };
}

export async function tinyTeamModel(seed = 0, hidden = 32): Promise<LoadedModel> {
  return loadModel(memorySource(tinyModelFiles(seed, hidden), `tiny-team-${seed}`));
}

/** Writes a tiny model folder into `dir` (created) and returns it. */
export function writeTinyModel(dir: string, seed = 0, hidden = 32): string {
  fs.mkdirSync(dir, { recursive: true });
  for (const [name, data] of Object.entries(tinyModelFiles(seed, hidden))) fs.writeFileSync(path.join(dir, name), data);
  return dir;
}
