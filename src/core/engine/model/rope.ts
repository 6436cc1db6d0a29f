/**
 * Rotary position embeddings (RoPE) as Hugging Face `transformers` computes them for the Llama family,
 * including Llama 3.x `rope_scaling: {rope_type: "llama3"}`.
 *
 * For: building the cos/sin tables for given positions (host side, tiny) and rotating q/k on the device.
 * Not for: other scaling types (linear, dynamic, yarn): config.ts refuses them.
 *
 * Layout follows HF `rotate_half`: a head vector x = [x1 | x2] (two halves of headDim/2) becomes
 *   x * cos + [-x2 | x1] * sin,   with cos/sin = [cos(p*f) | cos(p*f)] over the inverse frequencies f.
 * Example: headDim 4, theta 10000 -> f = [1, 0.01]; at position 2, cos = [cos 2, cos .02, cos 2, cos .02].
 */
import * as tf from '@tensorflow/tfjs-core';
import { ENGINE_PATHS } from '../paths.ts';
import type { ModelConfig } from './config.ts';

/** Inverse frequencies f_i = theta^(-2i/headDim), i < headDim/2, with Llama 3 scaling applied. */
export function inverseFrequencies(c: ModelConfig): Float64Array {
  const half = c.headDim / 2;
  const inv = new Float64Array(half);
  for (let i = 0; i < half; i++) inv[i] = Math.fround(1 / Math.pow(c.ropeTheta, (2 * i) / c.headDim));
  const s = c.ropeScaling;
  if (s) {
    // Llama 3: keep high frequencies, divide low ones by `factor`, blend smoothly in between.
    const lowWavelen = s.originalMaxPositionEmbeddings / s.lowFreqFactor;
    const highWavelen = s.originalMaxPositionEmbeddings / s.highFreqFactor;
    for (let i = 0; i < half; i++) {
      const wavelen = (2 * Math.PI) / inv[i];
      if (wavelen < highWavelen) continue;
      if (wavelen > lowWavelen) {
        inv[i] = inv[i] / s.factor;
      } else {
        const smooth = (s.originalMaxPositionEmbeddings / wavelen - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor);
        inv[i] = (1 - smooth) * (inv[i] / s.factor) + smooth * inv[i];
      }
      inv[i] = Math.fround(inv[i]);
    }
  }
  return inv;
}

/**
 * cos and sin tables for a [B, T] grid of positions, shaped [B, 1, T, headDim] so they broadcast
 * over heads. Angles are rounded to float32 before cos/sin, as torch computes them in float32.
 */
export function ropeTables(inv: Float64Array, positions: Int32Array, batch: number, steps: number): { cos: tf.Tensor4D; sin: tf.Tensor4D } {
  const half = inv.length;
  const dim = half * 2;
  const cos = new Float32Array(batch * steps * dim);
  const sin = new Float32Array(batch * steps * dim);
  for (let bt = 0; bt < batch * steps; bt++) {
    const p = positions[bt];
    for (let i = 0; i < half; i++) {
      const angle = Math.fround(p * inv[i]);
      const c = Math.cos(angle);
      const s = Math.sin(angle);
      cos[bt * dim + i] = c;
      cos[bt * dim + half + i] = c;
      sin[bt * dim + i] = s;
      sin[bt * dim + half + i] = s;
    }
  }
  return {
    cos: tf.tensor4d(cos, [batch, 1, steps, dim]),
    sin: tf.tensor4d(sin, [batch, 1, steps, dim]),
  };
}

/** Per head size, the [headDim, headDim] matrix R with x R = [-x2 | x1] (one 1 or -1 a column). */
const rotations = new Map<number, Float32Array>();

function rotation(dim: number): Float32Array {
  let r = rotations.get(dim);
  if (!r) {
    const half = dim / 2;
    r = new Float32Array(dim * dim);
    for (let i = 0; i < half; i++) {
      r[(half + i) * dim + i] = -1; // column i takes -x2[i]
      r[i * dim + half + i] = 1; // column half + i takes x1[i]
    }
    rotations.set(dim, r);
  }
  return r;
}

/**
 * Rotate x [B, heads, T, headDim] by the tables [B, 1, T, headDim]. [-x2 | x1] is taken as one product
 * x R: every entry of it is one +-x term plus exact zeros, so the values are those of split, negate and
 * concat to the bit, in one 2-D product (and its gradient one more) instead of three copying kernels.
 */
export function applyRope(x: tf.Tensor4D, cos: tf.Tensor4D, sin: tf.Tensor4D): tf.Tensor4D {
  return tf.tidy(() => {
    const [b, h, t, dim] = x.shape;
    let rotated: tf.Tensor; // [-x2 | x1]
    if (ENGINE_PATHS.ropeProduct) {
      rotated = tf.reshape(tf.matMul(tf.reshape(x, [b * h * t, dim]), tf.tensor2d(rotation(dim), [dim, dim])), x.shape);
    } else {
      const [x1, x2] = tf.split(x, [dim / 2, dim / 2], 3);
      rotated = tf.concat([tf.neg(x2), x1], 3);
    }
    return tf.add(tf.mul(x, cos), tf.mul(rotated, sin)) as tf.Tensor4D;
  });
}
