/**
 * The wasm Identity that shares its input (src/core/engine/kernels/wasm-identity.ts): the same values
 * as the stock kernel, no new buffer, the buffer freed with the last holder, and a gradient through
 * ops whose saved inputs are clones equal to the stock kernel's (an independent reference) and to cpu.
 */
import * as tf from '@tensorflow/tfjs-core';
import { afterAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/core/engine/backend.ts';
import { registerWasmIdentity, unregisterWasmIdentity } from '../../../src/core/engine/kernels/wasm-identity.ts';

/** d/dx sum(tanh(x W) * x W): every op saves inputs, so the tape clones x, W and the products. */
async function gradient(): Promise<number[]> {
  const x = tf.tensor2d([[0.5, -1, 2], [1.5, 0.25, -0.75]]);
  const w = tf.tensor2d([[1, 2], [-0.5, 0.3], [0.2, -1.1]]);
  const g = tf.grad((t: tf.Tensor) => {
    const y = tf.matMul(t as tf.Tensor2D, w);
    return tf.sum(tf.mul(tf.tanh(y), y));
  })(x);
  const out = Array.from(await g.data());
  tf.dispose([x, w, g]);
  return out;
}

describe('wasm Identity (shared buffer)', () => {
  afterAll(() => registerWasmIdentity());

  it('shares the buffer: no bytes added, readable after the source is disposed, freed with the last', async () => {
    await initBackend({ force: 'wasm' });
    const before = tf.memory().numBytes;
    const x = tf.tensor1d([1, 2, 3]);
    const y = tf.clone(x);
    expect(y.dataId).toBe(x.dataId);
    x.dispose();
    expect(Array.from(await y.data())).toEqual([1, 2, 3]);
    y.dispose();
    expect(tf.memory().numBytes).toBe(before);
    const s = tf.clone(tf.tensor1d(['a', 'b'], 'string')); // strings keep the stock kernel
    expect(await s.data()).toEqual(['a', 'b']);
    s.dispose();
  });

  it('gives gradients equal to the stock kernel and close to cpu', async () => {
    await initBackend({ force: 'cpu' });
    const cpu = await gradient();
    await initBackend({ force: 'wasm' });
    const ours = await gradient();
    unregisterWasmIdentity();
    const stock = await gradient();
    registerWasmIdentity();
    expect(ours).toEqual(stock);
    ours.forEach((v, i) => expect(v).toBeCloseTo(cpu[i], 5));
  });
});
