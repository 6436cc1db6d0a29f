/**
 * The internals of tfjs-backend-wasm that the project's own kernels and the fused decoding step use,
 * typed loosely in one place (no wasm types are imported; tfjs has had no release since 2024, so these
 * members are stable in the version the project pins).
 *
 * For: the wasm kernels (logprob-wasm.ts, wasm-segment-sum.ts, wasm-slice.ts, wasm-matmul.ts) and
 * model/decode-wasm.ts. Not for: choosing the backend (engine/backend.ts).
 * Example: const out = (backend as unknown as WasmBackendInternals).makeOutput([n], 'float32');
 *          const heap = wasm.typedArrayFromHeap(out) as Float32Array;   // a view into the wasm heap
 */
import type * as tf from '@tensorflow/tfjs-core';

export interface WasmBackendInternals {
  /** A new output tensor on the wasm heap. */
  makeOutput(shape: number[], dtype: tf.DataType): tf.TensorInfo;
  /** The tensor's data as a view into the wasm heap (valid until the heap grows). */
  typedArrayFromHeap(t: tf.TensorInfo): tf.TypedArray;
  /** The tensor's data, read synchronously. */
  readSync(dataId: object): ArrayLike<number>;
  disposeData(dataId: object, force?: boolean): boolean;
}
