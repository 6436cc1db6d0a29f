/**
 * `UnsortedSegmentSum` for tfjs-backend-wasm 4.22, which lacks it. It is the gradient of
 * `tf.gather`, so without it an embedding table looked up with `gather` cannot be trained on wasm.
 *
 * For: training the shipped tiny models from scratch on `wasm` (scripts/pretrain.ts) through the
 * same `CausalLM.forward` that inference uses. Not for: speed; it is a plain loop on the host over
 * the wasm heap (one pass over the gradient), which is cheap next to the matmuls around it.
 *
 * out[s, ...] = sum over i with segmentIds[i] == s of x[i, ...]; ids outside [0, numSegments) are dropped
 * (as TensorFlow does).
 * Example: x [[1, 2], [3, 4], [5, 6]], segmentIds [0, 2, 0], numSegments 3 -> [[6, 8], [0, 0], [3, 4]].
 *
 * kernels/register.ts registers it for wasm once the backend is chosen.
 */
import * as tf from '@tensorflow/tfjs-core';
import type { WasmBackendInternals } from './wasm-backend.ts';

export const wasmUnsortedSegmentSum: tf.KernelConfig = {
  kernelName: 'UnsortedSegmentSum',
  backendName: 'wasm',
  kernelFunc: ({ inputs, attrs, backend }) => {
    const { x, segmentIds } = inputs as { x: tf.TensorInfo; segmentIds: tf.TensorInfo };
    const numSegments = (attrs as { numSegments: number }).numSegments;
    const wasm = backend as unknown as WasmBackendInternals;
    const rows = segmentIds.shape.reduce((a, b) => a * b, 1);
    const inner = x.shape.slice(segmentIds.shape.length);
    const width = inner.reduce((a, b) => a * b, 1);
    if (x.shape.slice(0, segmentIds.shape.length).reduce((a, b) => a * b, 1) !== rows) {
      throw new Error(`UnsortedSegmentSum (wasm): x shape [${x.shape}] does not start with segmentIds shape [${segmentIds.shape}]`);
    }
    // Allocate first: growing the heap would detach views read before it.
    const out = wasm.makeOutput([numSegments, ...inner], x.dtype);
    const xs = Float32Array.from(wasm.readSync(x.dataId));
    const ids = Int32Array.from(wasm.readSync(segmentIds.dataId));
    const o = wasm.typedArrayFromHeap(out);
    o.fill(0);
    for (let i = 0; i < rows; i++) {
      const s = ids[i];
      if (s < 0 || s >= numSegments) continue;
      const src = i * width;
      const dst = s * width;
      for (let j = 0; j < width; j++) o[dst + j] += xs[src + j];
    }
    return out;
  },
};
