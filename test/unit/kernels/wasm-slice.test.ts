/**
 * The wasm Slice that copies only the slice (src/core/engine/kernels/wasm-slice.ts) against the stock wasm
 * kernel and the cpu backend (independent references), and its run plan against hand-worked offsets.
 */
import * as tf from '@tensorflow/tfjs-core';
import { afterAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/core/engine/backend.ts';
import { sliceRuns, registerWasmSlice, unregisterWasmSlice } from '../../../src/core/engine/kernels/wasm-slice.ts';

const CASES: { shape: number[]; begin: number[]; size: number[] }[] = [
  { shape: [4, 3, 2], begin: [1, 0, 1], size: [2, 3, 1] },
  { shape: [8, 16, 32], begin: [3, 0, 0], size: [1, 16, 32] },
  { shape: [5, 7], begin: [1, 2], size: [3, 4] },
  { shape: [2, 3, 4, 5], begin: [1, 1, 0, 2], size: [1, 2, 4, 3] },
  { shape: [2, 3, 4, 5, 6], begin: [0, 1, 2, 0, 0], size: [2, 2, 2, 5, 6] },
  { shape: [9], begin: [4], size: [5] },
  { shape: [3, 4], begin: [1, 0], size: [0, 4] },
];

async function slices(backend: 'cpu' | 'wasm'): Promise<{ values: number[]; shape: number[] }[]> {
  await initBackend({ force: backend });
  return Promise.all(CASES.map(async (c) => {
    const n = c.shape.reduce((a, b) => a * b, 1);
    const y = tf.tidy(() => tf.slice(tf.reshape(tf.range(0, n, 1, 'float32'), c.shape), c.begin, c.size));
    const out = { values: Array.from(await y.data()), shape: y.shape };
    y.dispose();
    return out;
  }));
}

describe('wasm Slice (heap-view copy)', () => {
  afterAll(() => registerWasmSlice());

  it('plans runs by hand: merged trailing dimensions, strided leading ones', () => {
    expect(sliceRuns([4, 3, 2], [1, 0, 1], [2, 3, 1])).toEqual({ offsets: [7, 9, 11, 13, 15, 17], run: 1 });
    expect(sliceRuns([8, 16, 32], [3, 0, 0], [1, 16, 32])).toEqual({ offsets: [1536], run: 512 });
    expect(sliceRuns([5, 7], [1, 2], [3, 4])).toEqual({ offsets: [9, 16, 23], run: 4 });
    expect(sliceRuns([], [], [])).toEqual({ offsets: [0], run: 1 });
  });

  it('equals the cpu backend and the stock wasm kernel on every case', async () => {
    const cpu = await slices('cpu');
    const ours = await slices('wasm'); // initBackend registers the project's kernels
    unregisterWasmSlice();
    const stock = await slices('wasm');
    registerWasmSlice();
    expect(ours).toEqual(cpu);
    expect(stock).toEqual(cpu);
  });

  it('keeps int32 and bool values, splits, and gradients through slice', async () => {
    await initBackend({ force: 'wasm' });
    const i = tf.slice(tf.tensor2d([[1, 2, 3], [4, 5, 6]], [2, 3], 'int32'), [1, 1], [1, 2]);
    expect(Array.from(await i.data())).toEqual([5, 6]);
    const b = tf.slice(tf.tensor1d([true, false, true, true], 'bool'), [1], [2]);
    expect(Array.from(await b.data())).toEqual([0, 1]);
    const parts = tf.split(tf.reshape(tf.range(0, 24, 1, 'float32'), [2, 3, 4]), [1, 3], 2);
    expect(parts.map((t) => t.shape)).toEqual([[2, 3, 1], [2, 3, 3]]);
    expect(Array.from(await parts[0].data())).toEqual([0, 4, 8, 12, 16, 20]);
    expect(Array.from(await parts[1].data()).slice(0, 4)).toEqual([1, 2, 3, 5]);
    const g = tf.grad((x: tf.Tensor) => tf.sum(tf.slice(x, [1], [2])))(tf.tensor1d([1, 2, 3, 4]));
    expect(Array.from(await g.data())).toEqual([0, 1, 1, 0]);
    tf.dispose([i, b, g, ...parts]);
  });
});
