/**
 * Load a checkpoint's weights from a `ModelSource` into tf tensors keyed by Hugging Face name.
 *
 * For: `model.safetensors`, or shards listed in `model.safetensors.index.json` (only the shards
 * that hold needed tensors are fetched), checked name by name and shape by shape against the
 * config before tensors are built.
 * Not for: the transformer itself (llama.ts) or where bytes come from (sources.ts).
 *
 *   const config = parseConfig(await src.readJson('config.json'));
 *   const weights = await loadWeights(src, config, { onProgress: ({ file, loaded, total }) => ... });
 *   weights.get('model.layers.0.self_attn.k_proj.weight')!.shape  // [numKvHeads * headDim, hidden]
 *
 * Memory: each tensor is built (tf.tensor, float32) as soon as its bytes arrived, so at most the
 * finished tensors plus the one being filled are alive, never a second copy of the model.
 * A tied `lm_head.weight` (tie_word_embeddings=true) and rotary `inv_freq` buffers are skipped
 * without being allocated. On any error the tensors built so far are disposed. A vocabulary table
 * larger than `maxTensorBytes` is held as row blocks (vocab-table.ts), each one binding's worth.
 */
import * as tf from '@tensorflow/tfjs-core';
import { expectedWeights, type ModelConfig } from './config.ts';
import { readSafetensors, type SafetensorsEntry } from './safetensors.ts';
import type { ModelSource, ProgressCallback } from './source.ts';
import { blockName, splitTable, VOCAB_TABLES } from './vocab-table.ts';

const SINGLE_FILE = 'model.safetensors';
const INDEX_FILE = 'model.safetensors.index.json';

export class WeightsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WeightsError';
  }
}

export interface LoadWeightsOptions {
  /** Called per chunk of each file read; `file` tells shards apart. */
  onProgress?: ProgressCallback;
  /** Stop between tensors (the built ones are disposed). */
  signal?: AbortSignal;
  /**
   * Largest single tensor, in bytes (default: no limit). A vocabulary table over it (embedding,
   * untied lm_head) is held as row blocks under `<name>#<k>` (vocab-table.ts); loadModel passes the
   * backend's binding limit here.
   */
  maxTensorBytes?: number;
}

/** Tensors a checkpoint may carry that the model does not use. */
function isIgnorable(name: string, c: ModelConfig): boolean {
  return (name === 'lm_head.weight' && c.tieWordEmbeddings) || name.endsWith('inv_freq');
}

const fmt = (shape: number[]) => `[${shape.join(',')}]`;

/** Which config fields make up a weight's expected shape, for error messages. */
function shapeReason(name: string, c: ModelConfig): string {
  const heads = `num_attention_heads=${c.numHeads}, head_dim=${c.headDim}`;
  const kv = `num_key_value_heads=${c.numKvHeads}, head_dim=${c.headDim}`;
  const h = `hidden_size=${c.hiddenSize}`;
  if (/embed_tokens|lm_head/.test(name)) return `vocab_size=${c.vocabSize}, ${h}`;
  if (/q_proj\.weight$/.test(name)) return `${heads}, ${h}`;
  if (/q_proj\.bias$/.test(name)) return heads;
  if (/[kv]_proj\.weight$/.test(name)) return `${kv}, ${h}`;
  if (/[kv]_proj\.bias$/.test(name)) return kv;
  if (/o_proj\.weight$/.test(name)) return `${h}, ${heads}`;
  if (/(gate|up|down)_proj/.test(name)) return `intermediate_size=${c.intermediateSize}, ${h}`;
  if (/[qk]_norm/.test(name)) return `head_dim=${c.headDim}`;
  return h;
}

function listNames(names: string[]): string {
  const shown = names.slice(0, 5).join(', ');
  return names.length > 5 ? `${shown} (and ${names.length - 5} more)` : shown;
}

/**
 * Check the names and shapes one file holds. `mustHold` are the names this file has to provide;
 * `expected` all shapes the config implies. Throws a WeightsError naming tensor, shapes and file.
 */
function checkFile(
  entries: SafetensorsEntry[],
  mustHold: Set<string>,
  expected: Map<string, number[]>,
  c: ModelConfig,
  file: string,
  elsewhere: (name: string) => string | undefined = () => undefined,
): void {
  const seen = new Set<string>();
  const extra: string[] = [];
  for (const t of entries) {
    if (isIgnorable(t.name, c)) continue;
    const want = expected.get(t.name);
    if (!want) {
      extra.push(t.name);
      continue;
    }
    const other = elsewhere(t.name);
    if (!mustHold.has(t.name) && other) {
      throw new WeightsError(
        `${INDEX_FILE} puts ${t.name} in ${other}, but it is in ${file}; the index and the shards disagree, download the checkpoint again.`,
      );
    }
    if (want.length !== t.shape.length || want.some((d, i) => d !== t.shape[i])) {
      throw new WeightsError(
        `config.json and ${file} disagree: ${t.name} has shape ${fmt(t.shape)} in the file but the config implies ${fmt(want)} ` +
          `(${shapeReason(t.name, c)}); use the config.json that came with these weights.`,
      );
    }
    seen.add(t.name);
  }
  if (extra.length) throw extraError(extra, c, file);
  const missing = [...mustHold].filter((n) => !seen.has(n));
  if (missing.length) throw missingError(missing, c, file);
}

function extraError(extra: string[], c: ModelConfig, file: string): WeightsError {
  const layers = extra.map((n) => Number(/^model\.layers\.(\d+)\./.exec(n)?.[1] ?? -1)).filter((i) => i >= c.numLayers);
  const hint = layers.length
    ? ` (the file has layer ${Math.max(...layers)} but config.json says num_hidden_layers=${c.numLayers})`
    : ` (config.json describes a ${c.architecture} with qkv bias ${c.qkvBias}, o_proj bias ${c.oBias}, q/k norm ${c.qkNorm})`;
  return new WeightsError(
    `config.json and ${file} disagree: ${file} holds tensors the config does not describe: ${listNames(extra)}${hint}; ` +
      'use the config.json that came with these weights.',
  );
}

function missingError(missing: string[], c: ModelConfig, file: string): WeightsError {
  let hint = '';
  if (missing.includes('lm_head.weight')) {
    hint = ' (config.json says tie_word_embeddings=false; if the model shares its input and output embeddings, that should be true)';
  } else if (missing.some((n) => /_proj\.bias$/.test(n))) {
    hint = ` (a ${c.modelType} config implies attention biases)`;
  }
  return new WeightsError(
    `config.json and ${file} disagree: ${file} lacks ${listNames(missing)}, which the config needs${hint}; ` +
      'use the config.json that came with these weights, or download the weights again if the file is damaged.',
  );
}

/** Read one safetensors file, checking its header before building anything, into `into`. */
async function loadFile(
  source: ModelSource,
  file: string,
  check: (entries: SafetensorsEntry[]) => void,
  into: Map<string, tf.Tensor>,
  c: ModelConfig,
  opts: LoadWeightsOptions,
): Promise<void> {
  const skip = (name: string) => isIgnorable(name, c);
  for await (const item of readSafetensors(source.stream(file, opts.onProgress), file, { skip })) {
    opts.signal?.throwIfAborted();
    if (item.kind === 'header') {
      check(item.header.tensors);
      continue;
    }
    const { name, shape, data } = item.tensor;
    const limit = opts.maxTensorBytes ?? Infinity;
    if (data.length * 4 > limit && (VOCAB_TABLES as readonly string[]).includes(name)) {
      splitTable(data, shape[0], shape[1], limit).forEach((block, k) => into.set(blockName(name, k), block));
    } else {
      into.set(name, tf.tensor(data, shape, 'float32'));
    }
  }
}

/**
 * All weights `config` needs, as float32 tensors keyed by HF name (tied lm_head absent).
 * Throws WeightsError on any name or shape mismatch, SafetensorsError on a damaged file,
 * ModelSourceError when a file cannot be fetched.
 */
export async function loadWeights(source: ModelSource, config: ModelConfig, opts: LoadWeightsOptions = {}): Promise<Map<string, tf.Tensor>> {
  const expected = expectedWeights(config);
  const built = new Map<string, tf.Tensor>();
  try {
    if (await source.has(SINGLE_FILE)) {
      const all = new Set(expected.keys());
      await loadFile(source, SINGLE_FILE, (entries) => checkFile(entries, all, expected, config, SINGLE_FILE), built, config, opts);
    } else if (await source.has(INDEX_FILE)) {
      const weightMap = await readIndex(source, expected, config);
      const files = [...new Set([...weightMap].filter(([n]) => expected.has(n)).map(([, f]) => f))].sort();
      for (const file of files) {
        const mustHold = new Set([...weightMap].filter(([n, f]) => f === file && expected.has(n)).map(([n]) => n));
        const check = (entries: SafetensorsEntry[]) => checkFile(entries, mustHold, expected, config, file, (n) => weightMap.get(n));
        await loadFile(source, file, check, built, config, opts);
      }
    } else {
      throw new WeightsError(
        `${source.name} has neither ${SINGLE_FILE} nor ${INDEX_FILE}; this loader reads Hugging Face safetensors checkpoints ` +
          '(pytorch_model.bin, GGUF and ONNX files are not supported).',
      );
    }
    const absent = [...expected.keys()].filter((n) => !built.has(n) && !built.has(blockName(n, 0)));
    if (absent.length) throw missingError(absent, config, source.name);
    return built;
  } catch (e) {
    for (const t of built.values()) t.dispose();
    throw e;
  }
}

/** Parse the shard index and check its names against the config (before fetching any shard). */
async function readIndex(source: ModelSource, expected: Map<string, number[]>, c: ModelConfig): Promise<Map<string, string>> {
  const index = await source.readJson<{ weight_map?: unknown }>(INDEX_FILE);
  const raw = index?.weight_map;
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new WeightsError(`${INDEX_FILE} in ${source.name} has no "weight_map" object (tensor name -> shard file); download it again.`);
  }
  const weightMap = new Map<string, string>();
  for (const [name, file] of Object.entries(raw)) {
    if (typeof file !== 'string') throw new WeightsError(`${INDEX_FILE}: weight_map["${name}"] must be a file name, got ${JSON.stringify(file)}.`);
    weightMap.set(name, file);
  }
  const extra = [...weightMap.keys()].filter((n) => !expected.has(n) && !isIgnorable(n, c));
  if (extra.length) throw extraError(extra, c, INDEX_FILE);
  const missing = [...expected.keys()].filter((n) => !weightMap.has(n));
  if (missing.length) throw missingError(missing, c, INDEX_FILE);
  return weightMap;
}
