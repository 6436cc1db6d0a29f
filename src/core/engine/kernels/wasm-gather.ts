/**
 * A `GatherV2` for tfjs-backend-wasm 4.22 that copies contiguous runs through views of the heap. The
 * stock kernel walks the output element by element with index arithmetic per element: copying a
 * cache's rows ([G, kv heads, P, head dim] -> [B, ...], a shared prefix for every row of a
 * batch: engine/model/prefill.ts, shared-prefix.ts) took ~10 % of a wide relay iteration. Here each
 * (outer, index) pair is one run of the trailing dimensions, copied with `set`.
 * The same values as the stock kernel (a copy), so nothing downstream changes.
 *
 * For: wasm (registered by register.ts), batchDims 0. Not for: batchDims > 0 or string tensors,
 * which keep the stock kernel.
 *
 * Example: x [3, 2] = [[0, 1], [2, 3], [4, 5]], indices [2, 0, 2], axis 0
 *   -> runs of 2 at offsets 4, 0, 4 -> [[4, 5], [0, 1], [4, 5]].
 */
import * as tf from '@tensorflow/tfjs-core';
import type { WasmBackendInternals } from './wasm-backend.ts';

let original: tf.KernelConfig | null = null;

const gatherKernel: tf.KernelFunc = ({ inputs, attrs, backend }) => {
  const { x, indices } = inputs as { x: tf.TensorInfo; indices: tf.TensorInfo };
  const { axis, batchDims } = attrs as unknown as { axis: number; batchDims: number };
  if (x.dtype === 'string' || (batchDims ?? 0) !== 0) return original!.kernelFunc({ inputs, attrs, backend });
  const a = tf.util.parseAxisParam(axis, x.shape)[0];
  const outer = x.shape.slice(0, a).reduce((p, d) => p * d, 1);
  const along = x.shape[a];
  const inner = x.shape.slice(a + 1).reduce((p, d) => p * d, 1);
  const shape = [...x.shape.slice(0, a), ...indices.shape, ...x.shape.slice(a + 1)];
  const wasm = backend as unknown as WasmBackendInternals;
  const out = wasm.makeOutput(shape, x.dtype);
  const n = tf.util.sizeFromShape(indices.shape);
  if (n === 0 || outer * inner === 0) return out;
  // Views after makeOutput: allocating may grow the heap, which detaches older views.
  const src = wasm.typedArrayFromHeap(x);
  const idx = wasm.typedArrayFromHeap(indices);
  const dst = wasm.typedArrayFromHeap(out);
  for (let i = 0; i < n; i++) {
    if (!(idx[i] >= 0 && idx[i] < along)) throw new Error(`GatherV2: index ${idx[i]} is not in [0, ${along - 1}]`);
  }
  for (let o = 0; o < outer; o++) {
    const from = o * along * inner;
    const to = o * n * inner;
    for (let i = 0; i < n; i++) {
      const s = from + idx[i] * inner;
      dst.set(src.subarray(s, s + inner), to + i * inner);
    }
  }
  return out;
};

/** Replaces the wasm GatherV2 kernel by the run-copying one; returns whether it was installed now. */
export function registerWasmGather(): boolean {
  if (original) return false;
  const base = tf.getKernel('GatherV2', 'wasm');
  if (!base) throw new Error('registerWasmGather: call it after the wasm backend is initialised (no GatherV2 kernel for wasm yet)');
  original = { ...base };
  tf.unregisterKernel('GatherV2', 'wasm');
  tf.registerKernel({ ...base, kernelFunc: gatherKernel });
  return true;
}

/** Puts the stock kernel back (for comparisons in tests and benchmarks). */
export function unregisterWasmGather(): void {
  if (!original) return;
  tf.unregisterKernel('GatherV2', 'wasm');
  tf.registerKernel(original);
  original = null;
}
