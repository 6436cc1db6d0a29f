// Test helper (Node and browser): deterministic inputs for the chosen-token log-prob kernels, a
// runner that returns forward values, gradients and the tensor-leak count, and a float64 reference
// computed here in plain JS (independent of tfjs) for sizes where tfjs' cpu backend is too slow.
//
// Not for: production code. Used by test/webgpu/logprob.test.ts, test/unit/kernels/logprob-wasm.test.ts
// and test/e2e/checks/logprob.ts.
//
// Example:
//   const c = makeCase(8, 97, 1);
//   const got = await runLogProb(selectedLogProbs, c);      // on the active backend
//   maxAbsDiff(got.logp, referenceF64(c).logp) < 1e-4

import * as tf from '@tensorflow/tfjs-core';

export interface LogProbCase {
  n: number;
  vocab: number;
  logits: Float32Array; // [N, V], values in [-8, 8)
  targets: Int32Array; // [N], in [0, V) except where a test puts an out-of-range id
  dy: Float32Array; // [N], the upstream gradient of logp
}

export interface LogProbRun {
  logp: Float32Array; // [N]
  dlogits: Float32Array; // [N, V] = d(sum(logp * dy)) / dlogits
  leaked: number; // tensors alive after minus before
}

export type LogProbFn = (logits: tf.Tensor2D, targets: tf.Tensor1D) => tf.Tensor1D;

/** Inputs independent of any backend's RNG: an LCG in [-scale, scale). */
export function lcg(n: number, seed: number, scale = 1): Float32Array {
  const out = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = (s / 2 ** 31 - 1) * scale;
  }
  return out;
}

/**
 * A case with targets spread over the vocabulary, the first and last ids included. With
 * `outOfRange`, row 1's target is -1 (picks nothing, like an all-zero one-hot).
 */
export function makeCase(n: number, vocab: number, seed: number, opts: { outOfRange?: boolean } = {}): LogProbCase {
  const targets = Int32Array.from({ length: n }, (_, i) => (i === 0 ? 0 : i === n - 1 ? vocab - 1 : (i * 7919 + seed) % vocab));
  if (opts.outOfRange && n > 2) targets[1] = -1;
  return { n, vocab, logits: lcg(n * vocab, seed, 8), targets, dy: lcg(n, seed + 1000) };
}

/** Forward and gradient (upstream `dy`) of `fn` on the active backend; disposes everything. */
export async function runLogProb(fn: LogProbFn, c: LogProbCase): Promise<LogProbRun> {
  const before = tf.memory().numTensors;
  const logits = tf.tensor2d(c.logits, [c.n, c.vocab]);
  const targets = tf.tensor1d(c.targets, 'int32');
  const dy = tf.tensor1d(c.dy);
  const logpT = fn(logits, targets); // [N]
  const gradT = tf.grad((x: tf.Tensor) => fn(x as tf.Tensor2D, targets))(logits, dy); // [N, V]
  const logp = (await logpT.data()) as Float32Array;
  const dlogits = (await gradT.data()) as Float32Array;
  tf.dispose([logits, targets, dy, logpT, gradT]);
  return { logp, dlogits, leaked: tf.memory().numTensors - before };
}

/** log softmax(logits)[n, t_n] and dy[n] * (onehot - softmax) in float64, row by row. */
export function referenceF64(c: LogProbCase): { logp: Float64Array; dlogits: Float32Array } {
  const { n, vocab: v } = c;
  const logp = new Float64Array(n);
  const dlogits = new Float32Array(n * v);
  for (let r = 0; r < n; r++) {
    const row = c.logits.subarray(r * v, (r + 1) * v);
    let m = -Infinity;
    for (let j = 0; j < v; j++) m = Math.max(m, row[j]);
    let s = 0;
    for (let j = 0; j < v; j++) s += Math.exp(row[j] - m);
    const lse = m + Math.log(s);
    const t = c.targets[r];
    const inRange = t >= 0 && t < v;
    logp[r] = (inRange ? row[t] : 0) - lse;
    for (let j = 0; j < v; j++) dlogits[r * v + j] = c.dy[r] * ((j === t ? 1 : 0) - Math.exp(row[j] - lse));
  }
  return { logp, dlogits };
}

export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`maxAbsDiff: lengths differ (${a.length} vs ${b.length})`);
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i] - b[i]);
    if (!(d <= m)) m = d; // NaN propagates
  }
  return m;
}

/** loss = sum(logp * dy + lse * dyLse) through `pick` (returns [logp, lse]); values and gradient. */
export async function bothOutputs(c: LogProbCase, dyLse: Float32Array, pick: (l: tf.Tensor2D, t: tf.Tensor1D) => tf.Tensor[]) {
  const before = tf.memory().numTensors;
  const logits = tf.tensor2d(c.logits, [c.n, c.vocab]);
  const targets = tf.tensor1d(c.targets, 'int32');
  const [lpT, lseT] = pick(logits, targets);
  const g = tf.grad((x: tf.Tensor) => {
    const [lp, lse] = pick(x as tf.Tensor2D, targets);
    return tf.add(tf.sum(tf.mul(lp, c.dy)), tf.sum(tf.mul(lse, dyLse))) as tf.Scalar;
  })(logits);
  const out = { logp: await lpT.data(), lse: await lseT.data(), dlogits: await g.data() };
  tf.dispose([logits, targets, lpT, lseT, g]);
  return { ...out, leaked: tf.memory().numTensors - before };
}
