/**
 * Tiny random model folders (HF layout: config.json, model.safetensors, tokenizer files) for the
 * sandbox e2e tests: `models/agent` stand-ins while the shipped models are absent, and a hub-layout
 * copy (<dir>/resolve/main/<file>) for the URL loader test. Outputs are noise; the tests exercise
 * the page's plumbing, not a skilled team.
 *
 * Example: const dir = writeTinyModel(path.join(resultsDir, 'tiny-models/agent'));
 */
import fs from 'node:fs';
import path from 'node:path';
import { expectedWeights, parseConfig } from '../../src/core/model/config.ts';
import { encodeSafetensors } from '../../src/core/model/safetensors.ts';
import { Rng } from '../../src/core/tasks/rng.ts';
import { tokenizerConfig, tokenizerJson, trainBpe } from '../../scripts/pretrain/bpe.ts';

export function tinyModelFiles(seed = 0, hidden = 32): Record<string, Uint8Array | string> {
  const bpe = trainBpe(['Problem: Answer: Result: \\boxed{12} print(3 + 4) The answer is 7.'], { vocabSize: 300 });
  const rawConfig = {
    architectures: ['LlamaForCausalLM'], model_type: 'llama', hidden_size: hidden, intermediate_size: 2 * hidden,
    num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2, vocab_size: bpe.vocab.size,
    max_position_embeddings: 2048, rms_norm_eps: 1e-5, rope_theta: 10000, tie_word_embeddings: true,
    eos_token_id: bpe.vocab.get('<|im_end|>'),
  };
  const config = parseConfig(rawConfig);
  const rng = new Rng(`tiny-sandbox:${seed}`);
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

/** Writes the files into `dir` (created) and returns it. */
export function writeTinyModel(dir: string, seed = 0, hidden = 32): string {
  fs.mkdirSync(dir, { recursive: true });
  for (const [name, data] of Object.entries(tinyModelFiles(seed, hidden))) fs.writeFileSync(path.join(dir, name), data);
  return dir;
}
