/**
 * An `Identity` for tfjs-backend-wasm 4.22 that shares its input's buffer instead of copying it.
 *
 * Why: the gradient tape saves every tensor a gradient will need as a clone, and a clone runs the
 * Identity kernel. The cpu and webgpu kernels share the data (reference count + 1); the stock wasm
 * one copies it. So on wasm each training forward copied every weight it multiplied by (the
 * 113 MB output projection included) and each saved activation once per op that saved it: 2,172
 * copies and 9 % of the kernel time of a 4-layer SmolLM2-shape update step (docs/performance.md), and
 * a second copy of the weights in memory. No wasm kernel writes into its inputs (tfjs tensors are
 * immutable; the project's kernels write only into buffers they allocate), so sharing is safe, as
 * the stock wasm Reshape already shares.
 *
 * For: wasm (registered by register.ts). Not for: string tensors, which keep the stock kernel.
 *
 * Example: const y = tf.clone(x)  // same buffer as x: disposing x leaves y readable;
 *          x.dispose(); y.dispose() // the buffer is freed with the last of the two
 */
import * as tf from '@tensorflow/tfjs-core';

interface RefCountingBackend {
  incRef(dataId: object): void;
}

let original: tf.KernelConfig | null = null;

const identityKernel: tf.KernelFunc = ({ inputs, attrs, backend }) => {
  const { x } = inputs as { x: tf.TensorInfo };
  if (x.dtype === 'string') return original!.kernelFunc({ inputs, attrs, backend });
  (backend as unknown as RefCountingBackend).incRef(x.dataId);
  return { dataId: x.dataId, shape: x.shape, dtype: x.dtype };
};

/** Replaces the wasm Identity kernel by the sharing one; returns whether it was installed now. */
export function registerWasmIdentity(): boolean {
  if (original) return false;
  const base = tf.getKernel('Identity', 'wasm');
  if (!base) throw new Error('registerWasmIdentity: call it after the wasm backend is initialised (no Identity kernel for wasm yet)');
  original = { ...base };
  tf.unregisterKernel('Identity', 'wasm');
  tf.registerKernel({ ...base, kernelFunc: identityKernel });
  return true;
}

/** Puts the stock kernel back (for comparisons in tests and benchmarks). */
export function unregisterWasmIdentity(): void {
  if (!original) return;
  tf.unregisterKernel('Identity', 'wasm');
  tf.registerKernel(original);
  original = null;
}
