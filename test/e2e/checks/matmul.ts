// Browser check: a 64x96x80 matmul and a softmax on the harness' backend (webgpu) against tfjs'
// cpu backend in the same page. Returns the largest absolute differences.

import * as tf from '@tensorflow/tfjs-core';
import { initBackend } from '../../../src/core/engine/backend.ts';
import type { HarnessCheck } from '../harness-types.ts';
import { lcg } from '../../helpers/lcg.ts';


async function compute(): Promise<{ mm: Float32Array; sm: Float32Array }> {
  const [mmT, smT] = tf.tidy(() => [
    tf.matMul(tf.tensor2d(lcg(64 * 96, 1), [64, 96]), tf.tensor2d(lcg(96 * 80, 2), [96, 80])), // [64, 80]
    tf.softmax(tf.tensor2d(lcg(8 * 50, 3).map((v) => v * 12), [8, 50])), // [8, 50]
  ]);
  const out = { mm: (await mmT.data()) as Float32Array, sm: (await smT.data()) as Float32Array };
  tf.dispose([mmT, smT]);
  return out;
}

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

export const check: HarnessCheck = {
  name: 'matmul-vs-cpu',
  description: 'matmul 64x96x80 and softmax [8,50] on the harness backend vs tfjs cpu',
  async run(ctx) {
    const tested = ctx.backend.name;
    const onBackend = await compute();
    await initBackend({ force: 'cpu' });
    const onCpu = await compute();
    await initBackend({ force: tested }); // leave the page on the backend the harness chose
    return {
      backend: tested,
      matmulMaxAbsDiff: maxAbsDiff(onBackend.mm, onCpu.mm),
      softmaxMaxAbsDiff: maxAbsDiff(onBackend.sm, onCpu.sm),
      c00: onCpu.mm[0],
      leakedTensors: tf.memory().numTensors,
    };
  },
};
