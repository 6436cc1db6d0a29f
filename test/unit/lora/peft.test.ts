/**
 * LoRA adapters against PEFT: the fixture adapter (made by PEFT over all seven projections of the
 * qwen2 fixture) reproduces transformers' merged and unmerged logits; export -> import is exact;
 * malformed adapters are refused with the key and the reason.
 */
import * as tf from '@tensorflow/tfjs-core';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/core/engine/backend.ts';
import { LoraAdapter } from '../../../src/core/engine/lora/adapter.ts';
import { exportPeft, exportWeights, importPeft, mergeAdapter, peftConfig, peftKey } from '../../../src/core/engine/lora/peft.ts';
import { CausalLM } from '../../../src/core/engine/model/llama.ts';
import { loadModel, type LoadedModel } from '../../../src/core/engine/model/load.ts';
import { encodeSafetensors } from '../../../src/core/engine/model/safetensors.ts';
import { folderSource, memorySource } from '../../../src/core/engine/model/sources.ts';
import { PARITY, maxAbsDiff } from '../../helpers/fixtures.ts';

const LORA = path.join(PARITY, 'qwen2_lora');
const ref = JSON.parse(readFileSync(path.join(LORA, 'reference.json'), 'utf8'));

async function logitsOf(model: CausalLM, ids: number[], adapter?: LoraAdapter): Promise<number[][]> {
  const { logits } = model.forward([ids], { adapter });
  const rows = ((await logits.array()) as number[][][])[0];
  logits.dispose();
  return rows;
}

describe('LoRA adapters and PEFT files', () => {
  let base: LoadedModel;
  beforeAll(async () => {
    await initBackend({ force: 'cpu' });
    base = await loadModel(folderSource(path.join(PARITY, 'qwen2')));
  });
  afterAll(() => base.model.dispose());

  it('a fresh adapter leaves the outputs unchanged (B = 0)', async () => {
    const a = LoraAdapter.create(base.config, { rank: 4, targetModules: ['q_proj', 'v_proj', 'down_proj'] }, 'fresh', 1);
    expect(await logitsOf(base.model, ref.input_ids, a)).toEqual(await logitsOf(base.model, ref.input_ids));
    // A is not zero, so training it moves the model.
    expect(tf.max(tf.abs(a.pairs.get('0.q_proj')!.a)).dataSync()[0]).toBeGreaterThan(0);
    a.dispose();
  });

  it('the PEFT fixture matches transformers unmerged (base + scaled LoRA path) and merged', async () => {
    const a = await importPeft(folderSource(LORA), base.config, 'peft');
    expect(a.scale).toBe(ref.scaling);
    expect(a.settings.targetModules.length).toBe(7);
    const unmerged = await logitsOf(base.model, ref.input_ids, a);
    expect(maxAbsDiff(unmerged, ref.logits_unmerged)).toBeLessThan(1e-4);
    const merged = new CausalLM(base.config, mergeAdapter(base.model, a));
    expect(maxAbsDiff(await logitsOf(merged, ref.input_ids), ref.logits_merged)).toBeLessThan(1e-4);
    // The two paths are genuinely different computations (transformers' own gap is ~1e-5).
    expect(ref.max_abs_diff_merged_vs_unmerged).toBeGreaterThan(1e-6);
    merged.dispose();
    a.dispose();
  });

  it('export -> import round trip is exact, and the files are PEFT-shaped', async () => {
    const a = LoraAdapter.create(base.config, { rank: 4, alpha: 8, targetModules: ['k_proj', 'gate_proj'] }, 'solver', 3);
    for (const v of a.variables()) v.assign(tf.randomNormal(v.shape, 0, 0.1, 'float32', 5));
    const files = await exportPeft(a, 'base');
    const cfg = JSON.parse(new TextDecoder().decode(files['adapter_config.json']));
    expect(cfg).toMatchObject({ peft_type: 'LORA', r: 4, lora_alpha: 8, bias: 'none', task_type: 'CAUSAL_LM', target_modules: ['k_proj', 'gate_proj'] });
    const b = await importPeft(memorySource(files), base.config, 'again');
    const va = await a.values();
    const vb = await b.values();
    expect([...vb.keys()]).toEqual([...va.keys()]);
    for (const [k, v] of va) {
      expect(vb.get(k)!.a).toEqual(v.a);
      expect(vb.get(k)!.b).toEqual(v.b);
    }
    expect(await logitsOf(base.model, ref.input_ids, b)).toEqual(await logitsOf(base.model, ref.input_ids, a));
    a.dispose();
    b.dispose();
  });

  it('a merged full model.safetensors reloads through the normal loader with the same logits', async () => {
    const a = await importPeft(folderSource(LORA), base.config, 'peft2');
    const merged = mergeAdapter(base.model, a);
    const bytes = await exportWeights(base.config, merged);
    const reloaded = await loadModel(memorySource({ 'config.json': readFileSync(path.join(PARITY, 'qwen2/config.json'), 'utf8'), 'model.safetensors': bytes }));
    expect(maxAbsDiff(await logitsOf(reloaded.model, ref.input_ids), ref.logits_merged)).toBeLessThan(1e-4);
    reloaded.model.dispose();
    for (const t of merged.values()) t.dispose();
    a.dispose();
  });

  it('refuses unknown keys, wrong shapes, missing keys and unsupported configs', async () => {
    const a = LoraAdapter.create(base.config, { rank: 2, targetModules: ['q_proj'] }, 'bad', 0);
    const good = await exportPeft(a);
    const cfgText = new TextDecoder().decode(good['adapter_config.json']);
    const r = 2, h = base.config.hiddenSize;
    const tensorsFor = (extra: { name: string; shape: number[] }[]) =>
      encodeSafetensors(extra.map((t) => ({ ...t, data: new Float32Array(t.shape.reduce((x, y) => x * y, 1)) })));
    const all = Array.from({ length: base.config.numLayers }, (_, i) => [
      { name: peftKey(i, 'q_proj', 'A'), shape: [r, h] }, { name: peftKey(i, 'q_proj', 'B'), shape: [h, r] }]).flat();
    await expect(importPeft(memorySource({ 'adapter_config.json': cfgText, 'adapter_model.safetensors': tensorsFor([...all, { name: 'base_model.model.lm_head.lora_A.weight', shape: [r, h] }]) }), base.config, 'x'))
      .rejects.toThrow(/unexpected key "base_model.model.lm_head.lora_A.weight"/);
    await expect(importPeft(memorySource({ 'adapter_config.json': cfgText, 'adapter_model.safetensors': tensorsFor([{ ...all[0], shape: [r, h + 1] }, ...all.slice(1)]) }), base.config, 'x'))
      .rejects.toThrow(/has shape \[2,65\] but the base model and r=2 need \[2,64\]/);
    await expect(importPeft(memorySource({ 'adapter_config.json': cfgText, 'adapter_model.safetensors': tensorsFor(all.slice(1)) }), base.config, 'x'))
      .rejects.toThrow(/missing "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"/);
    const dora = JSON.stringify({ ...peftConfig(a), use_dora: true });
    await expect(importPeft(memorySource({ 'adapter_config.json': dora, 'adapter_model.safetensors': good['adapter_model.safetensors'] }), base.config, 'x'))
      .rejects.toThrow(/use_dora/);
    await expect(importPeft(memorySource({ 'adapter_config.json': '{"peft_type": "IA3"}', 'adapter_model.safetensors': good['adapter_model.safetensors'] }), base.config, 'x'))
      .rejects.toThrow(/peft_type "IA3"/);
    a.dispose();
  });
});

describe('the PEFT fixture on wasm (frozen weights stored transposed there)', () => {
  it('unmerged and merged logits match transformers; hfWeight gives the checkpoint layout back', async () => {
    await initBackend({ force: 'wasm' });
    const base = await loadModel(folderSource(path.join(PARITY, 'qwen2')));
    expect(base.model.inOut.size).toBeGreaterThan(0);
    const q = base.model.hfWeight('model.layers.0.self_attn.q_proj.weight');
    expect(q.shape).toEqual([64, 64]);
    expect(base.model.hfWeight('model.layers.0.mlp.down_proj.weight').shape).toEqual([64, 128]);
    q.dispose();
    const a = await importPeft(folderSource(LORA), base.config, 'peft-wasm');
    expect(maxAbsDiff(await logitsOf(base.model, ref.input_ids, a), ref.logits_unmerged)).toBeLessThan(1e-4);
    const merged = new CausalLM(base.config, mergeAdapter(base.model, a));
    expect(maxAbsDiff(await logitsOf(merged, ref.input_ids), ref.logits_merged)).toBeLessThan(1e-4);
    merged.dispose();
    a.dispose();
    base.model.dispose();
  });
});
