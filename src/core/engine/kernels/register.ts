/**
 * Registers the project's custom tfjs kernels (and their gradients) in one place.
 *
 * For: calling once after the backend is chosen (src/core/engine/backend.ts does it); safe to call again,
 * already registered kernels are left alone. Registering for `webgpu` is harmless when that backend
 * never starts (and for `wasm` likewise): tfjs only looks a kernel up for the active backend.
 * Not for: choosing between fused and plain paths; the op wrappers (e.g. ./logprob.ts) do that by
 * asking `tf.getKernel(name, tf.getBackend())`.
 *
 * Example:
 *   await initBackend();
 *   registerCustomKernels();
 *   selectedLogProbs(logits, targets); // fused on webgpu and wasm, plain ops on cpu
 */
import * as tf from '@tensorflow/tfjs-core';
import { selectedLogProbWasmKernels } from './logprob-wasm.ts';
import { selectedLogProbGrad, selectedLogProbKernels } from './logprob-webgpu.ts';
import { registerWasmIdentity } from './wasm-identity.ts';
import { registerWasmFastMatMul } from './wasm-matmul.ts';
import { registerWasmSlice } from './wasm-slice.ts';
import { registerWasmGather } from './wasm-gather.ts';
import { wasmUnsortedSegmentSum } from './wasm-segment-sum.ts';

/**
 * Fused chosen-token log-prob (webgpu and wasm: the same kernel names, one gradient);
 * UnsortedSegmentSum, missing from tfjs-backend-wasm 4.22; a faster wasm matmul and slice, and a wasm
 * Identity that shares its input rather than copying it.
 */
const KERNELS: tf.KernelConfig[] = [...selectedLogProbKernels, ...selectedLogProbWasmKernels, wasmUnsortedSegmentSum];
const GRADIENTS: tf.GradConfig[] = [selectedLogProbGrad];

/** Registers every custom kernel and gradient not registered yet; returns the kernel names added. */
export function registerCustomKernels(): string[] {
  const added: string[] = [];
  for (const k of KERNELS) {
    if (tf.getKernel(k.kernelName, k.backendName)) continue;
    tf.registerKernel(k);
    added.push(`${k.kernelName}@${k.backendName}`);
  }
  for (const g of GRADIENTS) {
    if (!tf.getGradient(g.kernelName)) tf.registerGradient(g);
  }
  // wasm's BatchMatMul is ~10x slower with a transposed operand: wrap it (once the wasm kernels exist).
  if (tf.getKernel('BatchMatMul', 'wasm') && registerWasmFastMatMul()) added.push('BatchMatMul@wasm (transpose-first wrapper)');
  // wasm's Slice copies its whole input out of the heap first: replace it by one that copies the slice alone.
  if (tf.getKernel('Slice', 'wasm') && registerWasmSlice()) added.push('Slice@wasm (heap-view copy)');
  // wasm's GatherV2 computes every element's index: copy whole runs instead (a cache's rows, embeddings).
  if (tf.getKernel('GatherV2', 'wasm') && registerWasmGather()) added.push('GatherV2@wasm (run copy)');
  // wasm's Identity copies, and the gradient tape clones every tensor it saves: share the buffer instead.
  if (tf.getKernel('Identity', 'wasm') && registerWasmIdentity()) added.push('Identity@wasm (shares the buffer)');
  return added;
}
