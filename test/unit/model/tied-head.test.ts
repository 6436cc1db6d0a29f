/**
 * wasm's tied output projection in column blocks (src/core/engine/model/tied-head.ts): the docstring's
 * hand-worked example, and logits and the gradient of the hidden rows against the plain product
 * hidden @ E^T on the cpu backend (an independent reference), with blocks that do not divide V.
 */
import * as tf from '@tensorflow/tfjs-core';
import { describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/core/engine/backend.ts';
import { blockColumns, TiedHead } from '../../../src/core/engine/model/tied-head.ts';

const rand = (n: number, seed: number) => Array.from({ length: n }, (_, i) => Math.sin(seed * 12.9898 + i * 78.233) * 0.5);

describe('TiedHead (column blocks of E^T)', () => {
  it('works the docstring example by hand', async () => {
    await initBackend({ force: 'wasm' });
    const E = tf.tensor2d([[1, 0], [0, 1], [1, 1]]);
    const head = new TiedHead(E, 2);
    expect(head.blocks.map((b) => b.shape)).toEqual([[2, 2], [2, 1]]);
    expect(head.starts).toEqual([0, 2]);
    const h = tf.tensor2d([[2, 3]]);
    expect(Array.from(await head.project(h).data())).toEqual([2, 3, 5]);
    const g = tf.grad((x: tf.Tensor) => tf.sum(head.project(x as tf.Tensor2D)))(h);
    expect(Array.from(await g.data())).toEqual([2, 2]);
    head.dispose();
    tf.dispose([E, h, g]);
  });

  it('sizes blocks to at most 8 MiB, in multiples of 16 columns', () => {
    expect(blockColumns(576)).toBe(3632); // 8 MiB / (576 * 4 B) = 3640.9 -> 3632
    expect(blockColumns(576) * 576 * 4).toBeLessThanOrEqual(8 << 20);
    expect(blockColumns(1 << 20)).toBe(16);
  });

  it('matches hidden @ E^T and its gradient on cpu', async () => {
    const [V, H, N] = [103, 24, 5];
    const e = rand(V * H, 1);
    const hv = rand(N * H, 2);
    const dv = rand(N * V, 3);
    const run = (blocked: boolean) => {
      const E = tf.tensor2d(e, [V, H]);
      const h = tf.tensor2d(hv, [N, H]);
      const dy = tf.tensor2d(dv, [N, V]);
      const head = blocked ? new TiedHead(E, 32) : null;
      const f = (x: tf.Tensor2D) => (head ? head.project(x) : tf.matMul(x, E, false, true));
      const logits = f(h);
      const grad = tf.grad((x: tf.Tensor) => tf.sum(tf.mul(f(x as tf.Tensor2D), dy)))(h);
      const out = { logits: Array.from(logits.dataSync()), grad: Array.from(grad.dataSync()), blocks: head?.blocks.length };
      head?.dispose();
      tf.dispose([E, h, dy, logits, grad]);
      return out;
    };
    await initBackend({ force: 'cpu' });
    const ref = run(false);
    await initBackend({ force: 'wasm' });
    const ours = run(true);
    expect(ours.blocks).toBe(4); // 32 + 32 + 32 + 7 columns
    ours.logits.forEach((v, i) => expect(Math.abs(v - ref.logits[i])).toBeLessThan(1e-5));
    ours.grad.forEach((v, i) => expect(Math.abs(v - ref.grad[i])).toBeLessThan(1e-5));
  });
});
