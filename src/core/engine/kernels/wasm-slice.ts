/**
 * A `Slice` for tfjs-backend-wasm 4.22 that copies only the slice. The stock kernel first reads the
 * whole input out of the wasm heap (`readSync`: a fresh ArrayBuffer the size of the input), then
 * copies the slice from that copy. Slicing one batch entry out of n therefore moves n times the
 * bytes it needs, and every call allocates a new buffer the size of the input, which the operating
 * system hands out page by page (minor page faults). The fast matmul (wasm-matmul.ts) slices its
 * batched operands entry by entry, so attention and the update paid this per head and per row.
 * This kernel reads the input through a view of the heap instead and copies contiguous runs.
 *
 * SplitV (tf.split) gets the same treatment: the stock one calls that Slice once per part.
 *
 * For: wasm (registered by register.ts). Not for: string tensors, which keep the stock kernels.
 *
 * Example: x [4, 3, 2] (values 0..23), begin [1, 0, 1], size [2, 3, 1]
 *   -> runs of 1 value at offsets 7, 9, 11, 13, 15, 17 -> [7, 9, 11, 13, 15, 17] as [2, 3, 1].
 *   x [8, 16, 32], begin [3, 0, 0], size [1, 16, 32] -> one run of 512 values at offset 1536.
 */
import * as tf from '@tensorflow/tfjs-core';
import type { WasmBackendInternals } from './wasm-backend.ts';

let original: tf.KernelConfig | null = null;

/**
 * Where the slice's contiguous runs start in the input, and how long each run is: the trailing
 * dimensions the slice takes whole merge into one run with the first one it does not.
 */
export function sliceRuns(shape: readonly number[], begin: readonly number[], size: readonly number[]): { offsets: number[]; run: number } {
  const rank = shape.length;
  if (rank === 0) return { offsets: [0], run: 1 };
  const strides = new Array<number>(rank).fill(1);
  for (let d = rank - 2; d >= 0; d--) strides[d] = strides[d + 1] * shape[d + 1];
  let d = rank - 1;
  let run = size[d];
  while (d > 0 && size[d] === shape[d]) {
    d--;
    run *= size[d];
  }
  // Odometer over the dimensions before d (d itself is inside the run, starting at begin[d]).
  const offsets: number[] = [];
  const index = new Array<number>(d).fill(0);
  const base = begin.reduce((s, b, i) => s + b * strides[i], 0);
  for (;;) {
    offsets.push(base + index.reduce((s, v, i) => s + v * strides[i], 0));
    let k = d - 1;
    while (k >= 0 && ++index[k] === size[k]) index[k--] = 0;
    if (k < 0) break;
  }
  return { offsets, run };
}

const sliceKernel: tf.KernelFunc = ({ inputs, attrs, backend }) => {
  const { x } = inputs as { x: tf.TensorInfo };
  if (x.dtype === 'string') return original!.kernelFunc({ inputs, attrs, backend });
  const { begin, size } = attrs as unknown as { begin: number | number[]; size: number | number[] };
  const [begin_, size_] = tf.slice_util.parseSliceParams(x as tf.Tensor, begin, size);
  const wasm = backend as unknown as WasmBackendInternals;
  const out = wasm.makeOutput(size_, x.dtype);
  if (tf.util.sizeFromShape(size_) === 0) return out;
  // Views after makeOutput: allocating may grow the heap, which detaches older views.
  const src = wasm.typedArrayFromHeap(x);
  const dst = wasm.typedArrayFromHeap(out);
  const { offsets, run } = sliceRuns(x.shape, begin_, size_);
  offsets.forEach((o, i) => dst.set(src.subarray(o, o + run), i * run));
  return out;
};

/** SplitV (tf.split: rope halves, fused projections) as slices along one axis, each copied as above. */
const splitVKernel: tf.KernelFunc = ({ inputs, attrs, backend }) => {
  const { x } = inputs as { x: tf.TensorInfo };
  const { numOrSizeSplits, axis } = attrs as unknown as { numOrSizeSplits: number | number[]; axis: number };
  if (x.dtype === 'string') return originalSplit!.kernelFunc({ inputs, attrs, backend });
  const $axis = tf.util.parseAxisParam(axis, x.shape)[0];
  const sizes = tf.backend_util.prepareSplitSize(x as tf.Tensor, numOrSizeSplits, $axis);
  let start = 0;
  return sizes.map((s) => {
    const begin = x.shape.map((_, d) => (d === $axis ? start : 0));
    const size = x.shape.map((n, d) => (d === $axis ? s : n));
    start += s;
    return sliceKernel({ inputs: { x }, attrs: { begin, size } as never, backend }) as tf.TensorInfo;
  });
};

let originalSplit: tf.KernelConfig | null = null;

/** Replaces the wasm Slice and SplitV kernels by heap-view ones; returns whether they were installed now. */
export function registerWasmSlice(): boolean {
  if (original) return false;
  const base = tf.getKernel('Slice', 'wasm');
  const split = tf.getKernel('SplitV', 'wasm');
  if (!base || !split) throw new Error('registerWasmSlice: call it after the wasm backend is initialised (no Slice or SplitV kernel for wasm yet)');
  original = { ...base };
  originalSplit = { ...split };
  tf.unregisterKernel('Slice', 'wasm');
  tf.registerKernel({ ...base, kernelFunc: sliceKernel });
  tf.unregisterKernel('SplitV', 'wasm');
  tf.registerKernel({ ...split, kernelFunc: splitVKernel });
  return true;
}

/** Puts the stock kernels back (for comparisons in tests and benchmarks). */
export function unregisterWasmSlice(): void {
  if (!original || !originalSplit) return;
  tf.unregisterKernel('Slice', 'wasm');
  tf.registerKernel(original);
  tf.unregisterKernel('SplitV', 'wasm');
  tf.registerKernel(originalSplit);
  original = null;
  originalSplit = null;
}
