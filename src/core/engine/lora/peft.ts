/**
 * PEFT interoperability: an adapter as `adapter_model.safetensors` + `adapter_config.json`, the
 * files PEFT's `PeftModel.from_pretrained` and vLLM's LoRA loader read, and merged full weights.
 *
 * For: export, import (with refusal of anything we cannot represent) and merging.
 * Not for: the adapter's maths (adapter.ts).
 *
 * Key names, as PEFT saves a LoRA over a causal LM (the adapter name "default" is not stored):
 *   base_model.model.model.layers.{i}.self_attn.q_proj.lora_A.weight   [r, in]
 *   base_model.model.model.layers.{i}.mlp.down_proj.lora_B.weight      [out, r]
 * and delta W = B A * lora_alpha / r  (or / sqrt(r) with use_rslora).
 */
import * as tf from '@tensorflow/tfjs-core';
import { expectedWeights, type ModelConfig } from '../model/config.ts';
import { PROJECTIONS, type CausalLM, type Projection } from '../model/llama.ts';
import { decodeSafetensors, encodeSafetensors, type TensorToEncode } from '../model/safetensors.ts';
import { readAllBytes, type ModelSource } from '../model/source.ts';
import { LoraAdapter, projectionShape, validateLoraSettings, type LoraSettings } from './adapter.ts';

class AdapterFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AdapterFormatError';
  }
}

const MLP = new Set<Projection>(['gate_proj', 'up_proj', 'down_proj']);

/** PEFT key of one LoRA matrix. Example: peftKey(0, 'q_proj', 'A') -> 'base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight'. */
export function peftKey(layer: number, proj: Projection, which: 'A' | 'B'): string {
  return `base_model.model.model.layers.${layer}.${MLP.has(proj) ? 'mlp' : 'self_attn'}.${proj}.lora_${which}.weight`;
}

const KEY_PATTERN = /^base_model\.model\.model\.layers\.(\d+)\.(self_attn|mlp)\.(\w+)\.lora_(A|B)(?:\.default)?\.weight$/;

/** The adapter_config.json PEFT writes for this adapter. */
export function peftConfig(adapter: LoraAdapter, baseModel = ''): Record<string, unknown> {
  const s = adapter.settings;
  return {
    alpha_pattern: {}, auto_mapping: null, base_model_name_or_path: baseModel, bias: 'none', fan_in_fan_out: false,
    inference_mode: true, init_lora_weights: true, layers_pattern: null, layers_to_transform: null,
    lora_alpha: s.alpha, lora_dropout: s.dropout, modules_to_save: null, peft_type: 'LORA', r: s.rank,
    rank_pattern: {}, revision: null, target_modules: [...s.targetModules], task_type: 'CAUSAL_LM',
    use_dora: false, use_rslora: s.rsLora,
  };
}

/** Files of a PEFT adapter folder: name -> bytes. */
export async function exportPeft(adapter: LoraAdapter, baseModel = ''): Promise<Record<string, Uint8Array>> {
  const tensors: TensorToEncode[] = [];
  const values = await adapter.values();
  for (const [k, v] of values) {
    const [layer, proj] = k.split('.') as [string, Projection];
    const [out, inn] = projectionShape(adapter.modelConfig, proj);
    const r = adapter.settings.rank;
    tensors.push({ name: peftKey(Number(layer), proj, 'A'), shape: [r, inn], data: v.a });
    tensors.push({ name: peftKey(Number(layer), proj, 'B'), shape: [out, r], data: v.b });
  }
  return {
    'adapter_model.safetensors': encodeSafetensors(tensors, { format: 'pt' }),
    'adapter_config.json': new TextEncoder().encode(JSON.stringify(peftConfig(adapter, baseModel), null, 2) + '\n'),
  };
}

function settingsFromPeftConfig(raw: unknown, where: string): LoraSettings {
  if (!raw || typeof raw !== 'object') throw new AdapterFormatError(`${where}: expected a JSON object`);
  const c = raw as Record<string, unknown>;
  const refuse = (why: string) => { throw new AdapterFormatError(`${where}: ${why}`); };
  if (c.peft_type !== 'LORA') refuse(`peft_type ${JSON.stringify(c.peft_type)} is not supported (only "LORA")`);
  if (c.bias !== undefined && c.bias !== 'none') refuse(`bias ${JSON.stringify(c.bias)} is not supported (only "none")`);
  if (c.use_dora === true) refuse('use_dora true (DoRA) is not supported; export a plain LoRA');
  if (c.fan_in_fan_out === true) refuse('fan_in_fan_out true is for GPT-2 style Conv1D layers; Llama-family adapters use false');
  for (const k of ['rank_pattern', 'alpha_pattern']) {
    if (c[k] && typeof c[k] === 'object' && Object.keys(c[k] as object).length > 0) refuse(`${k} (per-module ranks) is not supported`);
  }
  if (c.modules_to_save && (c.modules_to_save as unknown[]).length) refuse('modules_to_save (fully trained extra modules) is not supported');
  let targets = c.target_modules;
  if (typeof targets === 'string') refuse(`target_modules as a regex (${JSON.stringify(targets)}) is not supported; list the modules`);
  if (!Array.isArray(targets)) refuse('target_modules must be a list');
  targets = (targets as string[]).filter((t) => t !== 'lm_head');
  for (const t of targets as string[]) {
    if (!PROJECTIONS.includes(t as Projection)) refuse(`target module "${t}" is unknown; supported: ${PROJECTIONS.join(' ')}`);
  }
  const settings: LoraSettings = {
    rank: Number(c.r),
    alpha: Number(c.lora_alpha ?? c.r),
    dropout: Number(c.lora_dropout ?? 0),
    targetModules: PROJECTIONS.filter((p) => (targets as string[]).includes(p)),
    rsLora: c.use_rslora === true,
  };
  try {
    validateLoraSettings(settings);
  } catch (e) {
    refuse((e as Error).message);
  }
  return settings;
}

/**
 * Import a PEFT adapter folder for `model`. Unknown keys, missing keys and wrong shapes are refused
 * with the key and the expected shape.
 */
export async function importPeft(source: ModelSource, modelConfig: ModelConfig, name: string): Promise<LoraAdapter> {
  const settings = settingsFromPeftConfig(await source.readJson('adapter_config.json'), `${source.name}/adapter_config.json`);
  const file = `${source.name}/adapter_model.safetensors`;
  const { tensors } = await decodeSafetensors(await readAllBytes(source, 'adapter_model.safetensors'), file);
  const values = new Map<string, { a: Float32Array; b: Float32Array }>();
  const seen = new Set<string>();
  for (const [k, t] of tensors) {
    const m = KEY_PATTERN.exec(k);
    const layer = m ? Number(m[1]) : -1;
    const proj = m?.[3] as Projection;
    if (!m || layer >= modelConfig.numLayers || !settings.targetModules.includes(proj) || (m[2] === 'mlp') !== MLP.has(proj)) {
      throw new AdapterFormatError(`${file}: unexpected key "${k}"; this adapter config targets ${settings.targetModules.join(' ')} ` +
        `over ${modelConfig.numLayers} layers (keys like ${peftKey(0, settings.targetModules[0], 'A')})`);
    }
    const [out, inn] = projectionShape(modelConfig, proj);
    const want = m[4] === 'A' ? [settings.rank, inn] : [out, settings.rank];
    if (t.shape.join() !== want.join()) {
      throw new AdapterFormatError(`${file}: "${k}" has shape [${t.shape}] but the base model and r=${settings.rank} need [${want}]; ` +
        'was the adapter trained on another base model?');
    }
    const slot = values.get(`${layer}.${proj}`) ?? { a: new Float32Array(0), b: new Float32Array(0) };
    if (m[4] === 'A') slot.a = t.data; else slot.b = t.data;
    values.set(`${layer}.${proj}`, slot);
    seen.add(k.replace('.default.weight', '.weight'));
  }
  for (let layer = 0; layer < modelConfig.numLayers; layer++) {
    for (const proj of settings.targetModules) {
      for (const which of ['A', 'B'] as const) {
        if (!seen.has(peftKey(layer, proj, which))) throw new AdapterFormatError(`${file}: missing "${peftKey(layer, proj, which)}"`);
      }
    }
  }
  return LoraAdapter.fromValues(modelConfig, settings, name, values);
}

/** Weights with the adapter folded in (W + scale * B A), as new tensors; the base is untouched. */
export function mergeAdapter(model: CausalLM, adapter: LoraAdapter): Map<string, tf.Tensor> {
  const merged = new Map<string, tf.Tensor>();
  for (const name of model.hfNames()) merged.set(name, model.hfWeight(name)); // HF layout, owned copies
  for (const [k, p] of adapter.pairs) {
    const [layer, proj] = k.split('.') as [string, Projection];
    const wname = `model.layers.${layer}.${MLP.has(proj) ? 'mlp' : 'self_attn'}.${proj}.weight`;
    const old = merged.get(wname)!;
    merged.set(wname, tf.tidy(() => tf.add(old, tf.mul(tf.matMul(p.b, p.a), adapter.scale))));
    old.dispose();
  }
  return merged;
}

/** A full `model.safetensors` (HF names, tied lm_head omitted) from a weight map. */
export async function exportWeights(config: ModelConfig, weights: Map<string, tf.Tensor>): Promise<Uint8Array> {
  const tensors: TensorToEncode[] = [];
  for (const [name, shape] of expectedWeights(config)) {
    const t = weights.get(name);
    if (!t) throw new Error(`exportWeights: weight "${name}" is missing`);
    tensors.push({ name, shape, data: (await t.data()) as Float32Array });
  }
  return encodeSafetensors(tensors, { format: 'pt' });
}
