/**
 * LoRA adapters: one per agent, all over one shared, frozen base model.
 *
 * For: creating adapters (initialised as PEFT does: A uniform in +-1/sqrt(in), B zero, so a fresh
 * adapter leaves the model unchanged), handing the decoder its low-rank pairs, listing trainable
 * variables. Not for: file formats (peft.ts) or training (rl/).
 *
 * Each adapted linear layer W [out, in] gains delta W = (alpha / r) * B A, A [r, in], B [out, r].
 * "No adapter" (null) is the reference policy, so no second copy of the base is ever needed.
 * Example: const a = LoraAdapter.create(model.config, {rank: 8, alpha: 16}, 'solver', 0);
 *          model.forward(ids, {adapter: a}) equals model.forward(ids) until a is trained.
 */
import * as tf from '@tensorflow/tfjs-core';
import type { ModelConfig } from '../model/config.ts';
import { PROJECTIONS, type AdapterView, type LoraPair, type Projection } from '../model/llama.ts';
import { Rng } from '../../stats/rng.ts';

export interface LoraSettings {
  rank: number;
  alpha: number;
  dropout: number;
  targetModules: Projection[];
  /** Scale alpha / sqrt(r) instead of alpha / r (PEFT `use_rslora`). */
  rsLora: boolean;
}

export const DEFAULT_LORA: LoraSettings = {
  rank: 8,
  alpha: 16,
  dropout: 0,
  targetModules: ['q_proj', 'k_proj', 'v_proj', 'o_proj'],
  rsLora: false,
};

/** [out, in] of a projection in this model. Example: k_proj of the llama fixture -> [32, 64]. */
export function projectionShape(c: ModelConfig, proj: Projection): [number, number] {
  const q = c.numHeads * c.headDim;
  const kv = c.numKvHeads * c.headDim;
  switch (proj) {
    case 'q_proj': return [q, c.hiddenSize];
    case 'k_proj':
    case 'v_proj': return [kv, c.hiddenSize];
    case 'o_proj': return [c.hiddenSize, q];
    case 'gate_proj':
    case 'up_proj': return [c.intermediateSize, c.hiddenSize];
    case 'down_proj': return [c.hiddenSize, c.intermediateSize];
  }
}

export function validateLoraSettings(s: LoraSettings): void {
  if (!Number.isInteger(s.rank) || s.rank < 1) throw new Error(`LoRA rank must be a positive integer, got ${s.rank}`);
  if (!(s.alpha > 0)) throw new Error(`LoRA alpha must be positive, got ${s.alpha}`);
  if (!(s.dropout >= 0 && s.dropout < 1)) throw new Error(`LoRA dropout must be in [0, 1), got ${s.dropout}`);
  if (s.targetModules.length === 0) throw new Error('LoRA target modules are empty; pick some of ' + PROJECTIONS.join(' '));
  for (const m of s.targetModules) {
    if (!PROJECTIONS.includes(m)) throw new Error(`LoRA target module "${m}" is unknown; pick from ${PROJECTIONS.join(' ')}`);
  }
}

const key = (layer: number, proj: Projection) => `${layer}.${proj}`;
let instances = 0; // tfjs variable names are global: each adapter instance gets its own prefix

export class LoraAdapter implements AdapterView {
  readonly name: string;
  readonly settings: LoraSettings;
  readonly modelConfig: ModelConfig;
  readonly scale: number;
  private readonly instance = ++instances;
  /** `${layer}.${proj}` -> trainable A [r, in] and B [out, r]. */
  readonly pairs = new Map<string, { a: tf.Variable<tf.Rank.R2>; b: tf.Variable<tf.Rank.R2> }>();

  private constructor(name: string, modelConfig: ModelConfig, settings: LoraSettings) {
    validateLoraSettings(settings);
    this.name = name;
    this.modelConfig = modelConfig;
    this.settings = settings;
    this.scale = settings.rsLora ? settings.alpha / Math.sqrt(settings.rank) : settings.alpha / settings.rank;
  }

  get dropout(): number {
    return this.settings.dropout;
  }

  /** A fresh adapter: A ~ U(-1/sqrt(in), 1/sqrt(in)) (PEFT's kaiming_uniform(a=sqrt 5)), B = 0. */
  static create(modelConfig: ModelConfig, settings: Partial<LoraSettings>, name: string, seed = 0): LoraAdapter {
    const s = { ...DEFAULT_LORA, ...settings };
    const adapter = new LoraAdapter(name, modelConfig, s);
    const rng = new Rng(`lora:${name}:${seed}`);
    for (let layer = 0; layer < modelConfig.numLayers; layer++) {
      for (const proj of s.targetModules) {
        const [out, inn] = projectionShape(modelConfig, proj);
        const bound = 1 / Math.sqrt(inn);
        const a = new Float32Array(s.rank * inn);
        for (let i = 0; i < a.length; i++) a[i] = (2 * rng.next() - 1) * bound;
        adapter.setPair(layer, proj, a, new Float32Array(out * s.rank));
      }
    }
    return adapter;
  }

  /** An adapter from given values (import, checkpoint restore). A is [r, in], B is [out, r], row-major. */
  static fromValues(modelConfig: ModelConfig, settings: LoraSettings, name: string,
    values: Map<string, { a: Float32Array; b: Float32Array }>): LoraAdapter {
    const adapter = new LoraAdapter(name, modelConfig, settings);
    for (const [k, v] of values) {
      const [layer, proj] = k.split('.') as [string, Projection];
      adapter.setPair(Number(layer), proj, v.a, v.b);
    }
    return adapter;
  }

  private setPair(layer: number, proj: Projection, a: Float32Array, b: Float32Array): void {
    const [out, inn] = projectionShape(this.modelConfig, proj);
    const r = this.settings.rank;
    if (a.length !== r * inn || b.length !== out * r) {
      throw new Error(`LoRA ${this.name} layer ${layer} ${proj}: expected A [${r}, ${inn}] and B [${out}, ${r}]`);
    }
    const id = `lora${this.instance}:${this.name}/${layer}/${proj}`;
    // A variable shares its initial tensor's data; the initial tensor itself is freed at once, so that an
    // adapter made and disposed (each rollout pass makes its own from values) leaves no tensor behind.
    const variable = (values: Float32Array, shape: [number, number], name: string) => {
      const init = tf.tensor2d(values, shape);
      const v = tf.variable(init, true, name);
      init.dispose();
      return v;
    };
    this.pairs.set(key(layer, proj), { a: variable(a, [r, inn], `${id}/lora_A`), b: variable(b, [out, r], `${id}/lora_B`) });
  }

  lora(layer: number, proj: Projection): LoraPair | null {
    const p = this.pairs.get(key(layer, proj));
    return p ? { a: p.a, b: p.b, scale: this.scale } : null;
  }

  /** Trainable variables in a stable order (layer, projection, A then B). */
  variables(): tf.Variable[] {
    return [...this.pairs.values()].flatMap((p) => [p.a, p.b]);
  }

  parameterCount(): number {
    return this.variables().reduce((n, v) => n + v.size, 0);
  }

  /** Host copies of every pair, keyed `${layer}.${proj}` (for export and checkpoints). */
  async values(): Promise<Map<string, { a: Float32Array; b: Float32Array }>> {
    const out = new Map<string, { a: Float32Array; b: Float32Array }>();
    for (const [k, p] of this.pairs) out.set(k, { a: (await p.a.data()) as Float32Array, b: (await p.b.data()) as Float32Array });
    return out;
  }

  /** A deep copy under another name (e.g. the sampling policy snapshot). */
  async clone(name = this.name): Promise<LoraAdapter> {
    return LoraAdapter.fromValues(this.modelConfig, this.settings, name, await this.values());
  }

  dispose(): void {
    for (const p of this.pairs.values()) {
      p.a.dispose();
      p.b.dispose();
    }
    this.pairs.clear();
  }
}
