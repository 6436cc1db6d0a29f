/**
 * Log-probability of the chosen token: logits [N, V] and targets [N] -> log softmax(logits)[n, target[n]].
 *
 * For: scoring (the trainer's policy / reference log-probs) and the policy-gradient loss.
 * Not for: sampling (sampling.ts works on host arrays).
 *
 * This is the plain-ops path, differentiable on every backend (it avoids `gather`, whose gradient
 * `UnsortedSegmentSum` is missing on tfjs-backend-wasm 4.22): picked = sum(logits * onehot), minus
 * logsumexp. Example: logits [[0, ln 3]], target [1] -> ln(3/4) = -0.2877.
 */
import * as tf from '@tensorflow/tfjs-core';

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

/** The entry point the rest of the project calls; a fused WebGPU kernel may take over per backend. */
export function selectedLogProbs(logits: tf.Tensor2D, targets: tf.Tensor1D): tf.Tensor1D {
  return selectedLogProbsPlain(logits, targets);
}
