/**
 * The optimizer step on the host (engine/host-math.ts, AdamW.applyHost; ENGINE_PATHS.hostStep) against the step
 * on the device it replaces, on wasm and cpu: the norm by hand, then three clipped AdamW steps (with weight
 * decay, a clip that bites and one that does not) on two copies of the relay model's adapter leave the same
 * gradient norms, weights and moments to the bit; moving between the two paths mid-run carries the moments.
 */
import * as tf from '@tensorflow/tfjs-core';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/core/engine/backend.ts';
import { LoraAdapter } from '../../../src/core/engine/lora/adapter.ts';
import { loadModel } from '../../../src/core/engine/model/load.ts';
import { folderSource } from '../../../src/core/engine/model/sources.ts';
import { ENGINE_PATHS } from '../../../src/core/engine/paths.ts';
import { AdamW } from '../../../src/core/rl/adamw.ts';
import { hostNorm, scaleInPlace } from '../../../src/core/engine/host-math.ts';
import { clippedStep, type AgentPolicy } from '../../../src/core/rl/update-steps.ts';
import { repoRoot } from '../../helpers/webgpu.ts';

afterEach(() => {
  ENGINE_PATHS.hostStep = true;
});

const TARGETS = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];

async function policies(): Promise<[AgentPolicy, AgentPolicy]> {
  const { model } = await loadModel(folderSource(path.join(repoRoot, 'models/relay')));
  const make = (): AgentPolicy => {
    const a = LoraAdapter.create(model.config, { rank: 8, alpha: 16, targetModules: TARGETS as never }, 'agent', 7);
    a.variables().forEach((v, i) => v.assign(tf.randomNormal(v.shape, 0, 0.1, 'float32', 40 + i)));
    return { adapter: a, optimizer: new AdamW(a.variables(), { lr: 2e-3, weightDecay: 0.01 }), trainable: true };
  };
  const out: [AgentPolicy, AgentPolicy] = [make(), make()];
  model.dispose();
  return out;
}

/** Step k's gradient for the adapter's variables: a scale that makes the clip bite on steps 0 and 2 only. */
function gradients(p: AgentPolicy, k: number): tf.Tensor[] {
  const scale = k === 1 ? 1e-3 : 0.3;
  return p.adapter.variables().map((v, i) => tf.randomNormal(v.shape, 0, scale, 'float32', 1000 * k + i + 1)); // seed 0 would draw at random
}

const flat = (ts: tf.Tensor[]) => ts.flatMap((t) => Array.from(t.dataSync()));
const state = async (p: AgentPolicy) => {
  const s = await p.optimizer.getState();
  return [s.step, ...s.m.flatMap((a) => Array.from(a)), ...s.v.flatMap((a) => Array.from(a))];
};

describe('the optimizer step on the host', () => {
  it('the norm and the clip by hand', () => {
    expect(hostNorm([Float32Array.of(3), Float32Array.of(4)], 'f32')).toBe(5);
    expect(hostNorm([Float32Array.of(1, 2, 2)], 'f64')).toBe(3);
    const g = [Float32Array.of(2, -4)];
    scaleInPlace(g, 0.5);
    expect(Array.from(g[0])).toEqual([1, -2]);
  });

  for (const backend of ['wasm', 'cpu'] as const) {
    it(`${backend}: three clipped AdamW steps give the device step's norms, weights and moments to the bit`, async () => {
      await initBackend({ force: backend });
      const [host, device] = await policies();
      for (let k = 0; k < 3; k++) {
        ENGINE_PATHS.hostStep = true;
        const a = await clippedStep(host, gradients(host, k), 0.5, 1);
        ENGINE_PATHS.hostStep = false;
        const before = tf.memory().numTensors;
        const b = await clippedStep(device, gradients(device, k), 0.5, 1);
        expect(a.gradNorm).toBe(b.gradNorm);
        expect(a.gradNorm > 1).toBe(k !== 1);
        expect(tf.memory().numTensors).toBe(k === 0 ? before + 56 : before); // the device's moments, made on its first step
      }
      expect(flat(host.adapter.variables())).toEqual(flat(device.adapter.variables()));
      expect(await state(host)).toEqual(await state(device));
      for (const p of [host, device]) {
        p.optimizer.dispose();
        p.adapter.dispose();
      }
    });

    it(`${backend}: moving between the host and the device mid-run carries the moments`, async () => {
      await initBackend({ force: backend });
      const [mixed, device] = await policies();
      for (let k = 0; k < 3; k++) {
        ENGINE_PATHS.hostStep = k !== 1; // host, device, host
        await clippedStep(mixed, gradients(mixed, k), 0.5, 1);
        ENGINE_PATHS.hostStep = false;
        await clippedStep(device, gradients(device, k), 0.5, 1);
      }
      expect(flat(mixed.adapter.variables())).toEqual(flat(device.adapter.variables()));
      expect(await state(mixed)).toEqual(await state(device));
      // a saved state restores into a fresh optimizer, and one of another shape is refused
      const saved = await mixed.optimizer.getState();
      const fresh = new AdamW(mixed.adapter.variables(), { lr: 2e-3 });
      fresh.setState(saved);
      expect(await state({ ...mixed, optimizer: fresh })).toEqual(await state(mixed));
      expect(() => fresh.setState({ ...saved, m: saved.m.map((a) => a.subarray(1)) })).toThrow(/another adapter configuration/);
      for (const p of [mixed, device]) {
        p.optimizer.dispose();
        p.adapter.dispose();
      }
    });
  }
});
