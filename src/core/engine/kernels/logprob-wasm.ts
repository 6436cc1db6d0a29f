/**
 * The chosen-token log-prob kernels ('MappaSelectedLogProb' and 'MappaSelectedLogProbGrad', the
 * same names, inputs, outputs and registered gradient as ./logprob-webgpu.ts) for tfjs-backend-wasm,
 * written as JS loops over typed-array views of the wasm heap, row by row.
 *
 *   forward   logits [N, V] float32, targets [N] int32 -> logp [N] = logits[n, t_n] - lse[n],  lse [N]
 *   backward  dlogits[n, v] = dyLogp[n] * (onehot(t_n)[v] - p[n, v]) + dyLse[n] * p[n, v],
 *             p = exp(logits - lse), recomputed from the saved lse (no softmax kept).
 *
 * Why: the plain path (./logprob.ts, `selectedLogProbsPlain`) runs a one-hot, a cast, a product,
 * a sum and a logSumExp (max, sub, exp, sum), each a tfjs op with its own [N, V] temporary on the
 * heap, and its gradient as many more. Here the forward reads each row twice (max, then the sum of
 * exp(x - max), in float64, plus the picked logit) and allocates only the two [N] outputs; the
 * backward reads each logit once and writes each gradient once, with no [N, V] temporary besides
 * the output itself.
 *
 * For: the `wasm` backend, registered by ./register.ts and reached through `selectedLogProbs` in
 * ./logprob.ts (fusedLogProbsActive() says whether it is taken). The gradient config is the one
 * exported by ./logprob-webgpu.ts (gradients are per kernel name, not per backend).
 * Not for: cpu or webgpu (./logprob-webgpu.ts), nor sampling (host arrays, sampling.ts).
 *
 * Numerics: max-subtracted and summed in float64 (JS numbers), then stored as float32: within 1e-6
 * of a float64 reference at V = 151936, where the plain float32 ops are 1.5e-4 off. One limit,
 * shared with the webgpu kernel: the backward recomputes p from the saved float32 lse, so with
 * logits of magnitude L, p is off by up to p * ulp(L) / 2 relatively (about 5e-5 at L = 1e4, where
 * the plain gradient, through exp(x - max), is near 3e-8; test/unit/kernels/logprob-wasm.test.ts); negligible for |logits| < 100.
 * Targets outside [0, V) pick nothing, like the plain path's all-zero one-hot (logp = -lse).
 * A row of all -Infinity gives lse = -Infinity and logp NaN.
 *
 * Speed: `npm run bench -- update` times it against the plain ops (README, "Update-step benchmark").
 *
 * Heap views: `makeOutput` may grow the wasm memory, which detaches every view taken before it, so
 * the kernels allocate their outputs first and only then take views of inputs and outputs.
 *
 * Example (after initBackend({force: 'wasm'}), which calls registerCustomKernels()):
 *   const [logp, lse] = tf.engine().runKernel(SELECTED_LOGPROB, {logits, targets}, {}) as tf.Tensor[];
 *   // logits [[0, ln 3]], targets [1]: max ln 3, sum exp = 1/3 + 1 = 4/3, lse = ln 3 + ln(4/3) = ln 4
 *   // -> logp [ln 3 - ln 4 = ln(3/4) = -0.2877], lse [1.3863]
 *   // gradient of logp with dy = 1: p = [1/4, 3/4] -> dlogits [[0 - 0.25, 1 - 0.75]] = [[-0.25, 0.25]]
 */
import * as tf from '@tensorflow/tfjs-core';
import { checkGradInputs, checkInputs, SELECTED_LOGPROB, SELECTED_LOGPROB_GRAD } from './logprob-webgpu.ts';
import type { WasmBackendInternals } from './wasm-backend.ts';

function forwardKernel(args: { inputs: tf.NamedTensorInfoMap; backend: object }): tf.TensorInfo[] {
  const be = args.backend as WasmBackendInternals;
  const logits = args.inputs.logits!;
  const targets = args.inputs.targets!;
  const [n, vocab] = checkInputs(logits, targets, `${SELECTED_LOGPROB} (wasm)`);
  const logpInfo = be.makeOutput([n], 'float32'); // [N]
  const lseInfo = be.makeOutput([n], 'float32'); // [N]
  if (n === 0) return [logpInfo, lseInfo];
  // Views only now: the allocations above may have grown (and detached) the heap.
  const x = be.typedArrayFromHeap(logits) as Float32Array; // [N * V]
  const t = be.typedArrayFromHeap(targets) as Int32Array; // [N]
  const logp = be.typedArrayFromHeap(logpInfo) as Float32Array; // [N]
  const lse = be.typedArrayFromHeap(lseInfo) as Float32Array; // [N]
  for (let r = 0; r < n; r++) {
    const start = r * vocab;
    const end = start + vocab;
    let m = -Infinity;
    for (let i = start; i < end; i++) {
      const xi = x[i];
      if (xi > m) m = xi;
    }
    // All -Infinity: subtract 0 instead, so exp(-inf - 0) = 0 (not exp(NaN)) and lse = -Infinity.
    const shift = m === -Infinity ? 0 : m;
    let s = 0;
    for (let i = start; i < end; i++) s += Math.exp(x[i] - shift);
    const l = shift + Math.log(s);
    const target = t[r];
    const picked = target >= 0 && target < vocab ? x[start + target] : 0;
    lse[r] = l;
    logp[r] = picked - l;
  }
  return [logpInfo, lseInfo];
}

function backwardKernel(args: { inputs: tf.NamedTensorInfoMap; backend: object }): tf.TensorInfo {
  const be = args.backend as WasmBackendInternals;
  const { logits, targets, lse, dyLogp, dyLse } = args.inputs as Record<string, tf.TensorInfo>;
  const [n, vocab] = checkGradInputs(args.inputs, `${SELECTED_LOGPROB_GRAD} (wasm)`);
  const outInfo = be.makeOutput([n, vocab], 'float32'); // [N, V]
  if (n === 0) return outInfo;
  // Views only now: the [N, V] allocation above may have grown (and detached) the heap.
  const x = be.typedArrayFromHeap(logits) as Float32Array; // [N * V]
  const t = be.typedArrayFromHeap(targets) as Int32Array; // [N]
  const l = be.typedArrayFromHeap(lse) as Float32Array; // [N]
  const gLogp = be.typedArrayFromHeap(dyLogp) as Float32Array; // [N]
  const gLse = be.typedArrayFromHeap(dyLse) as Float32Array; // [N]
  const out = be.typedArrayFromHeap(outInfo) as Float32Array; // [N * V]
  for (let r = 0; r < n; r++) {
    const start = r * vocab;
    const end = start + vocab;
    const lr = l[r];
    const coef = gLse[r] - gLogp[r]; // d/dx of (dyLse - dyLogp) * lse
    for (let i = start; i < end; i++) out[i] = coef * Math.exp(x[i] - lr);
    const target = t[r];
    if (target >= 0 && target < vocab) out[start + target] += gLogp[r];
  }
  return outInfo;
}

/** Kernel configs for tf.registerKernel (see ./register.ts); the gradient is `selectedLogProbGrad`. */
export const selectedLogProbWasmKernels: tf.KernelConfig[] = [
  { kernelName: SELECTED_LOGPROB, backendName: 'wasm', kernelFunc: forwardKernel as tf.KernelFunc },
  { kernelName: SELECTED_LOGPROB_GRAD, backendName: 'wasm', kernelFunc: backwardKernel as tf.KernelFunc },
];
