/**
 * The project's wasm SIMD kernel for many small matrix products at once (./c/bmm.c, built into
 * ./bmm-wasm-bytes.ts by scripts/build-kernels.sh): c[i] = op(a[i]) @ op(b[i]) for every batch entry.
 *
 * Why: attention in a forward or backward pass is a batched product of small entries
 * ([B * heads, T, 16] x [.., 16, S] and its gradients); tfjs-backend-wasm runs those through a loop of
 * its own at 1-2 GFLOP/s, under a fifth of what its 2-D product reaches here (docs/performance.md).
 *
 * One module instance serves every call: its memory holds a, b, c and the packing scratch, grown as a
 * call needs (never shrunk). A call copies its operands in and the product out: small next to the
 * product for the shapes it is used for.
 *
 * For: wasm-matmul.ts (the wasm BatchMatMul kernel): batched small entries, and single products of an inner
 * dimension up to 256 (the same sums as XNNPACK's, faster here). Not for: long inner dimensions (XNNPACK is as fast or faster).
 *
 * Example: smallBatchMatMul(Float32Array.of(1, 2, 3, 4), Float32Array.of(1, 0, 0, 1),
 *            { batch: 1, batchA: 1, batchB: 1, m: 2, k: 2, n: 2, transA: false, transB: false })
 *          -> Float32Array [1, 2, 3, 4]      (a @ identity)
 */
import { BMM_WASM } from './bmm-wasm-bytes.ts';

export interface BmmShape {
  /** Entries of the product; batchA and batchB are each `batch` or 1 (broadcast). */
  batch: number;
  batchA: number;
  batchB: number;
  m: number;
  k: number;
  n: number;
  /** a is [batchA, k, m] (else [batchA, m, k]); b is [batchB, n, k] (else [batchB, k, n]). */
  transA: boolean;
  transB: boolean;
}

type BmmFn = (a: number, b: number, c: number, batch: number, batchA: number, batchB: number, m: number, k: number, n: number,
  transA: number, transB: number, pa: number, pb: number) => void;

/** Where the kernel's own stack and data end (the build's --initial-memory): buffers start here. */
const FIRST_FREE = 131072;
const PAGE = 65536;

let kernel: { fn: BmmFn; memory: WebAssembly.Memory } | null | undefined;

/** The instance (made once, compiled synchronously: ~2.1 KB, under browsers' 4 KB main-thread limit), or null where wasm SIMD is missing. */
function instance(): { fn: BmmFn; memory: WebAssembly.Memory } | null {
  if (kernel === undefined) {
    try {
      const module = new WebAssembly.Module(Uint8Array.from(atob(BMM_WASM), (c) => c.charCodeAt(0)));
      const inst = new WebAssembly.Instance(module, {});
      kernel = { fn: inst.exports.bmm as BmmFn, memory: inst.exports.memory as WebAssembly.Memory };
    } catch {
      kernel = null;
    }
  }
  return kernel;
}

/** Whether the kernel can run here (wasm SIMD). */
export function smallBatchMatMulAvailable(): boolean {
  return instance() !== null;
}

/**
 * The product into `out` (or a new array), [batch, m, n] row-major. Operand sizes are checked against
 * the shape. Throws where the kernel cannot run (check `smallBatchMatMulAvailable` first).
 */
export function smallBatchMatMul(a: Float32Array, b: Float32Array, s: BmmShape, out?: Float32Array): Float32Array {
  const k = instance();
  if (!k) throw new Error('smallBatchMatMul: wasm SIMD is not available');
  const { batch, batchA, batchB, m, n } = s;
  if ((batchA !== batch && batchA !== 1) || (batchB !== batch && batchB !== 1)) {
    throw new Error(`smallBatchMatMul: batches ${batchA} and ${batchB} for ${batch} entries`);
  }
  if (a.length !== batchA * m * s.k || b.length !== batchB * s.k * n) {
    throw new Error(`smallBatchMatMul: operands of ${a.length} and ${b.length} values for [${batchA}, ${m}, ${s.k}] x [${batchB}, ${s.k}, ${n}]`);
  }
  const c = out ?? new Float32Array(batch * m * n);
  if (c.length !== batch * m * n) throw new Error(`smallBatchMatMul: output of ${c.length} values for [${batch}, ${m}, ${n}]`);
  const n4 = (n + 7) & ~7;
  const sizes = [a.length, b.length, c.length, m * s.k, s.k * n4].map((x) => Math.ceil((x * 4) / 16) * 16);
  const at: number[] = [];
  let end = FIRST_FREE;
  for (const size of sizes) {
    at.push(end);
    end += size;
  }
  const need = Math.ceil(end / PAGE) - k.memory.buffer.byteLength / PAGE;
  if (need > 0) k.memory.grow(need);
  const heap = new Float32Array(k.memory.buffer);
  heap.set(a, at[0] / 4);
  heap.set(b, at[1] / 4);
  k.fn(at[0], at[1], at[2], batch, batchA, batchB, m, s.k, n, s.transA ? 1 : 0, s.transB ? 1 : 0, at[3], at[4]);
  c.set(heap.subarray(at[2] / 4, at[2] / 4 + c.length));
  return c;
}
