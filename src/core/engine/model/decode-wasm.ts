/**
 * A fused decoding step for tfjs-backend-wasm: one token per row through every layer, with the
 * KV cache held here in plain arrays, and no tfjs op per piece.
 *
 * Why: at the shipped agent's shape (hidden 128, 4 layers, 24 rows) the plain step (llama.ts)
 * runs ~72 tfjs ops a layer, each with the engine's fixed cost (scopes, tensor records, a new heap
 * buffer), and copies the whole cache once a step (`tf.concat` of past and new K/V). Its arithmetic
 * is ~50 MFLOP, ~2 ms at the wasm matmul rate, yet it took ~29 ms (bench/results/decode-wasm.md).
 * Here each projection is one call of the backend's own BatchMatMul kernel function (XNNPACK, SIMD)
 * on heap buffers, without the engine; RMSNorm, RoPE, attention over the cache, SwiGLU and the
 * residuals are JS loops over small [B, H] rows; K/V are appended in place.
 *
 * Per layer, rows B, hidden H, heads nh of size hd (nkv of them for K/V), intermediate I:
 *   x = rmsnorm(h)                                     JS      [B, H]
 *   q, k, v = x Wq, x Wk, x Wv (+ bias) (+ LoRA)       3 matmul calls (+ 2 per adapted projection)
 *   (Qwen3: rmsnorm per head), RoPE at each row's position, K/V appended at slot `length`   JS
 *   ctx = softmax(q k^T / sqrt(hd) over the row's real slots) v                            JS
 *   h += ctx Wo;   n = rmsnorm(h);   h += ((silu(n Wg) * n Wu) Wd)                       4 matmul calls, JS
 * then the final norm (JS) and the output projection (1 call) give logits [B, V].
 *
 * Numerics: the matmuls are the very calls the plain path makes (same kernel, same operand layout:
 * LoRA's A and B are transposed once here as the plain path's wrapper does on each call); the bias,
 * LoRA scale and residual adds round to float32 exactly as the plain ops do. RMSNorm, softmax and
 * the attention sums accumulate in float64, so logits differ from the plain path by float32
 * rounding only (test/unit/model/decode-wasm.test.ts: within 1e-5, greedy tokens identical).
 *
 * For: `generate` on the wasm backend after the prefill (which stays on the plain path, T > 1).
 * Not for: prefill, training (no gradient), cpu or webgpu, or tables split in row blocks
 * (`fusedDecodeRefusal` says why it declines; generate then uses the plain step).
 *
 * Example:
 *   const out = model.forward(ids, { useCache: true, lastOnly: true, adapter });   // prefill
 *   const dec = FusedDecoder.open(model, out.cache!, adapter, 32);                 // copies the cache
 *   const logits = dec.step([12, 40]);   // Float32Array [2 * V], the next token's logits per row
 *   dec.keepRows([1]);                   // row 0 finished: drop it from the cache
 *   dec.dispose();
 */
import * as tf from '@tensorflow/tfjs-core';
import { AttentionArena } from '../kernels/attention-wasm.ts';
import { PROJECTIONS, projectionPrefix, type AdapterView, type CausalLM, type KVCache, type Projection } from './llama.ts';
import type { WasmBackendInternals } from '../kernels/wasm-backend.ts';

/** A linear layer as the plain path multiplies it: x @ w, or x @ w^T when w is in HF layout [out, in]. */
interface Linear {
  w: tf.TensorInfo;
  transposeB: boolean;
  out: number;
  bias: Float32Array | null;
  /** LoRA as [in, r] and [r, out] (transposed once here), and its scale rounded to float32. */
  lora: { aT: tf.Tensor2D; bT: tf.Tensor2D; scale: number } | null;
}

interface Layer {
  inNorm: Float32Array;
  postNorm: Float32Array;
  qNorm: Float32Array | null;
  kNorm: Float32Array | null;
  proj: Record<Projection, Linear>;
}

/** The cache: K and V of every layer [B, nkv, cap, hd] and the mask [B, cap], in the SIMD kernel's arena or in JS arrays. */
interface CacheStore {
  k: Float32Array[];
  v: Float32Array[];
  mask: Uint8Array;
  arena: AttentionArena | null;
}

export interface FusedOptions {
  /** false = attention by the JS loop (`attendJs`) rather than the wasm SIMD kernel (the reference in tests and the bench). */
  simd?: boolean;
  /** The cache row each decoding row starts from (repeats allowed: twin prompts prefilled once); default each its own. */
  rows?: number[];
}

/** Why the fused step cannot serve this model here, or null when it can. */
export function fusedDecodeRefusal(model: CausalLM): string | null {
  if (tf.getBackend() !== 'wasm') return `the backend is ${tf.getBackend()}, not wasm`;
  if (!tf.getKernel('BatchMatMul', 'wasm')) return 'the wasm BatchMatMul kernel is not registered';
  if (model.tablesInBlocks()) return 'the embedding or output table is held in row blocks';
  return null;
}

const rowsOf = (data: tf.TypedArray): Float32Array => Float32Array.from(data);

export class FusedDecoder {
  /** Matmul calls and JS passes made so far (the bench's count per step: the difference over one step). */
  calls = 0;
  /** Wall milliseconds spent in matmul calls so far (the bench's share outside matmuls). */
  matmulMs = 0;
  private readonly be: WasmBackendInternals;
  private readonly matMul: tf.KernelFunc;
  private readonly layers: Layer[];
  private readonly owned: tf.Tensor[] = [];
  private readonly finalNorm: Float32Array;
  private readonly embed: tf.TensorInfo;
  /** The output projection: one weight, or wasm's tied copy in column blocks (tied-head.ts). */
  private readonly head: { w: tf.TensorInfo; transposeB: boolean } | { blocks: tf.TensorInfo[]; starts: number[] };
  private rows: number;
  private length: number; // cached slots S (padding included)
  private cap: number; // allocated slots per row
  private store: CacheStore;
  private positions: Int32Array; // [B] next position id
  private readonly invFreq: Float64Array;

  private constructor(private readonly model: CausalLM, cache: KVCache, adapter: AdapterView | null, extra: number,
    private readonly simd: boolean, rows: number[]) {
    const c = model.config;
    this.be = tf.backend() as unknown as WasmBackendInternals;
    this.matMul = tf.getKernel('BatchMatMul', 'wasm')!.kernelFunc;
    this.rows = rows.length;
    this.length = cache.length;
    this.cap = cache.length + Math.max(1, extra);
    this.invFreq = model.ropeFrequencies();
    this.positions = Int32Array.from(rows, (r) => cache.nextPosition[r]);
    const vec = (name: string) => rowsOf(model.w(name).dataSync());
    this.layers = cache.layers.map((_, i) => {
      const p = `model.layers.${i}.`;
      const proj = {} as Record<Projection, Linear>;
      for (const name of PROJECTIONS) proj[name] = this.linear(i, name, adapter);
      const qk = c.qkNorm;
      return {
        inNorm: vec(p + 'input_layernorm.weight'),
        postNorm: vec(p + 'post_attention_layernorm.weight'),
        qNorm: qk ? vec(p + 'self_attn.q_norm.weight') : null,
        kNorm: qk ? vec(p + 'self_attn.k_norm.weight') : null,
        proj,
      };
    });
    // Heap views, read at once: nothing allocates on the tfjs heap while restore copies them.
    this.store = this.restore({
      k: cache.layers.map((kv) => this.be.typedArrayFromHeap(kv.k) as Float32Array),
      v: cache.layers.map((kv) => this.be.typedArrayFromHeap(kv.v) as Float32Array),
      mask: cache.mask, arena: null,
    }, cache.length, rows, this.cap);
    this.finalNorm = vec('model.norm.weight');
    this.embed = model.w('model.embed_tokens.weight');
    this.head = model.outputColumnBlocks() ?? model.outputWeight();
  }

  /**
   * A decoder that continues from a prefill's cache (copied here; the caller still owns and
   * disposes it), with room for `extra` more tokens per row (it grows if asked for more);
   * null when `fusedDecodeRefusal` names a reason.
   */
  static open(model: CausalLM, cache: KVCache, adapter: AdapterView | null | undefined, extra: number, opts: FusedOptions = {}): FusedDecoder | null {
    if (fusedDecodeRefusal(model)) return null;
    const rows = opts.rows ?? Array.from({ length: cache.batch }, (_, b) => b);
    return new FusedDecoder(model, cache, adapter ?? null, extra, opts.simd ?? true, rows);
  }

  /** Whether attention runs in the wasm SIMD kernel (else the JS loop). */
  get simdAttention(): boolean {
    return this.store.arena !== null;
  }

  private linear(layer: number, name: Projection, adapter: AdapterView | null): Linear {
    const prefix = projectionPrefix(layer, name);
    const { w, transposeB } = this.model.linearWeight(`${prefix}.weight`);
    const out = transposeB ? w.shape[0] : w.shape[1];
    const bias = this.model.weights.get(`${prefix}.bias`);
    const pair = adapter?.lora(layer, name) ?? null;
    let lora: Linear['lora'] = null;
    if (pair) {
      const aT = tf.transpose(pair.a) as tf.Tensor2D; // [in, r]
      const bT = tf.transpose(pair.b) as tf.Tensor2D; // [r, out]
      this.owned.push(aT, bT);
      lora = { aT, bT, scale: Math.fround(pair.scale) };
    }
    return { w, transposeB, out, bias: bias ? rowsOf(bias.dataSync()) : null, lora };
  }

  /**
   * A new store of `rows.length` rows and `cap` slots holding rows `rows` (indices into `from`, in
   * this order) of `from`, whose rows have `fromCap` slots, of which the first `length` are copied.
   */
  private restore(from: CacheStore, fromCap: number, rows: number[], cap: number): CacheStore {
    const { numLayers, numHeads: nh, numKvHeads: nkv, headDim: hd } = this.model.config;
    const layout = { layers: numLayers, rows: rows.length, nh, nkv, hd, cap };
    const arena = this.simd ? AttentionArena.create(layout) : null;
    const size = rows.length * nkv * cap * hd;
    const to: CacheStore = arena
      ? { k: arena.k, v: arena.v, mask: arena.mask, arena }
      : { k: from.k.map(() => new Float32Array(size)), v: from.v.map(() => new Float32Array(size)), mask: new Uint8Array(rows.length * cap), arena: null };
    const n = this.length;
    rows.forEach((r, j) => {
      to.mask.set(from.mask.subarray(r * fromCap, r * fromCap + n), j * cap);
      for (let g = 0; g < nkv; g++) {
        const src = (r * nkv + g) * fromCap * hd;
        const dst = (j * nkv + g) * cap * hd;
        for (let l = 0; l < from.k.length; l++) {
          to.k[l].set(from.k[l].subarray(src, src + n * hd), dst);
          to.v[l].set(from.v[l].subarray(src, src + n * hd), dst);
        }
      }
    });
    return to;
  }

  /** Double the slots per row (a generation longer than announced). */
  private grow(): void {
    const old = this.cap;
    this.cap = old * 2;
    this.store = this.restore(this.store, old, Array.from({ length: this.rows }, (_, b) => b), this.cap);
  }

  /** rows [B, n] (Float32Array) -> a heap buffer of the same shape for a matmul. */
  private toHeap(data: Float32Array, n: number): tf.TensorInfo {
    const info = this.be.makeOutput([this.rows, n], 'float32');
    (this.be.typedArrayFromHeap(info) as Float32Array).set(data);
    return info;
  }

  /** Copy a heap result out and free it. */
  private fromHeap(info: tf.TensorInfo): Float32Array {
    const out = (this.be.typedArrayFromHeap(info) as Float32Array).slice();
    this.be.disposeData(info.dataId);
    return out;
  }

  private mm(a: tf.TensorInfo, b: tf.TensorInfo, transposeB = false): tf.TensorInfo {
    this.calls++;
    const t0 = performance.now();
    const out = this.matMul({ inputs: { a, b }, attrs: { transposeA: false, transposeB }, backend: this.be as never }) as tf.TensorInfo;
    this.matmulMs += performance.now() - t0;
    return out;
  }

  /** x (on the heap) through a projection: y = x W (+ bias) (+ scale * (x A^T) B^T), float32 like the plain ops. */
  private apply(x: tf.TensorInfo, l: Linear): Float32Array {
    const y = this.fromHeap(this.mm(x, l.w, l.transposeB));
    if (l.bias) {
      const bias = l.bias;
      for (let i = 0; i < y.length; i++) y[i] = y[i] + bias[i % l.out];
    }
    if (l.lora) {
      const down = this.mm(x, l.lora.aT);
      const up = this.fromHeap(this.mm(down, l.lora.bT));
      this.be.disposeData(down.dataId);
      const s = l.lora.scale;
      for (let i = 0; i < y.length; i++) y[i] = y[i] + Math.fround(up[i] * s);
    }
    return y;
  }

  /** RMSNorm of each [n] row of x into out: x / sqrt(mean(x^2) + eps) * w. */
  private norm(x: Float32Array, w: Float32Array, out: Float32Array, n = w.length): void {
    const eps32 = Math.fround(this.model.config.rmsNormEps);
    this.calls++;
    for (let r = 0; r < x.length; r += n) {
      let ss = 0; // float32, in order, as the plain path's Square then Mean
      for (let i = 0; i < n; i++) ss = Math.fround(ss + Math.fround(x[r + i] * x[r + i]));
      const inv = Math.fround(1 / Math.fround(Math.sqrt(Math.fround(Math.fround(ss / n) + eps32))));
      for (let i = 0; i < n; i++) out[r + i] = Math.fround(x[r + i] * inv) * w[i];
    }
  }

  /** Rotate each head of x [B, n * hd] in place by its row's position (HF rotate_half). */
  private rope(x: Float32Array, heads: number): void {
    const hd = this.model.config.headDim;
    const half = hd / 2;
    const inv = this.invFreq;
    this.calls++;
    for (let b = 0; b < this.rows; b++) {
      const pos = this.positions[b];
      for (let i = 0; i < half; i++) {
        const angle = Math.fround(pos * inv[i]);
        const c = Math.fround(Math.cos(angle));
        const s = Math.fround(Math.sin(angle));
        for (let h = 0; h < heads; h++) {
          const o = (b * heads + h) * hd;
          const x1 = x[o + i];
          const x2 = x[o + half + i];
          x[o + i] = Math.fround(x1 * c) + Math.fround(-x2 * s);
          x[o + half + i] = Math.fround(x2 * c) + Math.fround(x1 * s);
        }
      }
    }
  }

  /** Attention of each query head over its row's real cached slots (this step's included) -> [B, nh * hd]. */
  private attend(layer: number, q: Float32Array): Float32Array {
    const scale = Math.fround(1 / Math.sqrt(this.model.config.headDim));
    this.calls++;
    const arena = this.store.arena;
    if (!arena) return this.attendJs(layer, q, scale);
    arena.q.set(q);
    arena.attend(layer, this.rows, this.length, scale);
    return arena.out.subarray(0, q.length); // the arena may hold more rows than are left (compact)
  }

  /** The same in a JS loop, float64 sums (the kernel's reference). */
  private attendJs(layer: number, q: Float32Array, scale: number): Float32Array {
    const { numHeads: nh, numKvHeads: nkv, headDim: hd } = this.model.config;
    const group = nh / nkv;
    const slots = this.length;
    const cap = this.cap;
    const mask = this.store.mask;
    const K = this.store.k[layer];
    const V = this.store.v[layer];
    const ctx = new Float32Array(this.rows * nh * hd);
    const live = new Int32Array(slots); // this row's unmasked slots
    const scores = new Float64Array(slots);
    const acc = new Float64Array(hd);
    for (let b = 0; b < this.rows; b++) {
      let n = 0;
      for (let s = 0; s < slots; s++) if (mask[b * cap + s]) live[n++] = s;
      for (let h = 0; h < nh; h++) {
        const base = (b * nkv + ((h / group) | 0)) * cap * hd;
        const qo = (b * nh + h) * hd;
        let max = -Infinity;
        for (let j = 0; j < n; j++) {
          const ko = base + live[j] * hd;
          let dot = 0;
          for (let d = 0; d < hd; d++) dot += q[qo + d] * K[ko + d];
          const z = Math.fround(dot) * scale;
          scores[j] = z;
          if (z > max) max = z;
        }
        let sum = 0;
        for (let j = 0; j < n; j++) {
          const e = Math.exp(scores[j] - max);
          scores[j] = e;
          sum += e;
        }
        acc.fill(0);
        for (let j = 0; j < n; j++) {
          const p = scores[j] / sum;
          const vo = base + live[j] * hd;
          for (let d = 0; d < hd; d++) acc[d] += p * V[vo + d];
        }
        for (let d = 0; d < hd; d++) ctx[qo + d] = acc[d];
      }
    }
    return ctx;
  }

  /** Write this step's K/V [B, nkv * hd] at `slot` of each row. */
  private append(layer: number, k: Float32Array, v: Float32Array, slot: number): void {
    const { numKvHeads: nkv, headDim: hd } = this.model.config;
    this.calls++;
    for (let b = 0; b < this.rows; b++) {
      for (let g = 0; g < nkv; g++) {
        const src = (b * nkv + g) * hd;
        const dst = ((b * nkv + g) * this.cap + slot) * hd;
        this.store.k[layer].set(k.subarray(src, src + hd), dst);
        this.store.v[layer].set(v.subarray(src, src + hd), dst);
      }
    }
  }

  /** One token per row -> the next token's logits, Float32Array [B * V] (row-major). */
  step(tokens: number[]): Float32Array {
    const c = this.model.config;
    const H = c.hiddenSize;
    const B = this.rows;
    if (tokens.length !== B) throw new Error(`FusedDecoder.step: ${tokens.length} tokens for ${B} rows`);
    if (this.length === this.cap) this.grow();
    const h = new Float32Array(B * H); // [B, H]
    const table = this.be.typedArrayFromHeap(this.embed) as Float32Array; // [V, H]
    tokens.forEach((t, b) => {
      if (!Number.isInteger(t) || t < 0 || t >= c.vocabSize) throw new Error(`FusedDecoder.step: token id ${t} is outside the vocabulary [0, ${c.vocabSize})`);
      h.set(table.subarray(t * H, (t + 1) * H), b * H);
    });
    this.calls++; // the embedding lookup
    for (let b = 0; b < B; b++) this.store.mask[b * this.cap + this.length] = 1;
    this.length++;
    const n = new Float32Array(B * H);
    for (const [i, l] of this.layers.entries()) {
      this.norm(h, l.inNorm, n);
      let x = this.toHeap(n, H);
      const q = this.apply(x, l.proj.q_proj);
      const k = this.apply(x, l.proj.k_proj);
      const v = this.apply(x, l.proj.v_proj);
      this.be.disposeData(x.dataId);
      if (l.qNorm && l.kNorm) {
        this.norm(q, l.qNorm, q);
        this.norm(k, l.kNorm, k);
      }
      this.rope(q, c.numHeads);
      this.rope(k, c.numKvHeads);
      this.append(i, k, v, this.length - 1); // the slot this step opened
      x = this.toHeap(this.attend(i, q), c.numHeads * c.headDim);
      const o = this.apply(x, l.proj.o_proj);
      this.be.disposeData(x.dataId);
      for (let i = 0; i < h.length; i++) h[i] = h[i] + o[i];
      this.calls++;
      this.norm(h, l.postNorm, n);
      x = this.toHeap(n, H);
      const gate = this.apply(x, l.proj.gate_proj);
      const up = this.apply(x, l.proj.up_proj);
      this.be.disposeData(x.dataId);
      for (let i = 0; i < gate.length; i++) {
        const g = gate[i];
        gate[i] = Math.fround(g * Math.fround(1 / (1 + Math.exp(-g)))) * up[i]; // silu(g) * u
      }
      x = this.toHeap(gate, c.intermediateSize);
      const d = this.apply(x, l.proj.down_proj);
      this.be.disposeData(x.dataId);
      for (let i = 0; i < h.length; i++) h[i] = h[i] + d[i];
      this.calls += 2; // this residual and the SwiGLU above
    }
    for (let b = 0; b < B; b++) this.positions[b]++;
    this.norm(h, this.finalNorm, n);
    const x = this.toHeap(n, H);
    const logits = this.project(x);
    this.be.disposeData(x.dataId);
    return logits;
  }

  /** Final-normed rows x [B, H] on the heap -> logits [B, V], block by block into each row's columns. */
  private project(x: tf.TensorInfo): Float32Array {
    const head = this.head;
    if ('w' in head) return this.fromHeap(this.mm(x, head.w, head.transposeB));
    const V = this.model.config.vocabSize;
    const logits = new Float32Array(this.rows * V);
    head.blocks.forEach((block, k) => {
      const out = this.mm(x, block); // [B, V_k], read in place: nothing allocates on the heap before it is freed
      const part = this.be.typedArrayFromHeap(out) as Float32Array;
      const n = block.shape[1];
      for (let b = 0; b < this.rows; b++) logits.set(part.subarray(b * n, (b + 1) * n), b * V + head.starts[k]);
      this.be.disposeData(out.dataId);
    });
    return logits;
  }

  /** Keep only these rows (by index, in this order), as selectCacheRows does for the plain cache. */
  keepRows(rows: number[]): void {
    if (rows.every((r, j) => j === 0 || r > rows[j - 1])) this.compact(rows);
    else this.store = this.restore(this.store, this.cap, rows, this.cap);
    this.positions = Int32Array.from(rows, (r) => this.positions[r]);
    this.rows = rows.length;
  }

  /** keepRows for rows in ascending order (generate's): each moves down in place, no new store. */
  private compact(rows: number[]): void {
    const { numKvHeads: nkv, headDim: hd } = this.model.config;
    const per = nkv * this.cap * hd; // one row's slots in a layer's K or V
    const { k, v, mask } = this.store;
    rows.forEach((r, j) => {
      if (r === j) return;
      for (let l = 0; l < k.length; l++) {
        k[l].copyWithin(j * per, r * per, (r + 1) * per);
        v[l].copyWithin(j * per, r * per, (r + 1) * per);
      }
      mask.copyWithin(j * this.cap, r * this.cap, (r + 1) * this.cap);
    });
  }

  dispose(): void {
    for (const t of this.owned) t.dispose();
    this.owned.length = 0;
    this.store = { k: [], v: [], mask: new Uint8Array(0), arena: null };
  }
}
