/**
 * The wasm GatherV2 that copies runs (src/core/engine/kernels/wasm-gather.ts) against the stock wasm
 * kernel and the cpu backend (independent references), on a hand-worked case and on the shapes the
 * engine gathers: a cache's rows along axis 0, an embedding by a [B, T] index grid, an inner axis, int32 data.
 */
import * as tf from '@tensorflow/tfjs-core';
import { afterAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/core/engine/backend.ts';
import { registerWasmGather, unregisterWasmGather } from '../../../src/core/engine/kernels/wasm-gather.ts';

const CASES: { shape: number[]; indices: number[]; indexShape: number[]; axis: number; dtype: 'float32' | 'int32' }[] = [
  { shape: [3, 2], indices: [2, 0, 2], indexShape: [3], axis: 0, dtype: 'float32' },
  { shape: [4, 2, 5, 3], indices: [0, 0, 1, 3, 3, 3, 2], indexShape: [7], axis: 0, dtype: 'float32' },
  { shape: [11, 6], indices: [1, 10, 3, 3, 0, 7], indexShape: [2, 3], axis: 0, dtype: 'float32' },
  { shape: [3, 9, 4], indices: [8, 0, 4, 4], indexShape: [4], axis: 1, dtype: 'float32' },
  { shape: [2, 5], indices: [4, 1], indexShape: [2], axis: -1, dtype: 'int32' },
  { shape: [3, 2], indices: [], indexShape: [0], axis: 0, dtype: 'float32' },
];

async function gathers(backend: 'cpu' | 'wasm'): Promise<{ values: number[]; shape: number[] }[]> {
  await initBackend({ force: backend });
  return Promise.all(CASES.map(async (c) => {
    const n = c.shape.reduce((a, b) => a * b, 1);
    const y = tf.tidy(() => tf.gather(tf.reshape(tf.range(0, n, 1, c.dtype), c.shape), tf.tensor(c.indices, c.indexShape, 'int32'), c.axis));
    const out = { values: Array.from(await y.data()), shape: y.shape };
    y.dispose();
    return out;
  }));
}

describe('wasm GatherV2 (run copy)', () => {
  afterAll(() => registerWasmGather());

  it('copies the rows asked for (hand-worked)', async () => {
    await initBackend({ force: 'wasm' });
    const y = tf.gather(tf.tensor2d([[0, 1], [2, 3], [4, 5]]), tf.tensor1d([2, 0, 2], 'int32'));
    expect(y.arraySync()).toEqual([[4, 5], [0, 1], [4, 5]]);
    y.dispose();
  });

  it('equals the stock wasm kernel and the cpu backend', async () => {
    const cpu = await gathers('cpu');
    const ours = await gathers('wasm');
    unregisterWasmGather();
    const stock = await gathers('wasm');
    expect(ours).toEqual(cpu);
    expect(ours).toEqual(stock);
  });
});
