/**
 * A faster `BatchMatMul` for tfjs-backend-wasm 4.22: its kernel is ~10x slower when either
 * operand is flagged transposed (measured on this machine, [2048,128] x [384,128]^T: 113 ms vs
 * 8.6 ms untransposed, 1.8 vs 23 GFLOP/s). Every linear layer (x W^T), the lm_head, attention
 * scores (q k^T) and every weight gradient (dy^T x) take that slow path. This wrapper transposes
 * the flagged operand physically with the wasm Transpose kernel, then calls the original kernel
 * with both flags off. Same numbers (the products are summed in the same order), ~5-10x faster.
 * Batched products of small entries (attention and its gradients) go to the project's SIMD kernel
 * instead (bmm-wasm.ts, transposes read in place): ~11 GFLOP/s against the stock loop's 1-2 on
 * [126, 22, 16] x [126, 16, 39]; equal to float rounding, summed in another order. So do single products
 * of an inner dimension up to 256 (the relay model's layers): the same sums in the same order as XNNPACK's,
 * the same numbers to the bit, ~1.5x faster here.
 *
 * For: wasm training and inference (scripts/pretrain.ts, CPU runs). Not for: webgpu or cpu,
 * which are untouched.
 *
 * Example: registerWasmFastMatMul(); tf.matMul(x, w, false, true) now runs transpose(w) then x @ w'.
 * Call once after the wasm backend is initialised; a second call is a no-op.
 */
import * as tf from '@tensorflow/tfjs-core';
import { ENGINE_PATHS } from '../paths.ts';
import { smallBatchMatMul, smallBatchMatMulAvailable } from './bmm-wasm.ts';
import type { WasmBackendInternals } from './wasm-backend.ts';

let original: tf.KernelConfig | null = null;

/** Swap the last two axes of x with the backend's own Transpose kernel (untracked; caller disposes). */
function transposeLast(x: tf.TensorInfo, backend: object): tf.TensorInfo {
  const rank = x.shape.length;
  const perm = [...Array(rank).keys()];
  [perm[rank - 2], perm[rank - 1]] = [perm[rank - 1], perm[rank - 2]];
  const kernel = tf.getKernel('Transpose', 'wasm');
  if (!kernel) throw new Error('wasm-matmul: the wasm Transpose kernel is not registered');
  return kernel.kernelFunc({ inputs: { x }, attrs: { perm }, backend: backend as never }) as tf.TensorInfo;
}

const run = (name: string, inputs: unknown, attrs: unknown, backend: object): tf.TensorInfo =>
  tf.getKernel(name, 'wasm')!.kernelFunc({ inputs: inputs as never, attrs: attrs as never, backend: backend as never }) as tf.TensorInfo;

/** Below this many multiply-adds per batch entry the stock batched loop is as fast as slicing. */
const SPLIT_MIN_WORK = 32768;

/**
 * a [...batch, m, k] @ b [...batch, k, n], neither transposed. The stock kernel is fast for one
 * batch entry and slow (~2 GFLOP/s) for several (attention: [B*heads, T, hd] x [.., hd, S]), so
 * big enough batched products run one entry at a time (Slice, 2-D product, Concat).
 */
function plainMatMul(a: tf.TensorInfo, b: tf.TensorInfo, backend: object, baseFunc: tf.KernelFunc): tf.TensorInfo {
  const attrs = { transposeA: false, transposeB: false };
  const [m, k] = a.shape.slice(-2);
  const n = b.shape[b.shape.length - 1];
  const batchA = a.shape.slice(0, -2);
  const batch = batchA.reduce((x, y) => x * y, 1);
  const sameBatch = batchA.length === b.shape.length - 2 && batchA.every((d, i) => d === b.shape[i]);
  if (batch <= 1 || !sameBatch || m * k * n < SPLIT_MIN_WORK) return baseFunc({ inputs: { a, b }, attrs, backend: backend as never }) as tf.TensorInfo;
  const wasm = backend as unknown as WasmBackendInternals;
  const a3 = run('Reshape', { x: a }, { shape: [batch, m, k] }, backend);
  const b3 = run('Reshape', { x: b }, { shape: [batch, k, n] }, backend);
  const parts: tf.TensorInfo[] = [];
  for (let i = 0; i < batch; i++) {
    const ai = run('Slice', { x: a3 }, { begin: [i, 0, 0], size: [1, m, k] }, backend);
    const bi = run('Slice', { x: b3 }, { begin: [i, 0, 0], size: [1, k, n] }, backend);
    parts.push(baseFunc({ inputs: { a: ai, b: bi }, attrs, backend: backend as never }) as tf.TensorInfo);
    wasm.disposeData(ai.dataId);
    wasm.disposeData(bi.dataId);
  }
  const joined = run('Concat', parts, { axis: 0 }, backend);
  for (const t of [a3, b3, ...parts]) wasm.disposeData(t.dataId);
  const out = run('Reshape', { x: joined }, { shape: [...batchA, m, n] }, backend);
  wasm.disposeData(joined.dataId);
  return out;
}

/** At most this many multiply-adds per batch entry go to the small-entry kernel (bmm-wasm.ts). */
const SMALL_MAX_WORK = 1 << 20;
/**
 * A single product goes to the kernel when its inner dimension is at most this, its multiply-adds at most
 * PLAIN_MAX_WORK and its operands under PLAIN_MAX_FLOATS: the small model's layers ([693, 64] x [64, 192]: ~19
 * against XNNPACK's ~12 GFLOP/s here, and without the wrapper's physical transposes), not a weight gradient's
 * long reduction over rows (k = 594: XNNPACK is as fast or faster) nor a large model's layers.
 */
const PLAIN_MAX_K = 256;
const PLAIN_MAX_WORK = 1 << 24;
/** The kernel's memory holds a, b and c and is never shrunk: a single product it takes stays under 8 MB of them. */
const PLAIN_MAX_FLOATS = 1 << 21;

/** Whether op(a) @ op(b) goes to the project's kernel: many small entries, or (plainProducts) one product of a short inner dimension. */
function kernelTakes(batch: number, m: number, k: number, n: number): boolean {
  if (batch > 1) return ENGINE_PATHS.smallProducts && m * k * n <= SMALL_MAX_WORK;
  return ENGINE_PATHS.plainProducts && k <= PLAIN_MAX_K && m * k * n <= PLAIN_MAX_WORK && m * k + k * n + m * n <= PLAIN_MAX_FLOATS;
}

/**
 * A batched product of small entries (attention and its gradients), or one product of a short inner
 * dimension, through the project's SIMD kernel, transposes read in place; null where it does not apply
 * (kernelTakes, batch dimensions that broadcast dimension by dimension, other dtypes, no wasm SIMD).
 */
function smallEntries(a: tf.TensorInfo, b: tf.TensorInfo, transA: boolean, transB: boolean, backend: object): tf.TensorInfo | null {
  if (a.dtype !== 'float32' || b.dtype !== 'float32' || a.shape.length < 2 || b.shape.length < 2) return null;
  const [m, k] = transA ? [a.shape[a.shape.length - 1], a.shape[a.shape.length - 2]] : a.shape.slice(-2);
  const n = b.shape[b.shape.length - (transB ? 2 : 1)];
  const dimsA = a.shape.slice(0, -2);
  const dimsB = b.shape.slice(0, -2);
  const batchA = dimsA.reduce((x, y) => x * y, 1);
  const batchB = dimsB.reduce((x, y) => x * y, 1);
  const batch = Math.max(batchA, batchB);
  const same = dimsA.length === dimsB.length && dimsA.every((d, i) => d === dimsB[i]);
  if (batch < 1 || !kernelTakes(batch, m, k, n) || m * k * n === 0 || !(same || batchA === 1 || batchB === 1) || !smallBatchMatMulAvailable()) return null;
  const wasm = backend as unknown as WasmBackendInternals;
  const out = wasm.makeOutput([...tf.backend_util.assertAndGetBroadcastShape(dimsA, dimsB), m, n], 'float32'); // tfjs's output shape
  // Views after makeOutput: allocating may grow the heap, which detaches older views.
  smallBatchMatMul(wasm.typedArrayFromHeap(a) as Float32Array, wasm.typedArrayFromHeap(b) as Float32Array,
    { batch, batchA, batchB, m, k, n, transA, transB }, wasm.typedArrayFromHeap(out) as Float32Array);
  return out;
}

/** Replaces the wasm BatchMatMul by the transpose-first wrapper; returns whether it was installed now. */
export function registerWasmFastMatMul(): boolean {
  if (original) return false;
  const base = tf.getKernel('BatchMatMul', 'wasm');
  if (!base) throw new Error('registerWasmFastMatMul: call it after the wasm backend is initialised (no BatchMatMul kernel for wasm yet)');
  original = { ...base };
  const baseFunc = base.kernelFunc;
  tf.unregisterKernel('BatchMatMul', 'wasm');
  tf.registerKernel({
    ...base,
    kernelFunc: ({ inputs, attrs, backend }) => {
      const { transposeA, transposeB } = attrs as unknown as { transposeA: boolean; transposeB: boolean };
      let { a, b } = inputs as { a: tf.TensorInfo; b: tf.TensorInfo };
      const small = smallEntries(a, b, transposeA, transposeB, backend);
      if (small) return small;
      const temps: tf.TensorInfo[] = [];
      if (transposeA) temps.push((a = transposeLast(a, backend)));
      if (transposeB) temps.push((b = transposeLast(b, backend)));
      const out = plainMatMul(a, b, backend, baseFunc);
      for (const t of temps) (backend as unknown as WasmBackendInternals).disposeData(t.dataId);
      return out;
    },
  });
  return true;
}
