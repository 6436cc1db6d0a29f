/**
 * `npx tsx scripts/shape-model.ts --shape qwen2.5-0.5b --layers 2 --out .tmp/qwen-shape`: a model folder
 * in the Hugging Face layout with a real model's widths and vocabulary size and random weights, to
 * check before any download that a device can train that model (memory, binding limits, speed).
 *
 * What it writes: config.json (the shape's, with `--layers` of its layers), model.safetensors
 * (seeded N(0, 0.02) weights, norms 1), and the embedded agent's tokenizer (models/agent) with its
 * vocabulary padded to the shape's size by tokens "<fill{id}>" that no text encodes to, so every id
 * the random model samples decodes. Outputs are noise; cost and memory are a real model's.
 *
 * For: the real-shape e2e test (test/e2e/shapes.test.ts) and anyone sizing a GPU.
 * Not for: a trained model (models/, scripts/pretrain.ts) or the benchmarks' in-memory weights (bench/).
 * Flags: --shape smollm2-135m|qwen2.5-0.5b, --layers N (default 2), --seed N (default 0), --out DIR.
 * Example: writeShapeModel('.tmp/smol', 'smollm2-135m', 2) -> '.tmp/smol' with 5 files, 135 MiB of weights.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expectedWeights, parseConfig } from '../src/core/engine/model/config.ts';
import { encodeSafetensors } from '../src/core/engine/model/safetensors.ts';
import { SHAPES, shapeNamed } from '../src/core/engine/model/shapes.ts';
import { Rng } from '../src/core/stats/rng.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const AGENT = path.join(ROOT, 'models/agent');

type Json = Record<string, unknown>;

/** The agent's tokenizer.json with filler tokens appended to its BPE vocabulary up to `size` ids. */
export function paddedTokenizer(size: number): Json {
  const tok = JSON.parse(fs.readFileSync(path.join(AGENT, 'tokenizer.json'), 'utf8')) as { model: { vocab: Record<string, number> } } & Json;
  const vocab = tok.model.vocab;
  const have = Object.keys(vocab).length;
  if (size < have) throw new Error(`shape-model: a vocabulary of ${size} is smaller than the agent tokenizer's ${have}`);
  for (let id = have; id < size; id++) vocab[`<fill${id}>`] = id;
  return tok;
}

/** Writes the model folder (created) and returns its path. */
export function writeShapeModel(dir: string, shape: string, layers = 2, seed = 0): string {
  const s = SHAPES[shapeNamed(shape, 'shape-model')];
  const agentConfig = JSON.parse(fs.readFileSync(path.join(AGENT, 'config.json'), 'utf8')) as Json;
  // The agent tokenizer's special ids (end of turn, padding) replace the real model's.
  const raw = { ...s.config, num_hidden_layers: layers, eos_token_id: agentConfig.eos_token_id, pad_token_id: agentConfig.pad_token_id };
  const config = parseConfig(raw, `${s.label} config`);
  const rng = new Rng(`shape-model:${shape}:${seed}`);
  const tensors = [...expectedWeights(config)].map(([name, dims]) => {
    const data = new Float32Array(dims.reduce((a, b) => a * b, 1));
    if (name.endsWith('norm.weight')) data.fill(1);
    else for (let i = 0; i < data.length; i++) data[i] = rng.normal(0, 0.02);
    return { name, shape: dims, data };
  });
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(raw, null, 2));
  fs.writeFileSync(path.join(dir, 'model.safetensors'), encodeSafetensors(tensors, { format: 'pt' }));
  fs.writeFileSync(path.join(dir, 'tokenizer.json'), JSON.stringify(paddedTokenizer(config.vocabSize)));
  for (const f of ['tokenizer_config.json', 'generation_config.json']) fs.copyFileSync(path.join(AGENT, f), path.join(dir, f));
  return dir;
}

function main(argv: string[]): void {
  const o: Record<string, string> = { shape: 'smollm2-135m', layers: '2', seed: '0' };
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '');
    if (!(key in o) && key !== 'out') throw new Error(`shape-model: unknown flag "${argv[i]}"; flags: --shape ${Object.keys(SHAPES).join('|')} --layers N --seed N --out DIR`);
    o[key] = argv[i + 1];
  }
  if (!o.out) throw new Error('shape-model: --out DIR is required');
  const t0 = Date.now();
  const dir = writeShapeModel(o.out, o.shape, Number(o.layers), Number(o.seed));
  const bytes = fs.statSync(path.join(dir, 'model.safetensors')).size;
  console.log(`${dir}: ${SHAPES[o.shape].label} shape, ${o.layers} layers, ${(bytes / 2 ** 20).toFixed(0)} MiB of weights, in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main(process.argv.slice(2));
