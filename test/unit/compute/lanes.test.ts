/**
 * LaneCompute (src/core/compute/lanes.ts, with src/cli/train-workers.ts's worker threads): the policy
 * update with a worker thread computing part of the micro-batches gives the single-thread update's
 * adapters and metrics (the reference: LocalCompute alone, on the same wasm backend); a lane that
 * dies mid-update has its share redone on this thread, is reported once, and is not asked again;
 * jobs are shared by cost.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorkerLanes } from '../../../src/cli/train-workers.ts';
import { initBackend } from '../../../src/core/engine/backend.ts';
import { LoraAdapter } from '../../../src/core/engine/lora/adapter.ts';
import { loadModel, type LoadedModel } from '../../../src/core/engine/model/load.ts';
import { folderSource } from '../../../src/core/engine/model/sources.ts';
import { AdamW } from '../../../src/core/rl/adamw.ts';
import { LaneCompute, shareJobs, type Lanes } from '../../../src/core/compute/lanes.ts';
import { LocalCompute, thisThread } from '../../../src/core/compute/local.ts';
import type { TeamPass } from '../../../src/core/loop/rollout.ts';
import type { LaneJob, LaneResult } from '../../../src/core/compute/lane-server.ts';
import { policyUpdate } from '../../../src/core/rl/update.ts';
import { type AgentPolicy } from '../../../src/core/rl/update-steps.ts';
import { type TrainSample } from '../../../src/core/rl/batches.ts';
import { Rng } from '../../../src/core/stats/rng.ts';
import { PARITY } from '../../helpers/fixtures.ts';

let base: LoadedModel;
let workers: Lanes;
beforeAll(async () => {
  await initBackend({ force: 'wasm' });
  base = await loadModel(folderSource(path.join(PARITY, 'llama')));
  workers = await startWorkerLanes(1, base.model);
}, 300_000);
afterAll(async () => { await workers?.close(); });

function policies(tag: string): Map<string, AgentPolicy> {
  const lora = { rank: 4, alpha: 8, targetModules: ['q_proj', 'v_proj', 'up_proj'] as const };
  return new Map(['solver', 'verifier'].map((id, k) => {
    const adapter = LoraAdapter.create(base.config, { ...lora, targetModules: [...lora.targetModules] }, `${tag}-${id}`, k);
    return [id, { adapter, optimizer: new AdamW(adapter.variables(), { lr: 1e-2 }), trainable: true }];
  }));
}

/** 14 samples over two agents, of different lengths, so micro-batches differ in cost. */
function samples(round: number): TrainSample[] {
  const rng = new Rng(`lanes-${round}`);
  const ids = (n: number) => [...Array(n)].map(() => 1 + Math.floor(rng.next() * 90));
  return [...Array(14)].map((_, i) => ({
    agent: i % 3 === 0 ? 'verifier' : 'solver', prompt: ids(3 + (i % 5)), action: ids(2 + (i % 4)),
    reward: rng.next(), truncated: i === 5,
  }));
}

const flat = async (p: Map<string, AgentPolicy>) =>
  Promise.all([...p.values()].map(async (x) => [...(await x.adapter.values()).values()].flatMap((v) => [...v.a, ...v.b])));

/** Lanes that fail every job: the boundary where a worker thread dies (it cannot be made to die on cue). */
class DeadLanes implements Lanes {
  count = 1;
  calls = 0;
  async post(_lane: number, _job: LaneJob): Promise<LaneResult> {
    this.calls++;
    throw new Error('worker exited (code 1)');
  }
  async close(): Promise<void> {}
}

describe('LaneCompute: the update shared with lane threads', () => {
  it('a worker thread computing part of the micro-batches gives the single-thread adapters and metrics', async () => {
    const serial = policies('team');
    const shared = policies('team'); // same names, so the same initial A
    const start = await flat(serial);
    const settings = { microBatchSize: 2, miniBatches: 2 };
    const jobs: string[] = [];
    const counted: Lanes = { count: 1, post: (lane, job) => (jobs.push(job.kind), workers.post(lane, job)), close: async () => {} };
    const compute = new LaneCompute(thisThread(base.model), counted);
    for (let round = 0; round < 2; round++) {
      const a = await policyUpdate(thisThread(base.model), serial, samples(round), settings);
      const b = await policyUpdate(compute, shared, samples(round), settings);
      for (const id of ['solver', 'verifier']) {
        const { loss, gradNorm, entropy, kl, clipFraction, steps } = a.agents[id];
        expect(b.agents[id]).toMatchObject({ loss, gradNorm, entropy, kl, clipFraction, steps });
        expect(steps).toBe(2);
      }
      expect(b.kl).toBe(a.kl);
    }
    const [x, y] = [await flat(serial), await flat(shared)];
    expect(y).toEqual(x); // same kernels, same inputs, same summation order: equal to the bit
    expect(x).not.toEqual(start); // and the update did move them
    expect(jobs.filter((k) => k === 'logprobs').length).toBeGreaterThanOrEqual(6); // the worker did its share
    expect(jobs.filter((k) => k === 'gradients').length).toBeGreaterThanOrEqual(4);
    for (const p of [...serial.values(), ...shared.values()]) p.adapter.dispose();
  }, 300_000);

  // The relay recipe's shape: each agent's samples are one micro-batch. Per agent, its one job would run here alone;
  // the agents' jobs are shared together (gradientsOfMany), and the adapters are still the single thread's to the bit.
  it('one micro-batch an agent: the agents\' gradients are shared over the lanes, the update equal to the bit', async () => {
    const serial = policies('one');
    const shared = policies('one');
    const jobs: string[] = [];
    const counted: Lanes = { count: 1, post: (lane, job) => (jobs.push(job.kind), workers.post(lane, job)), close: async () => {} };
    const compute = new LaneCompute(thisThread(base.model), counted);
    const a = await policyUpdate(thisThread(base.model), serial, samples(3), { microBatchSize: 64 });
    const b = await policyUpdate(compute, shared, samples(3), { microBatchSize: 64 });
    expect(jobs.filter((k) => k === 'gradients')).toHaveLength(1); // one of the two agents' gradients ran on the lane
    for (const id of ['solver', 'verifier']) expect(b.agents[id]).toMatchObject({ loss: a.agents[id].loss, gradNorm: a.agents[id].gradNorm, steps: 1 });
    expect(await flat(shared)).toEqual(await flat(serial));
    for (const p of [...serial.values(), ...shared.values()]) p.adapter.dispose();
  }, 300_000);

  it('a lane that fails has its jobs redone here, is reported once, and the update equals the single-thread one', async () => {
    const serial = policies('team2');
    const rescued = policies('team2');
    const dead = new DeadLanes();
    const errors: string[] = [];
    const compute = new LaneCompute(thisThread(base.model), dead, (m) => errors.push(m));
    expect(compute.background()).not.toBeNull();
    const a = await policyUpdate(thisThread(base.model), serial, samples(7), { microBatchSize: 2 });
    const b = await policyUpdate(compute, rescued, samples(7), { microBatchSize: 2 });
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/^a lane thread failed \(worker exited \(code 1\)\); its share was redone on this thread/);
    expect(dead.calls).toBeGreaterThan(0);
    expect(b.agents.solver.loss).toBe(a.agents.solver.loss);
    expect(await flat(rescued)).toEqual(await flat(serial));
    // From then on this compute runs everything here: the dead lane is not asked again.
    const calls = dead.calls;
    expect(compute.background()).toBeNull();
    await policyUpdate(compute, rescued, samples(8), { microBatchSize: 2 });
    expect(dead.calls).toBe(calls);
    for (const p of [...serial.values(), ...rescued.values()]) p.adapter.dispose();
  }, 300_000);

  it('shareJobs gives each job to the least-loaded lane (this thread first on ties) and keeps job order', async () => {
    const where: string[] = [];
    const out = await shareJobs([4, 4, 4, 4, 1], (c) => c, 1,
      async (c) => (where.push('here'), `h${c}`), async (lane, c) => (where.push(`lane${lane}`), `l${c}`));
    expect(out).toEqual(['h4', 'l4', 'h4', 'l4', 'h1']);
    expect(where.filter((w) => w === 'here')).toHaveLength(3);
  });
});

describe('LaneCompute.playTeam: where the passes go', () => {
  // Only the placement is under test: this thread's play is a stand-in that names the pass, and the
  // lane answers when the test says so (a real lane's play is tested in test/unit/loop/session.test.ts).
  const pass = (seed: number) => ({ seed }) as unknown as TeamPass;
  const here = { playTeam: async (ps: TeamPass[]) => ps.map((p) => [{ task: `here ${p.seed}` }]) } as unknown as LocalCompute;
  function lanes() {
    const pending: { job: LaneJob; answer: () => void }[] = [];
    const pool: Lanes = {
      count: 1,
      post: (_lane, job) => new Promise<LaneResult>((resolve) => pending.push({ job, answer: () => resolve({ kind: 'play', trajectories: [{ task: `lane ${(job as { pass: { seed: number } }).pass?.seed}` }] } as unknown as LaneResult) })),
      close: async () => {},
    };
    return { pool, pending };
  }

  it('plays the second pass on an idle lane, and here when the lane is busy with a pass played beside', async () => {
    const idle = lanes();
    const a = new LaneCompute(here, idle.pool);
    const played = a.playTeam([pass(1), pass(2)]);
    await Promise.resolve();
    expect(idle.pending).toHaveLength(1);
    idle.pending[0].answer();
    expect((await played).map((t) => (t[0] as unknown as { task: string }).task)).toEqual(['here 1', 'lane 2']);

    const busy = lanes();
    const b = new LaneCompute(here, busy.pool);
    const beside = b.background()!.playTeam([pass(9)]); // an evaluation chunk on the lane
    expect((await b.playTeam([pass(1), pass(2)])).map((t) => (t[0] as unknown as { task: string }).task)).toEqual(['here 1', 'here 2']);
    expect(busy.pending).toHaveLength(1);
    busy.pending[0].answer();
    expect((await beside)[0][0]).toEqual({ task: 'lane 9' });
  });
});
