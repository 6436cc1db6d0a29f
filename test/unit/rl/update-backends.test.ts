/**
 * One policy update computed on `wasm` equals the same update on `cpu` (the independent reference
 * backend): this exercises wasm's training path, including the gather gradient (UnsortedSegmentSum,
 * registered by the project for wasm).
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { initBackend, type BackendName } from '../../../src/core/engine/backend.ts';
import { LoraAdapter } from '../../../src/core/engine/lora/adapter.ts';
import { loadModel } from '../../../src/core/engine/model/load.ts';
import { folderSource } from '../../../src/core/engine/model/sources.ts';
import { AdamW } from '../../../src/core/rl/adamw.ts';
import { policyUpdate } from '../../../src/core/rl/update.ts';
import { type TrainSample } from '../../../src/core/rl/batches.ts';
import { thisThread } from '../../../src/core/compute/local.ts';
import { PARITY } from '../../helpers/fixtures.ts';

async function updatedAdapter(backend: BackendName) {
  await initBackend({ force: backend });
  const base = await loadModel(folderSource(path.join(PARITY, 'qwen2')));
  const adapter = LoraAdapter.create(base.config, { rank: 4, targetModules: ['q_proj', 'o_proj', 'down_proj'] }, "x", 9);
  const policies = new Map([['a', { adapter, optimizer: new AdamW(adapter.variables(), { lr: 0.5, eps: 1 }), trainable: true }]]); // eps 1: ~SGD, float noise in tiny gradients is not amplified
  const samples: TrainSample[] = [
    { agent: 'a', prompt: [1, 2, 3], action: [4, 5], reward: 1 },
    { agent: 'a', prompt: [9, 8], action: [7, 6, 5, 4], reward: 0.2, tokenRewards: [0, 0.1, 0, 0] },
    { agent: 'a', prompt: [3], action: [30, 31], reward: 0.5 },
  ];
  for (let k = 0; k < 3; k++) await policyUpdate(thisThread(base.model), policies, samples, { microBatchSize: 2 });
  const values = await adapter.values();
  adapter.dispose();
  base.model.dispose();
  return values;
}

describe('policy update across backends', () => {
  it('wasm gives the same adapter as cpu after three updates (1e-5)', async () => {
    const cpu = await updatedAdapter('cpu');
    const wasm = await updatedAdapter('wasm');
    let worst = 0;
    for (const [k, v] of cpu) {
      const w = wasm.get(k)!;
      for (let i = 0; i < v.b.length; i++) worst = Math.max(worst, Math.abs(v.b[i] - w.b[i]));
      for (let i = 0; i < v.a.length; i++) worst = Math.max(worst, Math.abs(v.a[i] - w.a[i]));
    }
    expect(worst).toBeLessThan(1e-5);
    expect([...cpu.values()].some((v) => v.b.some((x) => x !== 0))).toBe(true); // it did move
  }, 300_000);
});
