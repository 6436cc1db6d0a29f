/**
 * The memory plan of a run, before it starts: from a model's config and the run's settings, how
 * many bytes the backend will hold at its peak, broken down into weights, KV cache, the update's
 * activations and its [rows, vocab] logits, and the largest single buffer (against WebGPU's
 * maxStorageBufferBindingSize / maxBufferSize).
 *
 * For: refusing (or shrinking) settings before a rollout or an update would exhaust the device,
 * and explaining where the memory goes (`mappa plan`, bench/memory.ts checks it against measured
 * peaks). Float32 everywhere, as the engine runs.
 * Not for: process memory (the JS heap, wasm's heap slack, the GPU driver's pools) or speed.
 *
 * Where the numbers come from (this engine on tfjs, counted from src/core/engine/model/llama.ts,
 * src/core/engine/model/score.ts and src/core/rl/update.ts, and checked by `npm run bench -- memory`):
 *   - The update's training pass runs under tf.variableGrads. tfjs' tape keeps every forward
 *     intermediate a gradient needs, for every layer, until the backward pass ends, and every
 *     gradient it computes is kept until then too (the accumulation map lives in one scope).
 *     So the update's peak is the training pass of one micro-batch: all layers' activations,
 *     forward and backward, at once. The no-gradient log-prob passes free each layer as they go.
 *   - Per token of a micro-batch and per layer, with d = hidden, q = heads * headDim,
 *     kv = kvHeads * headDim, I = intermediate, r = rank, T = sequence length, nh = heads,
 *     floats kept (forward | backward):
 *        two RMSNorms (x^2, x * rsqrt, * weight)                          6d   | 10d
 *        residual sums (after attention, layer output)                     2d   |  0 (views)
 *        q: projection, transpose, rope (x cos, [-x2|x1], its * sin, sum)  6q   | 5.5q + d
 *        k: the same at width kv                                           6kv  | 5.5kv + d
 *        v: projection, transpose                                          2kv  | kv + d
 *        attention: scores, scaled scores, probabilities ([nh, T] each),
 *          context and its transpose                                       3nhT + 2q | 3nhT + 2q + 2kv
 *        o projection                                                      d    | q
 *        MLP: gate, up, silu's sigmoid, silu, product; down                5I+d | 7I + 3d
 *        the normed attention input fed to q, k, v (sum of their grads)    0    | d
 *        each adapted projection (in -> out): B A x, its scale, the sum    +3out + r | +out + in + r
 *        each projection with a bias (Qwen2: q, k, v): y + b                +out | 0 (views)
 *     For SmolLM2-135M's shape (d 576, q 576, kv 192, I 1536), LoRA r 8 on q, k, v, o at T 64:
 *     forward 25,952 + backward 32,672 = 58,624 floats = 229 KiB per token per layer (measured
 *     on cpu: 58,922).
 *   - Per row of logits (one per action token; [N, V] blocks): the plain log-prob path
 *     (cpu) keeps logits, one-hot, logits * one-hot, exp (4 V), the entropy metric keeps
 *     softmax, softmax * logits, exp (3 V), the backward keeps 6 V, and 2 V are in flight:
 *     15 V floats per row. The fused kernels (webgpu, wasm) keep logits, the entropy's 3 V and one
 *     gradient, plus 1 V in flight: 6 V per row.
 *   - wasm stores frozen linear weights transposed (replacing them), and a tied embedding gets
 *     an extra [hidden, vocab] copy for the output projection when it is at most 256 MiB.
 *   - On wasm the project's Identity kernel shares its input (kernels/wasm-identity.ts), so the
 *     tape's saved clones cost nothing, as on cpu and webgpu. The tied output
 *     projection's gradient reads row ranges of the embedding (tied-head.ts): no [V, d] copy.
 *
 * Worked example (planMemory(SmolLM2-135M's shape with 2 layers, {rows: 4, promptTokens: 48,
 * actionTokens: 16, rank: 8, microBatch: 1, backend: 'cpu'})):
 *   weights     = 35,392,320 parameters * 4 B                          = 141,569,280 B (135.0 MiB)
 *   lora        = 2 layers * 8 * (1152 + 768 + 768 + 1152) = 61,440 parameters,
 *                 * 4 B * 4 (weights, Adam m and v, gradients)          =     983,040 B
 *   activations = 2 layers * 1 row * 64 tokens * (25,952 + 32,672) * 4 B = 30,015,488 B (28.6 MiB)
 *   logits      = 16 action rows [16, 49152] * 15 * 4 B                 =  47,185,920 B (45 MiB)
 *   other       = 64 tokens * 576 * 4 floats * 4 B                       =     589,824 B
 *   update peak = 220,343,552 B (210.1 MiB); rollout peak 154,361,088 B (KV cache 786,432 B)
 *   largest buffer: the embedding [49152, 576] = 113,246,208 B (108 MiB)
 */
import type { ModelConfig } from './config.ts';
import { parameterCount } from './config.ts';

/** The projections LoRA may adapt (names as in PEFT's target_modules). */
export type PlanProjection = 'q_proj' | 'k_proj' | 'v_proj' | 'o_proj' | 'gate_proj' | 'up_proj' | 'down_proj';

export interface RunSettings {
  /** Rollout rows decoded at once (batch), also the number of samples an update sees. */
  rows: number;
  /** Prompt tokens per row (the longest). */
  promptTokens: number;
  /** Action (generated) tokens per row (the longest). */
  actionTokens: number;
  /** LoRA rank. */
  rank: number;
  /** Adapted projections; default q, k, v, o (DEFAULT_LORA). */
  targets?: PlanProjection[];
  /** Rows per training forward/backward pass (the update's micro-batch; default 4, DEFAULT_UPDATE). */
  microBatch?: number;
  /** Backend the run uses: changes the wasm tied-head copy and the log-prob path (fused on webgpu and wasm). */
  backend?: 'cpu' | 'wasm' | 'webgpu';
  /** Largest [rows, vocab] logits block computed at once (score.ts' default 64 MiB). */
  maxLogitBytes?: number;
  /** Trained adapters (one per trainable agent; default 1): each with its two AdamW moments. */
  adapters?: number;
  /** The batched update (rl/batched-update.ts) holds every adapter's gradient until the steps; the per-agent one, one at a time. */
  batchedUpdate?: boolean;
}

export interface BufferSize {
  what: string;
  /** Shape of the tensor, e.g. [49152, 576]. */
  shape: number[];
  bytes: number;
  /** The loader holds it as row blocks, each under the device's limits (vocab-table.ts). */
  splitByRows?: boolean;
}

export interface MemoryPlan {
  /** Frozen base weights (plus wasm's tied output-projection copy). */
  weights: number;
  /** Every adapter's LoRA weights and AdamW's two moments, and the gradient sets held at once (one, or every adapter's when batched). */
  lora: number;
  /** Rollout: the KV cache of every layer for rows x (prompt + action) tokens. */
  kvCache: number;
  /** Rollout: one layer's working set while prefilling the prompts (layers are freed one by one). */
  prefillWorking: number;
  /** Update: every layer's kept activations and gradients for one micro-batch. */
  activations: number;
  /** Update: the [action rows, vocab] logits and their temporaries for one micro-batch. */
  logits: number;
  /** Update: the micro-batch's embeddings, final norm and hidden rows (small). */
  updateOther: number;
  /** weights + kvCache + prefillWorking. */
  rolloutPeak: number;
  /** weights + lora + activations + logits + updateOther. */
  updatePeak: number;
  /** max(rolloutPeak, updatePeak): what the device must hold. */
  peak: number;
  /** The largest single buffer the run makes; must fit maxStorageBufferBindingSize on WebGPU. */
  largest: BufferSize;
  /** Buffers that may come near a binding limit, largest first. */
  buffers: BufferSize[];
  /** Rows of one training pass: the micro-batch, capped by the rows and by the trainer's attention-cell limit. */
  microBatchRows: number;
  /** The settings as used (defaults filled in). */
  settings: Required<RunSettings>;
  /** Floats kept per token per layer by the training pass (forward, backward), for the report. */
  perTokenLayer: { forward: number; backward: number };
}

const F32 = 4;
const DEFAULT_TARGETS: PlanProjection[] = ['q_proj', 'k_proj', 'v_proj', 'o_proj'];
/**
 * Attention cells (rows x longest^2) one micro-batch may hold: the trainer (rl/batches.ts microBatches) puts at
 * most this many in one, and the plan counts the same. The backward pass keeps every layer's [B, heads, T, T]
 * scores, and tfjs-wasm addresses about 2 GB safely. Measured on the shipped model (LoRA on all projections):
 * 4 rows x 1024 tokens abort, 2 x 1024 and 1 x 2048 pass. Longer samples go fewer at a time; gradients
 * accumulate over micro-batches, so the update is the same.
 */
export const MAX_TRAIN_ATTENTION_CELLS = 2 * 1024 * 1024;
/** wasm copies a tied embedding up to this size for the output projection (llama.ts), and the plan counts the copy. */
export const MAX_TIED_HEAD_COPY_BYTES = 256 << 20;

/** [in, out] of a projection. Example: k_proj of SmolLM2-135M -> [576, 192]. */
function projection(c: ModelConfig, p: PlanProjection): [number, number] {
  const q = c.numHeads * c.headDim;
  const kv = c.numKvHeads * c.headDim;
  switch (p) {
    case 'q_proj': return [c.hiddenSize, q];
    case 'k_proj':
    case 'v_proj': return [c.hiddenSize, kv];
    case 'o_proj': return [q, c.hiddenSize];
    case 'gate_proj':
    case 'up_proj': return [c.hiddenSize, c.intermediateSize];
    case 'down_proj': return [c.intermediateSize, c.hiddenSize];
  }
}

/**
 * Floats the training pass keeps per token per layer at sequence length T (the table in the top
 * comment). Example: SmolLM2-135M, LoRA r 8 on q k v o, T 64 -> {forward: 25952, backward: 32672}.
 */
export function trainingFloatsPerToken(c: ModelConfig, T: number, rank: number, targets: PlanProjection[]): { forward: number; backward: number } {
  const d = c.hiddenSize;
  const q = c.numHeads * c.headDim;
  const kv = c.numKvHeads * c.headDim;
  const I = c.intermediateSize;
  const attn = c.numHeads * T; // one row of a [nh, T, T] score block per token
  let forward = 6 * d + 2 * d + 6 * q + 6 * kv + 2 * kv + (3 * attn + 2 * q) + d + (5 * I + d);
  // Biases (Qwen2's q, k, v; attention_bias' o): the sum y + b is one more kept buffer per projection.
  forward += (c.qkvBias ? q + 2 * kv : 0) + (c.oBias ? d : 0);
  let backward = 10 * d + (5.5 * q + d) + (5.5 * kv + d) + (kv + d) + (3 * attn + 2 * q + 2 * kv) + q + (7 * I + 3 * d) + d;
  for (const p of new Set(targets)) {
    const [inW, outW] = projection(c, p);
    forward += 3 * outW + rank;
    backward += outW + inW + rank;
  }
  return { forward, backward };
}

/** LoRA parameters: r * (in + out) per adapted projection per layer. */
export function loraParameters(c: ModelConfig, rank: number, targets: PlanProjection[]): number {
  return c.numLayers * [...new Set(targets)].reduce((n, p) => n + rank * projection(c, p).reduce((a, b) => a + b, 0), 0);
}

function check(name: string, v: number): void {
  if (!Number.isInteger(v) || v < 1) throw new Error(`memory plan: ${name} must be a positive whole number, got ${v}`);
}

/**
 * The plan for one run. Throws, naming the setting, on a non-positive or fractional count.
 * Example: see the top comment (SmolLM2-135M with 2 layers -> updatePeak 210.1 MiB on cpu).
 */
export function planMemory(c: ModelConfig, run: RunSettings): MemoryPlan {
  const s: Required<RunSettings> = {
    targets: DEFAULT_TARGETS, microBatch: 4, backend: 'webgpu', maxLogitBytes: 64 << 20, adapters: 1, batchedUpdate: false, ...run,
  };
  for (const k of ['rows', 'promptTokens', 'actionTokens', 'rank', 'microBatch', 'adapters'] as const) check(k, s[k]);
  const d = c.hiddenSize;
  const V = c.vocabSize;
  const L = c.numLayers;
  const kv = c.numKvHeads * c.headDim;
  const T = s.promptTokens + s.actionTokens;
  const embedBytes = V * d * F32;

  // Weights; wasm adds the [d, V] copy of a tied embedding it uses as the output projection.
  const tiedCopy = s.backend === 'wasm' && c.tieWordEmbeddings && embedBytes <= MAX_TIED_HEAD_COPY_BYTES ? embedBytes : 0;
  const weights = parameterCount(c) * F32 + tiedCopy;
  // Per adapter: weights and two moments; gradient sets: one (per agent) or one per adapter (batched).
  const lora = loraParameters(c, s.rank, s.targets) * F32 * (3 * s.adapters + (s.batchedUpdate ? s.adapters : 1));

  // Rollout: K and V [rows, kvHeads, T, headDim] per layer; prefill holds one layer's forward
  // intermediates (about 20 widths of d per token, the [nh, P, P] scores three times) and the cache.
  const kvCache = 2 * L * s.rows * kv * T * F32;
  const P = s.promptTokens;
  const prefillWorking = s.rows * P * F32 * (8 * d + 4 * c.numHeads * c.headDim + 4 * kv + 3 * c.intermediateSize + 3 * c.numHeads * P) +
    s.rows * V * F32 * 2;
  const rolloutPeak = weights + kvCache + prefillWorking;

  // Update: one micro-batch of m rows, T tokens each, m * A logit rows.
  const m = Math.max(1, Math.min(s.microBatch, s.rows, Math.floor(MAX_TRAIN_ATTENTION_CELLS / (T * T))));
  const tokens = m * T;
  const perTokenLayer = trainingFloatsPerToken(c, T, s.rank, s.targets);
  const logitRows = m * s.actionTokens;
  const logitRow = V * F32;
  const updateOther = tokens * d * F32 * 4; // embeddings, final norm (x^2, x * rsqrt, output)
  // Every backend keeps the forward intermediates and the gradients until the backward pass ends;
  // the [rows, V] logits: the plain log-prob ops (cpu) keep 15 V per row, the fused kernels 6 V.
  const activations = L * tokens * (perTokenLayer.forward + perTokenLayer.backward) * F32;
  const logits = logitRows * logitRow * (s.backend === 'cpu' ? 15 : 6);
  const updatePeak = weights + lora + activations + logits + updateOther;

  const chunkRows = Math.max(1, Math.min(logitRows, Math.floor(s.maxLogitBytes / (V * F32))));
  const buffers: BufferSize[] = [
    { what: c.tieWordEmbeddings ? 'embedding (tied output projection)' : 'embedding', shape: [V, d], bytes: embedBytes, splitByRows: true },
    ...(c.tieWordEmbeddings ? [] : [{ what: 'lm_head', shape: [V, d], bytes: embedBytes, splitByRows: true }]),
    ...(tiedCopy ? [{ what: 'wasm output-projection copy', shape: [d, V], bytes: tiedCopy }] : []),
    { what: 'update logits block', shape: [chunkRows, V], bytes: chunkRows * V * F32 },
    { what: 'update attention scores', shape: [m, c.numHeads, T, T], bytes: m * c.numHeads * T * T * F32 },
    { what: 'prefill attention scores', shape: [s.rows, c.numHeads, P, P], bytes: s.rows * c.numHeads * P * P * F32 },
    { what: 'update MLP activation', shape: [tokens, c.intermediateSize], bytes: tokens * c.intermediateSize * F32 },
    { what: 'KV cache, one layer', shape: [s.rows, c.numKvHeads, T, c.headDim], bytes: s.rows * kv * T * F32 },
    { what: 'MLP weight', shape: [c.intermediateSize, d], bytes: c.intermediateSize * d * F32 },
  ].sort((a, b) => b.bytes - a.bytes);
  return {
    weights, lora, kvCache, prefillWorking, activations, logits, updateOther, rolloutPeak, updatePeak,
    peak: Math.max(rolloutPeak, updatePeak), largest: buffers[0], buffers, microBatchRows: m, settings: s, perTokenLayer,
  };
}

export interface DeviceLimits {
  /** Bytes the device (or heap) can hold in all; wasm32: 4 GiB. */
  memory?: number;
  maxStorageBufferBindingSize?: number;
  maxBufferSize?: number;
}

export interface FitVerdict {
  fits: boolean;
  /** One line per problem: what is too big, by how much, and what to change. */
  problems: string[];
}

const mib = (b: number) => `${(b / 2 ** 20).toFixed(0)} MiB`;

/**
 * Whether a plan fits the limits, and what to change when it does not. Buffers the engine splits
 * itself are checked as split: the update's logits (chunked by maxLogitBytes) and the vocabulary
 * tables (row blocks of at most one binding, vocab-table.ts).
 * Example: fitsLimits(plan, {memory: 4 * 2 ** 30}) -> {fits: true, problems: []}.
 */
export function fitsLimits(plan: MemoryPlan, limits: DeviceLimits): FitVerdict {
  const problems: string[] = [];
  if (limits.memory !== undefined && plan.peak > limits.memory) {
    const over = plan.updatePeak >= plan.rolloutPeak ? 'the update' : 'the rollout';
    const n = plan.settings.adapters;
    const adapters = over === 'the update' && plan.lora >= (plan.updatePeak - plan.weights) / 2
      ? `${n} adapter${n === 1 ? '' : 's'} with their AdamW moments${plan.settings.batchedUpdate ? ' and gradients' : ''} take ${mib(plan.lora)}: ` +
        `train fewer agents, lower the LoRA rank (now ${plan.settings.rank}) or its target modules` +
        (plan.settings.batchedUpdate ? ', or update per agent (update.batched false)' : '')
      : null;
    problems.push(`peak ${mib(plan.peak)} (${over}) exceeds the ${mib(limits.memory)} available: ` +
      (adapters ?? (over === 'the update'
        ? `lower the micro-batch (now ${plan.settings.microBatch}) ` +
          `or the prompt + action tokens (now ${plan.settings.promptTokens} + ${plan.settings.actionTokens})`
        : `lower the rows decoded at once (now ${plan.settings.rows}) or the tokens per row`)));
  }
  const binding = limits.maxStorageBufferBindingSize;
  const maxBuffer = limits.maxBufferSize;
  for (const b of plan.buffers) {
    if (b.splitByRows) continue; // any limit above one row's bytes holds it in blocks
    if (binding !== undefined && b.bytes > binding) {
      problems.push(`${b.what} [${b.shape.join(', ')}] is ${mib(b.bytes)}, over the ${mib(binding)} storage binding limit` +
        (maxBuffer !== undefined && b.bytes > maxBuffer ? ` and the ${mib(maxBuffer)} buffer limit` : '') +
        ': it must be split across bindings, or use a device with a larger maxStorageBufferBindingSize');
    } else if (maxBuffer !== undefined && b.bytes > maxBuffer) {
      problems.push(`${b.what} [${b.shape.join(', ')}] is ${mib(b.bytes)}, over the ${mib(maxBuffer)} buffer limit`);
    }
  }
  return { fits: problems.length === 0, problems };
}
