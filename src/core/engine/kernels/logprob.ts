/**
 * Log-probability of the chosen token: logits [N, V] and targets [N] -> log softmax(logits)[n, target[n]].
 *
 * For: scoring (the trainer's policy / reference log-probs) and the policy-gradient loss.
 * Not for: sampling (sampling.ts works on host arrays).
 *
 * Two paths with the same result (within 1e-4, checked in test/webgpu/logprob.test.ts and
 * test/unit/kernels/logprob-wasm.test.ts):
 *   - plain ops, differentiable on every backend (it avoids `gather`, whose gradient
 *     `UnsortedSegmentSum` is missing on tfjs-backend-wasm 4.22): picked = sum(logits * onehot),
 *     minus logsumexp. Materializes a one-hot and several [N, V] temporaries. The reference, and
 *     what runs on cpu.
 *   - fused, one kernel name with a kernel per backend and one registered gradient:
 *       webgpu (./logprob-webgpu.ts): one read of the logits forward, one read and one write
 *         backward, chunked by rows so no binding exceeds the device's limit;
 *       wasm (./logprob-wasm.ts): JS loops over the wasm heap, row by row, no [N, V] temporary
 *         (its speed against the plain ops: `npm run bench -- update`).
 * `selectedLogProbs` picks the fused one when the active backend is webgpu or wasm and
 * registerCustomKernels() (./register.ts) has run, else the plain one.
 *
 * Example: logits [[0, ln 3]], target [1] -> ln(3/4) = -0.2877.
 */
import * as tf from '@tensorflow/tfjs-core';
import { SELECTED_LOGPROB } from './logprob-webgpu.ts';

export function selectedLogProbsPlain(logits: tf.Tensor2D, targets: tf.Tensor1D): tf.Tensor1D {
  return tf.tidy(() => {
    const vocab = logits.shape[1];
    // int32 one-hot then cast: tfjs-backend-wasm 4.22's OneHot with dtype float32 returns zeros.
    const onehot = tf.cast(tf.oneHot(tf.cast(targets, 'int32'), vocab), 'float32'); // [N, V]
    const picked = tf.sum(tf.mul(logits, onehot), -1); // [N]
    const lse = tf.logSumExp(logits, -1); // [N]
    return tf.sub(picked, lse) as tf.Tensor1D;
  });
}

/** Backends on which `selectedLogProbs` takes the fused kernel once it is registered. */
const FUSED_BACKENDS: readonly string[] = ['webgpu', 'wasm'];

/** Whether the fused kernel and its gradient are registered for the active backend (used or not). */
export function fusedLogProbsRegistered(): boolean {
  return Boolean(tf.getKernel(SELECTED_LOGPROB, tf.getBackend())) && Boolean(tf.getGradient(SELECTED_LOGPROB));
}

/** Whether `selectedLogProbs` would take the fused kernel on the active backend right now. */
export function fusedLogProbsActive(): boolean {
  return FUSED_BACKENDS.includes(tf.getBackend()) && fusedLogProbsRegistered();
}

/**
 * The fused kernel (webgpu and wasm; throws on cpu or before registerCustomKernels()).
 * Differentiable through its registered gradient. Targets of any dtype are cast to int32.
 */
export function selectedLogProbsFused(logits: tf.Tensor2D, targets: tf.Tensor1D): tf.Tensor1D {
  return tf.tidy(() => {
    const t = targets.dtype === 'int32' ? targets : tf.cast(targets, 'int32');
    const [logp] = tf.engine().runKernel(SELECTED_LOGPROB, { logits, targets: t }, {}) as tf.Tensor[]; // [N], lse [N]
    return logp as tf.Tensor1D;
  });
}

/** The entry point the rest of the project calls: fused on webgpu and wasm when registered, plain otherwise. */
export function selectedLogProbs(logits: tf.Tensor2D, targets: tf.Tensor1D): tf.Tensor1D {
  return fusedLogProbsActive() ? selectedLogProbsFused(logits, targets) : selectedLogProbsPlain(logits, targets);
}
