/**
 * The decoder: a Llama-family causal language model in tfjs, numerically matching Hugging Face
 * `transformers` (LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM; SmolLM2 is Llama with tied
 * embeddings).
 *
 * For: one forward pass over a batch, with an optional KV cache, attention mask and LoRA adapter.
 * Not for: sampling loops (generate.ts), scoring helpers (score.ts) or loading files (load.ts).
 *
 * Per layer (pre-norm):  h += o_proj(attn(rope(q), rope(k), v))   with q/k/v = proj(rmsnorm(h))
 *                        h += down_proj(silu(gate_proj(n)) * up_proj(n)),  n = rmsnorm(h)
 * Grouped-query attention without copying K/V: the numHeads query heads are laid out as
 * [numKvHeads, group] so q [B, nh, T, hd] reshapes for free to [B, nkv, group*T, hd] and meets
 * k [B, nkv, S, hd] in one batched matmul (HF `repeat_kv` gives head h the KV head h / group).
 *
 * Example: const m = new CausalLM(config, weights);
 *          const logits = m.forward([[1, 10, 12]]).logits; // [1, 3, vocab]
 */
import * as tf from '@tensorflow/tfjs-core';
import type { ModelConfig } from './config.ts';
import { MAX_TIED_HEAD_COPY_BYTES } from './memory-plan.ts';
import { ENGINE_PATHS } from '../paths.ts';
import { keepSlots, keptQueries, type KeptQueries } from './kept-rows.ts';
import { applyRope, inverseFrequencies, ropeTables } from './rope.ts';
import { TiedHead } from './tied-head.ts';
import { blocksOf, RowBlocks, tableName } from './vocab-table.ts';

export const PROJECTIONS = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] as const;
export type Projection = (typeof PROJECTIONS)[number];
const MLP_PROJECTIONS: ReadonlySet<Projection> = new Set(['gate_proj', 'up_proj', 'down_proj']);

/** The HF name prefix of a layer's projection. Example: (0, 'up_proj') -> "model.layers.0.mlp.up_proj". */
export const projectionPrefix = (layer: number, proj: Projection): string =>
  `model.layers.${layer}.${MLP_PROJECTIONS.has(proj) ? 'mlp' : 'self_attn'}.${proj}`;

/** A low-rank update for one linear layer: delta W = scale * B A, with A [r, in] and B [out, r] (PEFT layout). */
export interface LoraPair {
  a: tf.Tensor2D;
  b: tf.Tensor2D;
  scale: number;
}

/**
 * A team's pairs for one linear layer, one adapter per row of the batch (BGMV, as S-LoRA and Punica
 * serve many adapters): a [N, r, in] and b [N, out, r] stacked over N adapters, rows [B] the adapter
 * index of each batch row. Row i gets delta y = scale * (x_i A_rows[i]^T) B_rows[i]^T.
 */
export interface RowLoraPair {
  a: tf.Tensor3D;
  b: tf.Tensor3D;
  rows: tf.Tensor1D;
  scale: number;
  /**
   * The masked form instead (few adapters per batch): a and b concatenated, A [U*r, in] and B [out, U*r],
   * and mask [B, 1, U*r] keeping each row's own r columns: delta y_i = scale * ((x_i A^T) * mask_i) B^T.
   */
  masked?: { a: tf.Tensor2D; b: tf.Tensor2D; mask: tf.Tensor3D };
}

/** What the decoder needs from an adapter: the pair for a layer's projection, if it adapts it. */
export interface AdapterView {
  lora(layer: number, proj: Projection): LoraPair | null;
  /** A pair per batch row (engine/lora/batched-adapter.ts), read before `lora` by the full forward pass (not by the decoders). */
  rowLora?(layer: number, proj: Projection): RowLoraPair | null;
  /** Dropout probability on the LoRA input, applied only when `train` is set on the forward call. */
  dropout?: number;
}

/** Keys and values of every layer for the tokens seen so far, plus the bookkeeping to extend them. */
export interface KVCache {
  layers: { k: tf.Tensor4D; v: tf.Tensor4D }[]; // each [B, nkv, S, hd]
  /** Attention mask of the cached tokens, row-major [B, S] (1 = real token, 0 = padding). */
  mask: Uint8Array;
  batch: number;
  length: number; // S
  /** Next position id of each row (number of real tokens seen). */
  nextPosition: Int32Array;
}

export interface ForwardOptions {
  /** [B][T] mask of the new tokens (1 real, 0 padding); default all ones. */
  attentionMask?: number[][];
  /** Extend this cache; the returned cache replaces it (the old tensors are disposed). */
  cache?: KVCache | null;
  /** Return a new cache (for the first call of a generation). */
  useCache?: boolean;
  /** Compute logits for the last position only ([B, 1, V]); saves the lm_head matmul elsewhere. */
  lastOnly?: boolean;
  /**
   * Per batch row, the positions (of the new tokens) whose final hidden states are read: hidden comes back
   * [B, m, H], row b's j-th kept position at [b, j] (kept-rows.ts: m the longest list, shorter ones padded).
   * The last layer then runs its queries, MLP and final norm at those rows only. `lastOnly` is keep [[T-1], ...].
   */
  keep?: number[][];
  adapter?: AdapterView | null;
  /** Training mode: enables LoRA dropout and keeps every layer's input for the gradient tape.
   *  Set it whenever the forward pass runs under tf.grad / tf.variableGrads. */
  train?: boolean;
}

export interface ForwardResult {
  logits: tf.Tensor3D; // [B, T or 1, V]
  cache: KVCache | null;
}

const MASKED = -1e9; // added to attention scores of masked keys; exp underflows to exactly 0

/** The kept slots' rows of x [B, T, H]: [B, m, H] (index [B * m], flat b * T + t; kept-rows.ts). */
function atSlots(x: tf.Tensor3D, index: tf.Tensor1D, m: number): tf.Tensor3D {
  const [b, t, h] = x.shape;
  return tf.reshape(tf.gather(tf.reshape(x, [b * t, h]), index), [b, m, h]) as tf.Tensor3D;
}


export class CausalLM {
  readonly config: ModelConfig;
  /**
   * Weights by Hugging Face name. Linear weights are [out, in] as in the checkpoint, except those
   * listed in `inOut`, which are stored transposed as [in, out] (use `hfWeight` for HF layout).
   */
  readonly weights: Map<string, tf.Tensor>;
  /** Names of frozen linear weights stored as [in, out] (wasm only; see constructor). */
  readonly inOut = new Set<string>();
  /** The tied output projection as column blocks of [H, V], when one was made (wasm, small enough). */
  private tiedHead: TiedHead | null = null;
  /** The embedding / untied lm_head when the loader split them into row blocks (vocab-table.ts). */
  private readonly embedBlocks: RowBlocks | null;
  private readonly headBlocks: RowBlocks | null;
  private readonly invFreq: Float64Array;

  /**
   * tfjs-backend-wasm multiplies by a transposed operand ~10x slower than by a plain one
   * (bench/README.md). So on wasm, frozen linear weights (not tf.Variables, whose gradients must
   * reach them as they are) are transposed once here to [in, out], replacing the originals — no
   * second copy. A tied embedding also serves the lookup, so its [H, V] copy (in column blocks that
   * stay in cache: tied-head.ts) is made only up to MAX_TIED_HEAD_COPY_BYTES. Other transposed
   * products (LoRA, attention, gradients) go through the project's wasm matmul wrapper
   * (kernels/wasm-matmul.ts), which transposes per call.
   * The model owns the tensors it is given (dispose() frees them); the caller's map is not changed.
   */
  constructor(config: ModelConfig, given: Map<string, tf.Tensor>) {
    this.config = config;
    const weights = new Map(given);
    this.weights = weights;
    this.invFreq = inverseFrequencies(config);
    const split = (name: string) => {
      const blocks = blocksOf(weights, name);
      return blocks.length ? new RowBlocks(blocks) : null;
    };
    this.embedBlocks = split('model.embed_tokens.weight');
    this.headBlocks = split('lm_head.weight');
    if (tf.getBackend() !== 'wasm') return;
    for (const [name, t] of weights) {
      if (t instanceof tf.Variable || t.rank !== 2 || !(name.endsWith('_proj.weight') || name === 'lm_head.weight')) continue;
      weights.set(name, tf.transpose(t));
      t.dispose();
      this.inOut.add(name);
    }
    const embed = weights.get('model.embed_tokens.weight');
    if (!weights.has('lm_head.weight') && embed && !(embed instanceof tf.Variable) && embed.size * 4 <= MAX_TIED_HEAD_COPY_BYTES) {
      this.tiedHead = new TiedHead(embed as tf.Tensor2D);
    }
  }

  /** A weight by its Hugging Face name; throws naming it if absent. */
  w(name: string): tf.Tensor {
    const t = this.weights.get(name);
    if (!t) throw new Error(`weight "${name}" is not loaded`);
    return t;
  }

  /**
   * A new tensor holding weight `name` in Hugging Face layout (the caller disposes it). A table held
   * as row blocks is joined into one tensor, which a device that needed the split cannot hold:
   * on such a device read the blocks one by one instead.
   */
  hfWeight(name: string): tf.Tensor {
    const blocks = blocksOf(this.weights, name);
    if (blocks.length) return tf.concat(blocks, 0);
    const t = this.w(name);
    return this.inOut.has(name) ? tf.transpose(t) : tf.clone(t);
  }

  /** The Hugging Face names of the weights held (a table held as row blocks named once). */
  hfNames(): string[] {
    return [...new Set([...this.weights.keys()].map(tableName))];
  }

  /** Number of parameters held (a tied embedding counted once). */
  parameterCount(): number {
    return [...this.weights.values()].reduce((n, t) => n + t.size, 0);
  }

  /** x [N, in] @ W^T for weight `name`, stored in HF layout [out, in] or as [in, out]. */
  private matMulWeight(x: tf.Tensor2D, name: string): tf.Tensor2D {
    const { w, transposeB } = this.linearWeight(name);
    return tf.matMul(x, w, false, transposeB);
  }

  /** A linear weight as held, and whether x @ w needs it transposed (HF layout [out, in]) or not ([in, out]). */
  linearWeight(name: string): { w: tf.Tensor2D; transposeB: boolean } {
    return { w: this.w(name) as tf.Tensor2D, transposeB: !this.inOut.has(name) };
  }

  /**
   * The output projection as one weight (not for tables held in row blocks). `project` multiplies
   * by wasm's tied copy instead when there is one (`outputColumnBlocks`); this stays correct there.
   */
  outputWeight(): { w: tf.Tensor2D; transposeB: boolean } {
    return this.linearWeight(this.weights.has('lm_head.weight') ? 'lm_head.weight' : 'model.embed_tokens.weight');
  }

  /** wasm's tied output projection as column blocks [H, V_k] with their first columns, or null. */
  outputColumnBlocks(): { blocks: tf.Tensor2D[]; starts: number[] } | null {
    return this.tiedHead && { blocks: this.tiedHead.blocks, starts: this.tiedHead.starts };
  }

  /** Whether the embedding or the output table is held as row blocks (vocab-table.ts). */
  tablesInBlocks(): boolean {
    return this.embedBlocks !== null || this.headBlocks !== null;
  }

  /** RoPE's inverse frequencies (rope.ts), one per pair of a head's dimensions. */
  ropeFrequencies(): Float64Array {
    return this.invFreq;
  }

  /** Forward pass over ids [B][T] (rows of equal length; pad with any id and mask it). */
  forward(ids: number[][], opts: ForwardOptions = {}): ForwardResult {
    const { hidden, cache } = this.hiddenStates(ids, opts);
    const logits = tf.tidy(() => {
      const [b, rows, h] = hidden.shape;
      return tf.reshape(this.project(tf.reshape(hidden, [b * rows, h]) as tf.Tensor2D), [b, rows, this.config.vocabSize]) as tf.Tensor3D;
    });
    hidden.dispose();
    return { logits, cache };
  }

  /** Final hidden rows [N, H] -> logits [N, V] through the output projection (lm_head or the tied embedding). */
  project(hidden: tf.Tensor2D): tf.Tensor2D {
    if (this.headBlocks) return this.headBlocks.project(hidden);
    if (this.embedBlocks && !this.weights.has('lm_head.weight')) return this.embedBlocks.project(hidden);
    if (this.tiedHead) return this.tiedHead.project(hidden);
    const { w, transposeB } = this.outputWeight();
    return tf.matMul(hidden, w, false, transposeB);
  }

  /**
   * The decoder without the output projection: final-normed hidden states [B, T, H], or [B, m, H] at the
   * positions `keep` names ([B, 1, H] with `lastOnly`), the last layer then run only there (kept-rows.ts).
   * Callers that need logits only at some positions (training: the action tokens) pass them as `keep`.
   */
  hiddenStates(ids: number[][], opts: ForwardOptions = {}): { hidden: tf.Tensor3D; cache: KVCache | null } {
    const c = this.config;
    const batch = ids.length;
    const steps = ids[0]?.length ?? 0;
    if (batch === 0 || steps === 0) throw new Error('forward: ids must be a non-empty [B][T] array');
    for (const row of ids) {
      if (row.length !== steps) throw new Error('forward: every row of ids must have the same length (pad and mask)');
      for (const id of row) {
        if (!Number.isInteger(id) || id < 0 || id >= c.vocabSize) throw new Error(`forward: token id ${id} is outside the vocabulary [0, ${c.vocabSize})`);
      }
    }
    const past = opts.cache ?? null;
    if (past && past.batch !== batch) throw new Error(`forward: cache batch ${past.batch} != ids batch ${batch}`);
    const pastLen = past?.length ?? 0;
    const total = pastLen + steps;

    // Host-side bookkeeping: full mask [B, S], position ids [B, T], additive attention bias [B, 1, T, S].
    const fullMask = new Uint8Array(batch * total);
    const positions = new Int32Array(batch * steps);
    const nextPosition = new Int32Array(batch);
    const bias = new Float32Array(batch * steps * total);
    for (let b = 0; b < batch; b++) {
      if (past) fullMask.set(past.mask.subarray(b * pastLen, (b + 1) * pastLen), b * total);
      let pos = past ? past.nextPosition[b] : 0;
      for (let t = 0; t < steps; t++) {
        const m = opts.attentionMask ? (opts.attentionMask[b][t] ? 1 : 0) : 1;
        fullMask[b * total + pastLen + t] = m;
        positions[b * steps + t] = m ? pos : 0; // padding: any position, it is masked out
        if (m) pos++;
      }
      nextPosition[b] = pos;
      for (let t = 0; t < steps; t++) {
        const row = (b * steps + t) * total;
        for (let s = 0; s < total; s++) {
          bias[row + s] = s <= pastLen + t && fullMask[b * total + s] ? 0 : MASKED;
        }
      }
    }

    const keep = opts.keep ?? (opts.lastOnly ? ids.map(() => [steps - 1]) : null);
    const planned = keep ? keepSlots(keep, steps) : null;
    // every position in order (a decoding step's one token): nothing to leave out
    const slots = planned && !(planned.m === steps && planned.slots.every((bt, i) => bt === i)) ? planned : null;
    // The last layer at the kept rows only, where that gives the same numbers (dropout would draw other masks).
    const lastAtSlots = slots && ENGINE_PATHS.keptRows && !(opts.train && (opts.adapter?.dropout ?? 0) > 0);
    const out = tf.tidy(() => {
      const { cos, sin } = ropeTables(this.invFreq, positions, batch, steps);
      const attnBias = tf.tensor4d(bias, [batch, 1, steps, total]);
      const queries = lastAtSlots ? keptQueries(slots, positions, bias, total, this.invFreq) : null;
      let h = (this.embedBlocks
        ? tf.reshape(this.embedBlocks.lookup(ids.flat()), [batch, steps, c.hiddenSize])
        : tf.gather(this.w('model.embed_tokens.weight'), tf.tensor2d(ids.flat(), [batch, steps], 'int32'))) as tf.Tensor3D; // [B, T, H]
      const newLayers: { k: tf.Tensor4D; v: tf.Tensor4D }[] = [];
      for (let i = 0; i < c.numLayers; i++) {
        const pastKV = past?.layers[i] ?? null;
        const input = h;
        // One scope per layer: outside training, a layer's intermediates are freed as soon as it is done.
        const kept = i === c.numLayers - 1 ? queries : null;
        const layer = tf.tidy(() => {
          const normed = this.rmsNorm(input, `model.layers.${i}.input_layernorm.weight`);
          const { out: attn, k, v } = this.attention(i, normed, cos, sin, attnBias, pastKV, opts, kept);
          const mid = tf.add(kept ? atSlots(input, kept.index, kept.m) : input, attn) as tf.Tensor3D;
          return { h: tf.add(mid, this.mlp(i, this.rmsNorm(mid, `model.layers.${i}.post_attention_layernorm.weight`), opts)) as tf.Tensor3D, k, v };
        });
        if (!opts.train) input.dispose(); // the gradient tape needs it when training
        h = layer.h;
        if (opts.useCache || past) newLayers.push({ k: layer.k, v: layer.v });
        else {
          layer.k.dispose();
          layer.v.dispose();
        }
      }
      if (slots && !queries) h = atSlots(h, tf.tensor1d(slots.slots, 'int32'), slots.m); // [B, m, H]
      h = this.rmsNorm(h, 'model.norm.weight');
      return { hidden: h, layers: newLayers };
    });

    let cache: KVCache | null = null;
    if (opts.useCache || past) {
      cache = { layers: out.layers, mask: fullMask, batch, length: total, nextPosition };
      if (past) disposeCache(past);
    }
    return { hidden: out.hidden, cache };
  }

  /** RMSNorm in float32 over the last axis: x / sqrt(mean(x^2) + eps) * weight. */
  private rmsNorm<T extends tf.Tensor>(x: T, weightName: string): T {
    const variance = tf.mean(tf.square(x), -1, true);
    return tf.mul(tf.mul(x, tf.rsqrt(tf.add(variance, this.config.rmsNormEps))), this.w(weightName)) as T;
  }

  /** x [B, T, in] -> [B, T, out] through a projection of layer `layer`, plus its LoRA update if any. */
  private linear(x: tf.Tensor3D, layer: number, proj: Projection, opts: ForwardOptions): tf.Tensor3D {
    const [b, t, din] = x.shape;
    const prefix = projectionPrefix(layer, proj);
    const x2 = tf.reshape(x, [b * t, din]) as tf.Tensor2D;
    let y: tf.Tensor2D = this.matMulWeight(x2, `${prefix}.weight`); // [BT, out]
    const bias = this.weights.get(`${prefix}.bias`);
    if (bias) y = tf.add(y, bias);
    const rowLora = opts.adapter?.rowLora?.(layer, proj);
    if (rowLora) {
      let xa = x2;
      const p = opts.adapter?.dropout ?? 0;
      if (opts.train && p > 0) xa = tf.dropout(x2, p) as tf.Tensor2D;
      if (rowLora.masked) {
        const m = rowLora.masked;
        const all = tf.reshape(tf.matMul(xa, m.a, false, true), [b, t, m.a.shape[0]]); // [B, T, U*r]
        const own = tf.reshape(tf.mul(all, m.mask), [b * t, m.a.shape[0]]); // each row's own r columns
        y = tf.add(y, tf.mul(tf.matMul(own, m.b, false, true), rowLora.scale)); // [BT, out]
        return tf.reshape(y, [b, t, y.shape[1]]) as tf.Tensor3D;
      }
      const x3 = tf.reshape(xa, [b, t, din]) as tf.Tensor3D;
      const down = tf.matMul(x3, tf.gather(rowLora.a, rowLora.rows), false, true); // [B, T, r]
      const up = tf.matMul(down, tf.gather(rowLora.b, rowLora.rows), false, true) as tf.Tensor3D; // [B, T, out]
      y = tf.add(y, tf.mul(tf.reshape(up, [b * t, up.shape[2]]), rowLora.scale));
      return tf.reshape(y, [b, t, y.shape[1]]) as tf.Tensor3D;
    }
    const lora = opts.adapter?.lora(layer, proj);
    if (lora) {
      let xa = x2;
      const p = opts.adapter?.dropout ?? 0;
      if (opts.train && p > 0) xa = tf.dropout(x2, p) as tf.Tensor2D;
      const down = tf.matMul(xa, lora.a, false, true); // [BT, r]
      y = tf.add(y, tf.mul(tf.matMul(down, lora.b, false, true), lora.scale)); // [BT, out]
    }
    return tf.reshape(y, [b, t, y.shape[1]]) as tf.Tensor3D;
  }

  /**
   * Self-attention of layer i; returns the output [B, T, H] (or [B, m, H] at the `kept` slots' queries) and this
   * layer's full K/V [B, nkv, S, hd].
   */
  private attention(i: number, x: tf.Tensor3D, cos: tf.Tensor4D, sin: tf.Tensor4D, attnBias: tf.Tensor4D,
    past: { k: tf.Tensor4D; v: tf.Tensor4D } | null, opts: ForwardOptions, kept: KeptQueries | null = null) {
    const c = this.config;
    const [b, steps] = x.shape;
    const hd = c.headDim;
    const group = c.numHeads / c.numKvHeads;
    const heads = (y: tf.Tensor3D, n: number, norm?: string) => {
      let r = tf.reshape(y, [b, y.shape[1], n, hd]) as tf.Tensor4D; // [B, T, n, hd]
      if (norm) r = this.rmsNorm(r, norm); // Qwen3: RMSNorm over each head
      return tf.transpose(r, [0, 2, 1, 3]) as tf.Tensor4D; // [B, n, T, hd]
    };
    const p = `model.layers.${i}.self_attn.`;
    // Queries at every position, or at the kept slots only (kept-rows.ts): t rows of each batch row.
    const t = kept ? kept.m : steps;
    const xq = kept ? atSlots(x, kept.index, t) : x;
    let q = heads(this.linear(xq, i, 'q_proj', opts), c.numHeads, c.qkNorm ? p + 'q_norm.weight' : undefined);
    let k = heads(this.linear(x, i, 'k_proj', opts), c.numKvHeads, c.qkNorm ? p + 'k_norm.weight' : undefined);
    let v = heads(this.linear(x, i, 'v_proj', opts), c.numKvHeads);
    q = kept ? applyRope(q, kept.cos, kept.sin) : applyRope(q, cos, sin);
    k = applyRope(k, cos, sin);
    if (past) {
      k = tf.concat([past.k, k], 2);
      v = tf.concat([past.v, v], 2);
    }
    const s = k.shape[2];
    const qg = tf.reshape(q, [b, c.numKvHeads, group * t, hd]); // free: heads are [nkv, group]
    let scores = tf.mul(tf.matMul(qg, k, false, true), 1 / Math.sqrt(hd)); // [B, nkv, g*T, S]
    scores = tf.add(tf.reshape(scores, [b, c.numHeads, t, s]), kept ? kept.bias : attnBias); // [B, nh, T, S]
    const probs = tf.reshape(tf.softmax(scores), [b, c.numKvHeads, group * t, s]);
    const ctx = tf.reshape(tf.matMul(probs, v), [b, c.numHeads, t, hd]); // [B, nh, T, hd]
    const merged = tf.reshape(tf.transpose(ctx, [0, 2, 1, 3]), [b, t, c.numHeads * hd]) as tf.Tensor3D;
    return { out: this.linear(merged, i, 'o_proj', opts), k, v };
  }

  /** SwiGLU MLP: down(silu(gate(x)) * up(x)). */
  private mlp(i: number, x: tf.Tensor3D, opts: ForwardOptions): tf.Tensor3D {
    const gate = this.linear(x, i, 'gate_proj', opts);
    const up = this.linear(x, i, 'up_proj', opts);
    const act = tf.mul(gate, tf.sigmoid(gate)); // silu
    return this.linear(tf.mul(act, up) as tf.Tensor3D, i, 'down_proj', opts);
  }

  dispose(): void {
    for (const t of this.weights.values()) t.dispose();
    this.weights.clear();
    this.tiedHead?.dispose();
    this.tiedHead = null;
  }
}


export function disposeCache(cache: KVCache): void {
  for (const l of cache.layers) {
    l.k.dispose();
    l.v.dispose();
  }
  cache.layers = [];
}

/** Keep only the given rows of a cache (e.g. drop finished sequences during batched decoding). */
export function selectCacheRows(cache: KVCache, rows: number[]): KVCache {
  const idx = tf.tensor1d(rows, 'int32');
  const layers = cache.layers.map(({ k, v }) => ({ k: tf.gather(k, idx) as tf.Tensor4D, v: tf.gather(v, idx) as tf.Tensor4D }));
  idx.dispose();
  const mask = new Uint8Array(rows.length * cache.length);
  const nextPosition = new Int32Array(rows.length);
  rows.forEach((r, j) => {
    mask.set(cache.mask.subarray(r * cache.length, (r + 1) * cache.length), j * cache.length);
    nextPosition[j] = cache.nextPosition[r];
  });
  disposeCache(cache);
  return { layers, mask, batch: rows.length, length: cache.length, nextPosition };
}
