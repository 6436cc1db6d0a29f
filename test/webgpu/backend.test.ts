// The backend chooser on real WebGPU (Dawn in Node over SwiftShader), checked against tfjs' cpu
// backend as the numerical reference. Skips loudly without Debian's chromium (SwiftShader ICD).
// Order matters inside this file (one process, one tfjs engine): auto choice first, then forced.

import { describe, expect, it } from 'vitest';
import * as tf from '@tensorflow/tfjs-core';
import { backendLimits, currentBackend, describeBackend, initBackend, onDeviceLost, restartWebGPU, webgpuDevice } from '../../src/core/engine/backend.ts';
import { warnIfSkipped, webgpuAvailable } from '../helpers/webgpu.ts';
import { lcg } from '../helpers/lcg.ts';

const gpu = webgpuAvailable();
warnIfSkipped('WebGPU suite (test/webgpu/backend.test.ts)', gpu);


const A = lcg(64 * 96, 1); // [64, 96]
const B = lcg(96 * 80, 2); // [96, 80]
const LOGITS = lcg(8 * 50, 3).map((v) => v * 12); // [8, 50], spread so softmax is peaked

async function matmulAndSoftmax(): Promise<{ mm: Float32Array; sm: Float32Array }> {
  const a = tf.tensor2d(A, [64, 96]);
  const b = tf.tensor2d(B, [96, 80]);
  const logits = tf.tensor2d(LOGITS, [8, 50]);
  const mmT = tf.matMul(a, b); // [64, 80]
  const smT = tf.softmax(logits); // [8, 50]
  const mm = (await mmT.data()) as Float32Array;
  const sm = (await smT.data()) as Float32Array;
  tf.dispose([a, b, logits, mmT, smT]);
  return { mm, sm };
}

function maxAbsDiff(x: Float32Array, y: Float32Array): number {
  expect(x.length).toBe(y.length);
  let m = 0;
  for (let i = 0; i < x.length; i++) m = Math.max(m, Math.abs(x[i] - y[i]));
  return m;
}

describe.skipIf(!gpu.ok)('backend selection on real WebGPU (Dawn + SwiftShader)', () => {
  let onGpu: { mm: Float32Array; sm: Float32Array };

  it('the automatic choice skips the software (SwiftShader) adapter for wasm, and says why', async () => {
    const info = await initBackend();
    expect(info.name).toBe('wasm');
    expect(info.notice).toMatch(/software fallback .*swiftshader/i);
    expect(currentBackend()).toBe(info);
    console.log(`[backend] ${describeBackend(info)}`);
  });

  it('reports the SwiftShader adapter and its limits', async () => {
    const info = await initBackend({ force: 'webgpu' });
    expect(info).toBe(currentBackend()); // same choice again: no-op, same object
    const a = info.adapter!;
    expect(a.vendor).toBe('google');
    expect(a.architecture).toBe('swiftshader');
    expect(a.description).toMatch(/swiftshader/i);
    expect(a.isFallbackAdapter).toBe(true);
    expect(a.features).not.toContain('shader-f16');
    expect(a.limits.maxStorageBufferBindingSize).toBeGreaterThanOrEqual(128 * 2 ** 20);
    expect(backendLimits().maxStorageBufferBindingSize).toBe(a.limits.maxStorageBufferBindingSize);
    expect(backendLimits().maxComputeInvocationsPerWorkgroup).toBeGreaterThanOrEqual(256);
    const unsubscribe = onDeviceLost(() => undefined);
    expect(typeof unsubscribe).toBe('function');
    unsubscribe();
  });

  it('computes a 64x96x80 matmul and a softmax on webgpu', async () => {
    onGpu = await matmulAndSoftmax();
    expect(onGpu.mm.length).toBe(64 * 80);
    expect(tf.memory().numTensors).toBe(0);
  });

  it('cpu backend agrees with webgpu within 1e-4', async () => {
    const info = await initBackend({ force: 'cpu' });
    expect(info).toEqual({ name: 'cpu' });
    expect(tf.getBackend()).toBe('cpu');
    const onCpu = await matmulAndSoftmax();
    expect(maxAbsDiff(onGpu.mm, onCpu.mm)).toBeLessThan(1e-4);
    expect(maxAbsDiff(onGpu.sm, onCpu.sm)).toBeLessThan(1e-4);
    // Independent spot check of one matmul entry, summed in float64 here.
    let c00 = 0;
    for (let k = 0; k < 96; k++) c00 += A[k] * B[k * 80];
    expect(Math.abs(onCpu.mm[0] - c00)).toBeLessThan(1e-4);
    expect(backendLimits().maxBufferSize).toBe(2 ** 31 - 1);
  });

  it('force wasm works, reports SIMD, and agrees with cpu', async () => {
    const info = await initBackend({ force: 'wasm' });
    expect(info.name).toBe('wasm');
    expect(tf.getBackend()).toBe('wasm');
    expect(info.wasm?.simd).toBe(true);
    expect(info.wasm?.threads).toBe(1); // Node: no wasm threads
    const onWasm = await matmulAndSoftmax();
    expect(maxAbsDiff(onGpu.mm, onWasm.mm)).toBeLessThan(1e-4);
    expect(maxAbsDiff(onGpu.sm, onWasm.sm)).toBeLessThan(1e-4);
  });

  it('switches back to webgpu and rejects unknown names', async () => {
    expect((await initBackend({ force: 'webgpu' })).name).toBe('webgpu');
    await expect(initBackend({ force: 'tpu' as never })).rejects.toThrow(/unknown backend 'tpu'/);
    expect(currentBackend()?.name).toBe('webgpu');
  });

  it("webgpuLimits 'default' asks for WebGPU's default limits (128 MiB bindings, 256 MiB buffers), 'adapter' for the adapter's again", async () => {
    const adapterLimits = backendLimits();
    await initBackend({ force: 'cpu' });
    const info = await initBackend({ force: 'webgpu', webgpuLimits: 'default' });
    expect(info.adapter?.limits).toEqual({ maxStorageBufferBindingSize: 128 * 2 ** 20, maxBufferSize: 256 * 2 ** 20 });
    const again = await matmulAndSoftmax();
    expect(maxAbsDiff(again.mm, onGpu.mm)).toBeLessThan(1e-5);
    await initBackend({ force: 'cpu' });
    await initBackend({ force: 'webgpu', webgpuLimits: 'adapter' });
    expect(backendLimits()).toEqual(adapterLimits);
    console.log(`[backend] adapter limits: ${JSON.stringify(adapterLimits)}`);
  });

  it('after a device loss, restartWebGPU gives a new device that computes the same results', async () => {
    const lost = new Promise<{ reason: string }>((resolve) => {
      const off = onDeviceLost((info) => {
        off();
        resolve(info);
      });
    });
    const old = webgpuDevice()!;
    old.destroy(); // what a driver reset looks like to the page
    expect((await lost).reason).toBe('destroyed');
    const info = await restartWebGPU();
    expect(info.name).toBe('webgpu');
    expect(tf.getBackend()).toBe('webgpu');
    expect(webgpuDevice()).not.toBe(old);
    const again = await matmulAndSoftmax();
    expect(maxAbsDiff(again.mm, onGpu.mm)).toBeLessThan(1e-5);
    expect(maxAbsDiff(again.sm, onGpu.sm)).toBeLessThan(1e-6);
  });
});
