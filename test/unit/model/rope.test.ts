/**
 * RoPE's rotation (src/core/engine/model/rope.ts): [-x2 | x1] taken as one product x R gives the values
 * of HF's rotate_half (split, negate, concat, the independent reference written here) to the bit, and so
 * does its gradient, on the cpu and wasm backends; and the docstring's hand-worked tables.
 */
import * as tf from '@tensorflow/tfjs-core';
import { describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/core/engine/backend.ts';
import { applyRope, inverseFrequencies, ropeTables } from '../../../src/core/engine/model/rope.ts';
import type { ModelConfig } from '../../../src/core/engine/model/config.ts';
import { Rng } from '../../../src/core/stats/rng.ts';

/** HF's x * cos + rotate_half(x) * sin, rotate_half(x) = cat(-x2, x1). */
function rotateHalfRope(x: tf.Tensor4D, cos: tf.Tensor4D, sin: tf.Tensor4D): tf.Tensor4D {
  const half = x.shape[3] / 2;
  const [x1, x2] = tf.split(x, [half, half], 3);
  return tf.add(tf.mul(x, cos), tf.mul(tf.concat([tf.neg(x2), x1], 3), sin)) as tf.Tensor4D;
}

describe('RoPE', () => {
  it('builds the docstring tables (headDim 4, theta 10000, position 2)', () => {
    const inv = inverseFrequencies({ headDim: 4, ropeTheta: 10000, ropeScaling: null } as unknown as ModelConfig);
    expect(Array.from(inv)).toEqual([1, 0.01].map(Math.fround));
    const { cos, sin } = ropeTables(inv, Int32Array.of(2), 1, 1);
    const c = Array.from(cos.dataSync());
    expect(c[0]).toBeCloseTo(Math.cos(2), 6);
    expect(c[1]).toBeCloseTo(Math.cos(Math.fround(0.02)), 6);
    expect(c.slice(2)).toEqual(c.slice(0, 2));
    tf.dispose([cos, sin]);
  });

  for (const backend of ['cpu', 'wasm'] as const) {
    it(`equals rotate_half and its gradient to the bit (${backend})`, async () => {
      await initBackend({ force: backend });
      const rng = new Rng(11);
      const shape: [number, number, number, number] = [3, 4, 5, 16];
      const values = Float32Array.from({ length: 3 * 4 * 5 * 16 }, () => rng.next() * 4 - 2);
      const inv = inverseFrequencies({ headDim: 16, ropeTheta: 10000, ropeScaling: null } as unknown as ModelConfig);
      const positions = Int32Array.from({ length: 15 }, (_, i) => 3 * i + 1);
      const { cos, sin } = ropeTables(inv, positions, 3, 5);
      const weights = tf.tensor4d(Float32Array.from({ length: values.length }, () => rng.next()), shape);
      const x = tf.tensor4d(values, shape);
      const loss = (f: typeof applyRope) => (t: tf.Tensor) => tf.sum(tf.mul(f(t as tf.Tensor4D, cos, sin), weights));
      const [got, want] = [applyRope, rotateHalfRope].map((f) => f(x, cos, sin).dataSync());
      const [gGot, gWant] = [applyRope, rotateHalfRope].map((f) => tf.grad(loss(f))(x).dataSync());
      expect(Array.from(got)).toEqual(Array.from(want));
      expect(Array.from(gGot)).toEqual(Array.from(gWant));
      tf.dispose([cos, sin, weights, x]);
    });
  }
});
