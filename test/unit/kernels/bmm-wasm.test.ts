/**
 * The wasm SIMD kernel for many small products (src/core/engine/kernels/bmm-wasm.ts, ./c/bmm.c): the
 * docstring's hand-worked case, a float64 JS reference over transposes, broadcast batches and sizes off
 * the SIMD width, tf.matMul on wasm (which routes small batched products to it) against the cpu backend
 * on attention's shapes with their gradients, and the committed bytes against a fresh build (skipped,
 * saying so, where the clang that built them is not installed; .ci/run installs Debian's).
 */
import * as tf from '@tensorflow/tfjs-core';
import { describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/core/engine/backend.ts';
import { type BmmShape, smallBatchMatMul } from '../../../src/core/engine/kernels/bmm-wasm.ts';
import { BMM_WASM_COMPILER } from '../../../src/core/engine/kernels/bmm-wasm-bytes.ts';
import { Rng } from '../../../src/core/stats/rng.ts';
import { committedBytesTest } from '../../helpers/kernel-bytes.ts';
import { ENGINE_PATHS } from '../../../src/core/engine/paths.ts';

/** op(a) @ op(b) per entry, in float64. */
function reference(a: Float32Array, b: Float32Array, s: BmmShape): Float64Array {
  const c = new Float64Array(s.batch * s.m * s.n);
  for (let e = 0; e < s.batch; e++) {
    const ea = (s.batchA === 1 ? 0 : e) * s.m * s.k;
    const eb = (s.batchB === 1 ? 0 : e) * s.k * s.n;
    for (let i = 0; i < s.m; i++) {
      for (let j = 0; j < s.n; j++) {
        let t = 0;
        for (let p = 0; p < s.k; p++) {
          t += (s.transA ? a[ea + p * s.m + i] : a[ea + i * s.k + p]) * (s.transB ? b[eb + j * s.k + p] : b[eb + p * s.n + j]);
        }
        c[(e * s.m + i) * s.n + j] = t;
      }
    }
  }
  return c;
}

const random = (rng: Rng, n: number) => Float32Array.from({ length: n }, () => rng.next() * 2 - 1);

describe('the wasm SIMD small-product kernel', () => {
  it('multiplies by the identity (the docstring example)', () => {
    const c = smallBatchMatMul(Float32Array.of(1, 2, 3, 4), Float32Array.of(1, 0, 0, 1),
      { batch: 1, batchA: 1, batchB: 1, m: 2, k: 2, n: 2, transA: false, transB: false });
    expect(Array.from(c)).toEqual([1, 2, 3, 4]);
  });

  it('equals a float64 reference over transposes, broadcast batches and odd sizes', () => {
    const rng = new Rng(3);
    for (const [batch, m, k, n] of [[3, 5, 7, 9], [20, 22, 16, 39], [4, 1, 1, 1], [2, 13, 3, 17], [5, 4, 8, 8]]) {
      for (const transA of [false, true]) {
        for (const transB of [false, true]) {
          for (const [batchA, batchB] of [[batch, batch], [1, batch], [batch, 1]]) {
            const s = { batch, batchA, batchB, m, k, n, transA, transB };
            const a = random(rng, batchA * m * k);
            const b = random(rng, batchB * k * n);
            const want = reference(a, b, s);
            const got = smallBatchMatMul(a, b, s);
            for (let i = 0; i < got.length; i++) expect(Math.abs(got[i] - want[i])).toBeLessThan(1e-5 * Math.max(1, k));
          }
        }
      }
    }
  });

  it('refuses operands that do not fit the shape', () => {
    expect(() => smallBatchMatMul(new Float32Array(3), new Float32Array(4),
      { batch: 1, batchA: 1, batchB: 1, m: 2, k: 2, n: 2, transA: false, transB: false })).toThrow(/operands of 3 and 4 values/);
  });

  it('serves tf.matMul on wasm: attention-shaped products and their gradients equal the cpu backend', async () => {
    const rng = new Rng(5);
    const q = random(rng, 6 * 2 * 22 * 16);
    const kv = random(rng, 6 * 2 * 39 * 16);
    const run = async (backend: 'cpu' | 'wasm') => {
      await initBackend({ force: backend });
      const out = tf.tidy(() => {
        const qt = tf.tensor4d(q, [6, 2, 22, 16]);
        const kt = tf.tensor4d(kv, [6, 2, 39, 16]);
        const f = (x: tf.Tensor, y: tf.Tensor) => tf.sum(tf.square(tf.matMul(tf.softmax(tf.matMul(x, y, false, true)), y)));
        const [gq, gk] = tf.grads(f)([qt, kt]);
        const a3 = tf.tensor3d(q.subarray(0, 12 * 22 * 16), [12, 22, 16]);
        const b2 = tf.tensor2d(kv.subarray(0, 16 * 39), [16, 39]);
        // a broadcast operand of higher rank than the other: the output keeps tfjs's broadcast shape [1, 12, 22, 39]
        return [tf.matMul(qt, kt, false, true), gq, gk, tf.matMul(a3, b2), tf.matMul(tf.reshape(b2, [1, 1, 16, 39]), a3, true, true)];
      });
      const values = await Promise.all(out.map((t) => t.data()));
      const shapes = out.map((t) => t.shape);
      tf.dispose(out);
      return { values, shapes };
    };
    const cpu = await run('cpu');
    const wasm = await run('wasm');
    expect(wasm.shapes).toEqual(cpu.shapes);
    expect(cpu.shapes[4]).toEqual([1, 12, 39, 22]);
    cpu.values.forEach((want, i) => {
      for (let j = 0; j < want.length; j++) expect(Math.abs(wasm.values[i][j] - want[j])).toBeLessThan(1e-4 * Math.max(1, Math.abs(want[j])));
    });
  });

  it('serves single products of a short inner dimension with the numbers of XNNPACK to the bit, gradients included', async () => {
    await initBackend({ force: 'wasm' });
    const rng = new Rng(7);
    // The relay model's layers ([rows, 64] x [64, 192] and back, LoRA's rank 8), transposed operands, a long
    // reduction left to XNNPACK (k = 594), odd sizes off the SIMD width.
    const shapes: [number, number, number, boolean, boolean][] = [
      [693, 64, 192, false, false], [64, 192, 64, false, true], [28, 8, 192, false, true], [594, 64, 8, false, false],
      [192, 594, 8, true, false], [37, 13, 5, true, true], [1, 64, 306, false, false], [64, 256, 3, false, false],
    ];
    const values = shapes.map(([m, k, n]) => [random(rng, m * k), random(rng, k * n)]);
    const run = (on: boolean) => {
      ENGINE_PATHS.plainProducts = on;
      try {
        return shapes.map(([m, k, n, ta, tb], i) => {
          const a = tf.tensor2d(values[i][0], ta ? [k, m] : [m, k]);
          const b = tf.tensor2d(values[i][1], tb ? [n, k] : [k, n]);
          const f = (x: tf.Tensor, y: tf.Tensor) => tf.sum(tf.mul(tf.matMul(x, y, ta, tb), tf.matMul(x, y, ta, tb)));
          const out = tf.tidy(() => [tf.matMul(a, b, ta, tb), ...tf.grads(f)([a, b])].map((t) => t.dataSync().slice()));
          tf.dispose([a, b]);
          return out;
        });
      } finally {
        ENGINE_PATHS.plainProducts = true;
      }
    };
    const kernel = run(true);
    const xnnpack = run(false);
    kernel.forEach((outs, i) => outs.forEach((v, j) => expect(v, `shape ${shapes[i]} output ${j}`).toEqual(xnnpack[i][j])));
  });

  committedBytesTest('bmm', BMM_WASM_COMPILER);
});
