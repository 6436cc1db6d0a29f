// loadWeights: the transformers-written fixtures, plus checkpoints synthesized with encodeSafetensors
// in a temp dir (truncated, shape mismatch, bad dtype, sharded, F16/BF16).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import { expectedWeights, parseConfig, type ModelConfig } from '../../../src/core/engine/model/config.ts';
import { encodeSafetensors, SafetensorsError, type SafetensorsDtype, type TensorToEncode } from '../../../src/core/engine/model/safetensors.ts';
import { folderSource, memorySource } from '../../../src/core/engine/model/sources.ts';
import type { ModelSource } from '../../../src/core/engine/model/source.ts';
import { loadWeights, WeightsError } from '../../../src/core/engine/model/weights.ts';

const repoRoot = path.resolve(__dirname, '../../..');
const fixture = (m: string) => path.join(repoRoot, 'test/fixtures/parity', m);
const rawConfig = (m: string) => JSON.parse(readFileSync(path.join(fixture(m), 'config.json'), 'utf8'));

/** Independent parse of an F32 safetensors file: JSON header + DataView floats, in header order. */
function rawTensors(file: string): TensorToEncode[] {
  const bytes = readFileSync(file);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  const n = Number(view.getBigUint64(0, true));
  const header = JSON.parse(bytes.subarray(8, 8 + n).toString('utf8'));
  return Object.entries(header)
    .filter(([k]) => k !== '__metadata__')
    .map(([name, e]) => {
      const { shape, data_offsets } = e as { shape: number[]; data_offsets: [number, number] };
      const data = new Float32Array((data_offsets[1] - data_offsets[0]) / 4);
      for (let i = 0; i < data.length; i++) data[i] = view.getFloat32(8 + n + data_offsets[0] + 4 * i, true);
      return { name, shape, data };
    });
}

let tmp = '';
let llamaConfig: ModelConfig;
let llamaRaw: TensorToEncode[];

/** A temp model folder with the given config (raw JSON) and files. */
function folder(name: string, config: object, files: Record<string, Uint8Array | string>): ModelSource {
  const dir = path.join(tmp, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir);
  writeFileSync(path.join(dir, 'config.json'), JSON.stringify(config));
  for (const [f, v] of Object.entries(files)) writeFileSync(path.join(dir, f), v);
  return folderSource(dir);
}

function dispose(m: Map<string, tf.Tensor>) {
  for (const t of m.values()) t.dispose();
}

async function expectNothingLeaks(p: Promise<unknown>, error: RegExp | string, kind: Function = WeightsError) {
  const before = tf.memory().numTensors;
  const err = await p.then(
    () => null,
    (e) => e,
  );
  expect(err).toBeInstanceOf(kind);
  expect((err as Error).message).toMatch(error);
  expect(tf.memory().numTensors).toBe(before);
}

beforeAll(async () => {
  await tf.setBackend('cpu');
  tmp = mkdtempSync(path.join(os.tmpdir(), 'mappa-weights-'));
  llamaConfig = parseConfig(rawConfig('llama'));
  llamaRaw = rawTensors(path.join(fixture('llama'), 'model.safetensors'));
});

afterAll(() => {
  rmSync(tmp, { recursive: true, force: true });
});

describe('loadWeights on the transformers fixtures', () => {
  it('llama: every expected weight, with the bytes the file holds', async () => {
    const before = tf.memory().numTensors;
    const weights = await loadWeights(folderSource(fixture('llama')), llamaConfig);
    const expected = expectedWeights(llamaConfig);
    expect([...weights.keys()].sort()).toEqual([...expected.keys()].sort());
    expect(tf.memory().numTensors).toBe(before + expected.size);
    for (const { name, shape, data } of llamaRaw) {
      const t = weights.get(name)!;
      expect(t.shape).toEqual(shape);
      expect(t.dtype).toBe('float32');
      expect(Buffer.from((t.dataSync() as Float32Array).buffer).equals(Buffer.from(data.buffer))).toBe(true);
    }
    expect(weights.get('model.layers.0.self_attn.k_proj.weight')!.shape).toEqual([32, 64]);
    dispose(weights);
  });

  it('qwen2 (tied embeddings, q/k/v bias): no lm_head, biases present', async () => {
    const config = parseConfig(rawConfig('qwen2'));
    const weights = await loadWeights(folderSource(fixture('qwen2')), config);
    expect(weights.has('lm_head.weight')).toBe(false);
    expect(weights.get('model.layers.1.self_attn.k_proj.bias')!.shape).toEqual([32]);
    expect(weights.size).toBe(expectedWeights(config).size);
    dispose(weights);
  });
});

describe('loadWeights refuses mismatches before building tensors', () => {
  it('names tensor, both shapes, the config fields and the fix', async () => {
    const src = folder('kv4', { ...rawConfig('llama'), num_key_value_heads: 4 }, {
      'model.safetensors': readFileSync(path.join(fixture('llama'), 'model.safetensors')),
    });
    const config = parseConfig(await src.readJson('config.json'));
    await expectNothingLeaks(
      loadWeights(src, config),
      'config.json and model.safetensors disagree: model.layers.0.self_attn.k_proj.weight has shape [32,64] in the file ' +
        'but the config implies [64,64] (num_key_value_heads=4, head_dim=16, hidden_size=64); use the config.json that came with these weights',
    );
  });

  it('missing and extra layers', async () => {
    const src = folderSource(fixture('llama'));
    await expectNothingLeaks(
      loadWeights(src, parseConfig({ ...rawConfig('llama'), num_hidden_layers: 4 })),
      /model.safetensors lacks model.layers.3.input_layernorm.weight, .* \(and 4 more\), which the config needs/,
    );
    await expectNothingLeaks(
      loadWeights(src, parseConfig({ ...rawConfig('llama'), num_hidden_layers: 2 })),
      /holds tensors the config does not describe: model.layers.2.*the file has layer 2 but config.json says num_hidden_layers=2/,
    );
  });

  it('untied config without lm_head says so; tied config ignores a present lm_head', async () => {
    await expectNothingLeaks(
      loadWeights(folderSource(fixture('qwen2')), parseConfig({ ...rawConfig('qwen2'), tie_word_embeddings: false })),
      /lacks lm_head.weight, which the config needs \(config.json says tie_word_embeddings=false/,
    );
    const before = tf.memory().numTensors;
    const tied = await loadWeights(folderSource(fixture('llama')), parseConfig({ ...rawConfig('llama'), tie_word_embeddings: true }));
    expect(tied.has('lm_head.weight')).toBe(false);
    expect(tf.memory().numTensors).toBe(before + tied.size);
    dispose(tied);
  });

  it('ignores rotary inv_freq buffers', async () => {
    const withInvFreq = [...llamaRaw, { name: 'model.layers.0.self_attn.rotary_emb.inv_freq', shape: [8], data: new Float32Array(8) }];
    const src = memorySource({ 'model.safetensors': encodeSafetensors(withInvFreq) });
    const weights = await loadWeights(src, llamaConfig);
    expect(weights.size).toBe(expectedWeights(llamaConfig).size);
    dispose(weights);
  });

  it('a truncated file: SafetensorsError, and the tensors built so far are disposed', async () => {
    const full = readFileSync(path.join(fixture('llama'), 'model.safetensors'));
    const src = folder('truncated', rawConfig('llama'), { 'model.safetensors': full.subarray(0, full.length - 1000) });
    await expectNothingLeaks(loadWeights(src, llamaConfig), /model.safetensors is truncated: expected \d+ bytes of tensor data, got \d+/, SafetensorsError);
  });

  it('an unsupported dtype is refused by name', async () => {
    const bytes = encodeSafetensors(llamaRaw);
    // Same byte sizes: relabel one F32 tensor as I32 in the header text.
    const n = Number(new DataView(bytes.buffer).getBigUint64(0, true));
    const header = new TextDecoder().decode(bytes.subarray(8, 8 + n));
    const relabeled = header.replace('"model.norm.weight":{"dtype":"F32"', '"model.norm.weight":{"dtype":"I32"');
    expect(relabeled).not.toBe(header);
    bytes.set(new TextEncoder().encode(relabeled), 8);
    const src = memorySource({ 'model.safetensors': bytes });
    await expectNothingLeaks(loadWeights(src, llamaConfig), /tensor "model.norm.weight" has dtype "I32"/, SafetensorsError);
  });

  it('a folder without safetensors says what it reads', async () => {
    await expectNothingLeaks(loadWeights(memorySource({}, 'empty'), llamaConfig), /empty has neither model.safetensors nor model.safetensors.index.json/);
  });
});

describe('sharded checkpoints', () => {
  const half = () => Math.ceil(llamaRaw.length / 2);
  const shards = () => ({
    'model-00001-of-00002.safetensors': encodeSafetensors(llamaRaw.slice(0, half()), { format: 'pt' }),
    'model-00002-of-00002.safetensors': encodeSafetensors(llamaRaw.slice(half()), { format: 'pt' }),
  });
  const index = (extra: Record<string, string> = {}) => {
    const weight_map: Record<string, string> = { ...extra };
    llamaRaw.forEach((t, i) => (weight_map[t.name] = `model-0000${i < half() ? 1 : 2}-of-00002.safetensors`));
    return JSON.stringify({ metadata: { total_size: 0 }, weight_map });
  };

  it('loads the same values as the single file, fetching only the shards it needs', async () => {
    const streamed: string[] = [];
    const mem = memorySource({
      ...shards(),
      'model-00003-of-00002.safetensors': 'never read',
      'model.safetensors.index.json': index({ 'model.rotary_emb.inv_freq': 'model-00003-of-00002.safetensors' }),
    });
    const src: ModelSource = { ...mem, name: mem.name, stream: (f, p) => (streamed.push(f), mem.stream(f, p)) };
    const files = new Set<string>();
    const sharded = await loadWeights(src, llamaConfig, { onProgress: ({ file }) => files.add(file) });
    expect(streamed).toEqual(['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors']);
    expect([...files]).toEqual(streamed);
    const single = await loadWeights(folderSource(fixture('llama')), llamaConfig);
    expect([...sharded.keys()].sort()).toEqual([...single.keys()].sort());
    for (const [name, t] of single) expect(Array.from(sharded.get(name)!.dataSync())).toEqual(Array.from(t.dataSync()));
    dispose(sharded);
    dispose(single);
  });

  it('checks the index against the config before fetching a shard', async () => {
    const src = memorySource({ ...shards(), 'model.safetensors.index.json': index() });
    await expectNothingLeaks(
      loadWeights(src, parseConfig({ ...rawConfig('llama'), num_hidden_layers: 2 })),
      /config.json and model.safetensors.index.json disagree: .*num_hidden_layers=2/,
    );
  });

  it('refuses a shard that lacks what the index promises, disposing the first shard', async () => {
    const s = shards();
    const second = llamaRaw.slice(half());
    s['model-00002-of-00002.safetensors'] = encodeSafetensors(second.slice(1));
    const src = memorySource({ ...s, 'model.safetensors.index.json': index() });
    await expectNothingLeaks(loadWeights(src, llamaConfig), `model-00002-of-00002.safetensors lacks ${second[0].name}`);
  });

  it('checks shapes in each shard header', async () => {
    const s = shards();
    const second = llamaRaw.slice(half());
    const k = second.findIndex((t) => t.shape.length === 2 && t.shape[0] !== t.shape[1]);
    const { name, shape } = second[k];
    second[k] = { ...second[k], shape: [shape[1], shape[0]] };
    s['model-00002-of-00002.safetensors'] = encodeSafetensors(second);
    const src = memorySource({ ...s, 'model.safetensors.index.json': index() });
    await expectNothingLeaks(
      loadWeights(src, llamaConfig),
      `config.json and model-00002-of-00002.safetensors disagree: ${name} has shape [${shape[1]},${shape[0]}] in the file but the config implies [${shape}]`,
    );
  });
});

describe('half-precision checkpoints', () => {
  for (const [dtype, unit] of [
    ['F16', 2 ** -11],
    ['BF16', 2 ** -8],
  ] as [SafetensorsDtype, number][]) {
    it(`${dtype}: values within half a unit in the last place of the float32 originals`, async () => {
      const src = folder(dtype, rawConfig('llama'), { 'model.safetensors': encodeSafetensors(llamaRaw.map((t) => ({ ...t, dtype }))) });
      const weights = await loadWeights(src, llamaConfig);
      for (const { name, data } of llamaRaw) {
        const got = weights.get(name)!.dataSync();
        let worst = 0; // error / allowed error; <= 1 passes
        for (let i = 0; i < data.length; i++) {
          const x = data[i];
          // Relative rounding error <= 2^-(mantissa bits + 1); F16 subnormals: absolute <= 2^-25.
          worst = Math.max(worst, Math.abs(got[i] - x) / Math.max(Math.abs(x) * unit, dtype === 'F16' ? 2 ** -25 : 1e-45));
        }
        expect(worst, name).toBeLessThanOrEqual(1);
      }
      dispose(weights);
    });
  }
});
