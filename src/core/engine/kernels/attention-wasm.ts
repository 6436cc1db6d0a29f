/**
 * The project's wasm SIMD attention kernel (./c/attention.c, built into ./attention-wasm-bytes.ts by
 * scripts/build-kernels.sh): one decoding step's attention over a KV cache for every row and head.
 *
 * Why: in the fused decoding step (model/decode-wasm.ts) attention over the cache is the one part
 * whose work grows with the context; a JS loop does ~0.9 GFLOP/s on it here, the SIMD kernel several
 * times that (`npm run bench -- decode`).
 *
 * Each `AttentionArena` is a module instance of its own, whose memory holds one decoder's cache
 * (K and V of every layer), its queries, outputs and mask, as typed-array views: the decoder writes
 * K/V and queries into the views and calls `attend`. Separate instances keep two generations that
 * interleave (two awaits in flight) from sharing buffers. The memory is sized once per layout and
 * never grows afterwards, so the views stay valid for the arena's life.
 *
 * For: model/decode-wasm.ts. Not for: prefill or training (tfjs ops there).
 *
 * Example:
 *   const a = AttentionArena.create({ layers: 1, rows: 1, nh: 1, nkv: 1, hd: 4, cap: 2 })!;
 *   a.k[0].set([1, 0, 0, 0,  0, 1, 0, 0]); a.v[0].set([1, 2, 3, 4,  5, 6, 7, 8]); a.mask.set([1, 1]);
 *   a.q.set([0, 0, 0, 0]); a.attend(0, 1, 2, 0.5);   // equal scores -> out = mean of the V rows
 *   a.out  -> [3, 4, 5, 6]
 */
import { ATTENTION_WASM } from './attention-wasm-bytes.ts';

export interface ArenaLayout {
  layers: number;
  rows: number;
  nh: number;
  nkv: number;
  hd: number;
  /** Cache slots per row. */
  cap: number;
}

type AttendFn = (q: number, k: number, v: number, mask: number, rows: number, nh: number, nkv: number, hd: number,
  cap: number, slots: number, scale: number, out: number, scores: number) => void;

/** Where the kernel's own stack and data end (the build's --initial-memory): buffers start here. */
const FIRST_FREE = 131072;
const PAGE = 65536;

let compiled: WebAssembly.Module | null | undefined;

/** The compiled module (once, synchronously: ~2.5 KB, under browsers' main-thread limit), or null where wasm SIMD is missing. */
function kernelModule(): WebAssembly.Module | null {
  if (compiled === undefined) {
    try {
      compiled = new WebAssembly.Module(Uint8Array.from(atob(ATTENTION_WASM), (c) => c.charCodeAt(0)));
    } catch {
      compiled = null;
    }
  }
  return compiled;
}

export class AttentionArena {
  /** Per layer, [rows, nkv, cap, hd]. */
  readonly k: Float32Array[] = [];
  readonly v: Float32Array[] = [];
  /** [rows, nh, hd] in and out; mask [rows, cap]. */
  readonly q: Float32Array;
  readonly out: Float32Array;
  readonly mask: Uint8Array;
  private readonly fn: AttendFn;
  private readonly offsets: { k: number[]; v: number[]; q: number; out: number; mask: number; scores: number };

  private constructor(readonly layout: ArenaLayout, instance: WebAssembly.Instance) {
    const { layers, rows, nh, nkv, hd, cap } = layout;
    const memory = instance.exports.memory as WebAssembly.Memory;
    this.fn = instance.exports.attend as AttendFn;
    const cacheBytes = rows * nkv * cap * hd * 4;
    const headBytes = rows * nh * hd * 4;
    let at = FIRST_FREE;
    const take = (bytes: number) => {
      const start = at;
      at += Math.ceil(bytes / 16) * 16;
      return start;
    };
    const k: number[] = [];
    const v: number[] = [];
    for (let l = 0; l < layers; l++) {
      k.push(take(cacheBytes));
      v.push(take(cacheBytes));
    }
    this.offsets = { k, v, q: take(headBytes), out: take(headBytes), scores: take(cap * 8), mask: take(rows * cap) };
    const need = Math.ceil(at / PAGE) - memory.buffer.byteLength / PAGE;
    if (need > 0) memory.grow(need);
    const buf = memory.buffer;
    for (let l = 0; l < layers; l++) {
      this.k.push(new Float32Array(buf, k[l], cacheBytes / 4));
      this.v.push(new Float32Array(buf, v[l], cacheBytes / 4));
    }
    this.q = new Float32Array(buf, this.offsets.q, headBytes / 4);
    this.out = new Float32Array(buf, this.offsets.out, headBytes / 4);
    this.mask = new Uint8Array(buf, this.offsets.mask, rows * cap);
  }

  /** An arena for this layout, or null where the kernel cannot run (no wasm SIMD, or memory past 4 GB). */
  static create(layout: ArenaLayout): AttentionArena | null {
    const module = kernelModule();
    const bytes = 2 * layout.layers * layout.rows * layout.nkv * layout.cap * layout.hd * 4;
    if (!module || bytes > 3.5 * 2 ** 30) return null;
    return new AttentionArena(layout, new WebAssembly.Instance(module, {}));
  }

  /** out = attention of `rows` rows over slots [0, slots) of layer `layer`, scores scaled by `scale`. */
  attend(layer: number, rows: number, slots: number, scale: number): void {
    const { nh, nkv, hd, cap } = this.layout;
    if (rows > this.layout.rows || slots > cap) {
      throw new Error(`AttentionArena.attend: ${rows} rows x ${slots} slots exceed the layout ${this.layout.rows} x ${cap}`);
    }
    const o = this.offsets;
    this.fn(o.q, o.k[layer], o.v[layer], o.mask, rows, nh, nkv, hd, cap, slots, scale, o.out, o.scores);
  }
}
