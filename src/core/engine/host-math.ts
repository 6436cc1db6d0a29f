/**
 * The optimizer step with its arithmetic on the host, where the backend keeps tensors in CPU memory (cpu,
 * wasm). An agent's step is ~28 small tensors (LoRA A and B of 14 projections) and ~16 kernel calls each
 * (clip, AdamW's moments and update): at 128 agents about 57,000 calls an iteration, each costing far more
 * than its arithmetic. Here each variable is read once and written once; the sums and products are done in
 * the device's order with its rounding, so the step is the device step's to the bit
 * (test/unit/rl/host-step.test.ts). On other backends (webgpu) reading every gradient back would cost more
 * than it saves: the step stays there.
 *
 * The global norm, as the device computes sqrt(addN(sum(square(g)) for g in grads)):
 *   wasm: square and every sum in float32, in index order;
 *   cpu:  square in float32, each sum over a tensor accumulated in float64 then rounded, addN in float32.
 *
 * For: rl/update-steps.ts `clippedStep`. Not for: AdamW's own arithmetic (rl/adamw.ts `applyHost`).
 *
 * Example: hostNorm([Float32Array.of(3), Float32Array.of(4)], 'f32') -> 5
 */
import * as tf from '@tensorflow/tfjs-core';
import { ENGINE_PATHS } from './paths.ts';

/** How the backend sums ('f32' wasm, 'f64' cpu), or null where the step stays on the device. */
export type HostSums = 'f32' | 'f64';

export function hostSums(): HostSums | null {
  if (!ENGINE_PATHS.hostStep) return null;
  const b = tf.getBackend();
  return b === 'wasm' ? 'f32' : b === 'cpu' ? 'f64' : null;
}

/** The global L2 norm of the gradients, rounded as the backend's kernels round it. */
export function hostNorm(grads: Float32Array[], sums: HostSums): number {
  const f = Math.fround;
  let total = 0; // addN: float32, tensor after tensor
  grads.forEach((g, k) => {
    let s = 0;
    if (sums === 'f32') for (let j = 0; j < g.length; j++) s = f(s + f(g[j] * g[j]));
    else {
      for (let j = 0; j < g.length; j++) s += f(g[j] * g[j]);
      s = f(s);
    }
    total = k === 0 ? s : f(total + s);
  });
  return f(Math.sqrt(total));
}

/** g * factor in place, rounded as tf.mul(g, factor) (a factor of 1 leaves g as it is). */
export function scaleInPlace(grads: Float32Array[], factor: number): void {
  if (factor === 1) return;
  const f = Math.fround;
  const k = f(factor);
  for (const g of grads) for (let j = 0; j < g.length; j++) g[j] = f(g[j] * k);
}
