/**
 * Hugging Face `config.json` -> a typed, validated `ModelConfig`.
 *
 * For: the decoder-only Llama family this engine runs (Llama incl. Llama 3.x rope scaling,
 * SmolLM2 = Llama with tied embeddings, Qwen2 with q/k/v bias, Qwen3 with q/k RMSNorm).
 * Not for: loading weights (see `weights.ts`) or anything the config does not say.
 *
 * Everything unsupported is refused here, by name, before a single weight is read:
 *   parseConfig({model_type: "gpt2", ...})
 *   -> ConfigError: config.json: model_type "gpt2" is not supported (supported: llama, qwen2, qwen3) ...
 */

export type ModelType = 'llama' | 'qwen2' | 'qwen3';

export interface Llama3RopeScaling {
  type: 'llama3';
  factor: number;
  lowFreqFactor: number;
  highFreqFactor: number;
  originalMaxPositionEmbeddings: number;
}

export interface ModelConfig {
  modelType: ModelType;
  architecture: string;
  vocabSize: number;
  hiddenSize: number;
  intermediateSize: number;
  numLayers: number;
  numHeads: number;
  numKvHeads: number;
  /** Per-head width; Qwen3 sets it independently of hiddenSize / numHeads. */
  headDim: number;
  rmsNormEps: number;
  ropeTheta: number;
  ropeScaling: Llama3RopeScaling | null;
  maxPositionEmbeddings: number;
  tieWordEmbeddings: boolean;
  /** Bias on q/k/v projections (Qwen2 always; Llama when `attention_bias`). */
  qkvBias: boolean;
  /** Bias on o_proj (Llama / Qwen3 `attention_bias`; Qwen2 never). */
  oBias: boolean;
  /** RMSNorm over each head of q and k before RoPE (Qwen3). */
  qkNorm: boolean;
  bosTokenId: number | null;
  eosTokenIds: number[];
  padTokenId: number | null;
}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

const ARCHITECTURES: Record<string, ModelType> = {
  LlamaForCausalLM: 'llama',
  Qwen2ForCausalLM: 'qwen2',
  Qwen3ForCausalLM: 'qwen3',
};

type Json = Record<string, unknown>;

function need(json: Json, key: string, file: string): number {
  const v = json[key];
  if (v === undefined || v === null) {
    throw new ConfigError(`${file}: required field "${key}" is missing; a Hugging Face config for this architecture must set it.`);
  }
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) {
    throw new ConfigError(`${file}: field "${key}" must be a positive number, got ${JSON.stringify(v)}.`);
  }
  return v;
}

function optNumber(json: Json, key: string, file: string, fallback: number): number {
  const v = json[key];
  if (v === undefined || v === null) return fallback;
  if (typeof v !== 'number' || !Number.isFinite(v)) {
    throw new ConfigError(`${file}: field "${key}" must be a number, got ${JSON.stringify(v)}.`);
  }
  return v;
}

function tokenIds(v: unknown, key: string, file: string): number[] {
  if (v === undefined || v === null) return [];
  const list = Array.isArray(v) ? v : [v];
  for (const id of list) {
    if (!Number.isInteger(id) || (id as number) < 0) {
      throw new ConfigError(`${file}: field "${key}" must be a token id or a list of token ids, got ${JSON.stringify(v)}.`);
    }
  }
  return list as number[];
}

function parseRopeScaling(v: unknown, file: string): Llama3RopeScaling | null {
  if (v === undefined || v === null) return null;
  if (typeof v !== 'object') throw new ConfigError(`${file}: field "rope_scaling" must be an object or null, got ${JSON.stringify(v)}.`);
  const rs = v as Json;
  const type = rs.rope_type ?? rs.type;
  if (type === 'default') return null;
  if (type !== 'llama3') {
    throw new ConfigError(
      `${file}: rope_scaling type ${JSON.stringify(type)} is not supported (supported: "llama3", "default" or null). ` +
        'Use a checkpoint without rope scaling or with Llama 3 scaling.',
    );
  }
  const f = `${file} rope_scaling`;
  return {
    type: 'llama3',
    factor: need(rs, 'factor', f),
    lowFreqFactor: need(rs, 'low_freq_factor', f),
    highFreqFactor: need(rs, 'high_freq_factor', f),
    originalMaxPositionEmbeddings: need(rs, 'original_max_position_embeddings', f),
  };
}

/**
 * Validate a parsed `config.json`. `file` names the file in error messages.
 * Example: parseConfig(JSON.parse(text)).headDim === 16 for the llama fixture (64 / 4 heads).
 */
export function parseConfig(raw: unknown, file = 'config.json'): ModelConfig {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new ConfigError(`${file}: expected a JSON object.`);
  }
  const json = raw as Json;
  const mt = json.model_type;
  if (typeof mt !== 'string') {
    throw new ConfigError(`${file}: required field "model_type" is missing; is this a Hugging Face config.json?`);
  }
  const supported = Object.values(ARCHITECTURES);
  if (!supported.includes(mt as ModelType)) {
    throw new ConfigError(
      `${file}: model_type ${JSON.stringify(mt)} is not supported (supported: ${supported.join(', ')}). ` +
        'Pick a Llama, SmolLM2, Qwen2/2.5 or Qwen3 checkpoint.',
    );
  }
  const modelType = mt as ModelType;
  const archs = json.architectures;
  let architecture = Object.keys(ARCHITECTURES).find((a) => ARCHITECTURES[a] === modelType)!;
  if (Array.isArray(archs) && archs.length > 0) {
    const a = archs[0];
    if (ARCHITECTURES[a as string] !== modelType) {
      throw new ConfigError(
        `${file}: architectures ${JSON.stringify(archs)} is not supported for model_type "${modelType}" (expected ${architecture}); ` +
          'only causal language models are supported.',
      );
    }
    architecture = a as string;
  }
  const act = json.hidden_act ?? 'silu';
  if (act !== 'silu') throw new ConfigError(`${file}: hidden_act ${JSON.stringify(act)} is not supported (only "silu").`);
  if (json.mlp_bias === true) throw new ConfigError(`${file}: mlp_bias true is not supported.`);
  if (json.use_sliding_window === true) {
    throw new ConfigError(`${file}: use_sliding_window true is not supported; set it to false (full attention).`);
  }

  const hiddenSize = need(json, 'hidden_size', file);
  const numHeads = need(json, 'num_attention_heads', file);
  const numKvHeads = json.num_key_value_heads == null ? numHeads : need(json, 'num_key_value_heads', file);
  if (numHeads % numKvHeads !== 0) {
    throw new ConfigError(`${file}: num_attention_heads ${numHeads} is not a multiple of num_key_value_heads ${numKvHeads}.`);
  }
  const headDim = json.head_dim == null ? hiddenSize / numHeads : need(json, 'head_dim', file);
  if (!Number.isInteger(headDim) || headDim % 2 !== 0) {
    throw new ConfigError(`${file}: head_dim ${headDim} must be an even integer (hidden_size / num_attention_heads or "head_dim").`);
  }
  const attentionBias = json.attention_bias === true;
  return {
    modelType,
    architecture,
    vocabSize: need(json, 'vocab_size', file),
    hiddenSize,
    intermediateSize: need(json, 'intermediate_size', file),
    numLayers: need(json, 'num_hidden_layers', file),
    numHeads,
    numKvHeads,
    headDim,
    rmsNormEps: optNumber(json, 'rms_norm_eps', file, 1e-6),
    ropeTheta: optNumber(json, 'rope_theta', file, 10000),
    ropeScaling: parseRopeScaling(json.rope_scaling, file),
    maxPositionEmbeddings: optNumber(json, 'max_position_embeddings', file, 2048),
    tieWordEmbeddings: json.tie_word_embeddings === true,
    qkvBias: modelType === 'qwen2' || attentionBias,
    oBias: modelType !== 'qwen2' && attentionBias,
    qkNorm: modelType === 'qwen3',
    bosTokenId: tokenIds(json.bos_token_id, 'bos_token_id', file)[0] ?? null,
    eosTokenIds: tokenIds(json.eos_token_id, 'eos_token_id', file),
    padTokenId: tokenIds(json.pad_token_id, 'pad_token_id', file)[0] ?? null,
  };
}

/**
 * Every weight the checkpoint must hold, by Hugging Face name, with its shape ([out, in] for
 * linear layers, as torch stores them). A tied `lm_head.weight` is absent, as `save_pretrained` writes.
 * Example: expectedWeights(llamaFixture).get('model.layers.0.self_attn.k_proj.weight') -> [32, 64]
 */
export function expectedWeights(c: ModelConfig): Map<string, number[]> {
  const w = new Map<string, number[]>();
  const q = c.numHeads * c.headDim;
  const kv = c.numKvHeads * c.headDim;
  w.set('model.embed_tokens.weight', [c.vocabSize, c.hiddenSize]);
  for (let i = 0; i < c.numLayers; i++) {
    const p = `model.layers.${i}.`;
    w.set(p + 'input_layernorm.weight', [c.hiddenSize]);
    w.set(p + 'post_attention_layernorm.weight', [c.hiddenSize]);
    w.set(p + 'self_attn.q_proj.weight', [q, c.hiddenSize]);
    w.set(p + 'self_attn.k_proj.weight', [kv, c.hiddenSize]);
    w.set(p + 'self_attn.v_proj.weight', [kv, c.hiddenSize]);
    w.set(p + 'self_attn.o_proj.weight', [c.hiddenSize, q]);
    if (c.qkvBias) {
      w.set(p + 'self_attn.q_proj.bias', [q]);
      w.set(p + 'self_attn.k_proj.bias', [kv]);
      w.set(p + 'self_attn.v_proj.bias', [kv]);
    }
    if (c.oBias) w.set(p + 'self_attn.o_proj.bias', [c.hiddenSize]);
    if (c.qkNorm) {
      w.set(p + 'self_attn.q_norm.weight', [c.headDim]);
      w.set(p + 'self_attn.k_norm.weight', [c.headDim]);
    }
    w.set(p + 'mlp.gate_proj.weight', [c.intermediateSize, c.hiddenSize]);
    w.set(p + 'mlp.up_proj.weight', [c.intermediateSize, c.hiddenSize]);
    w.set(p + 'mlp.down_proj.weight', [c.hiddenSize, c.intermediateSize]);
  }
  w.set('model.norm.weight', [c.hiddenSize]);
  if (!c.tieWordEmbeddings) w.set('lm_head.weight', [c.vocabSize, c.hiddenSize]);
  return w;
}

/** Number of parameters the config describes (tied embeddings counted once). */
export function parameterCount(c: ModelConfig): number {
  let n = 0;
  for (const shape of expectedWeights(c).values()) n += shape.reduce((a, b) => a * b, 1);
  return n;
}
