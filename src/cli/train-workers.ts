/**
 * Worker threads for `mappa train`: each holds a replica of the base model on its own tfjs `wasm`
 * backend (one core each; tfjs-backend-wasm 4.22 runs a single thread in Node) and runs
 *   - the update's log-prob and gradient jobs (src/core/rl/lanes.ts), and
 *   - an evaluation's sampled pass (the whole team, with its own sandbox), while the main thread runs
 *     the greedy one.
 * `mappa train` starts one worker per extra core; the results equal a single-thread run's.
 *
 * Example:
 *   const workers = await TrainWorkers.start(1, loaded.model);   // 2 cores: this thread + 1 worker
 *   await policyUpdate(model, policies, samples, settings, workers);
 *   await workers.close();
 */
import * as tf from '@tensorflow/tfjs-core';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { initBackend } from '../core/backend.ts';
import { LoraAdapter } from '../core/lora/adapter.ts';
import { EngineAgents } from '../core/mappa/agents.ts';
import type { TrainConfig } from '../core/mappa/config.ts';
import { domainOf } from '../core/mappa/domains.ts';
import { runRollouts, type RolloutTask, type Trajectory } from '../core/mappa/rollout.ts';
import type { ModelConfig } from '../core/model/config.ts';
import { CausalLM } from '../core/model/llama.ts';
import { assignSpec, LaneServer, type AdapterSpec, type LaneJob, type LaneResult, type UpdateLanes } from '../core/rl/lanes.ts';
import { ppoLoss } from '../core/rl/update.ts';
import { setUpRun, type RunParts } from './run-setup.ts';
import { tsWorkerBoot } from './ts-worker.ts';

interface Boot { role: 'update-lane'; config: ModelConfig; weights: { name: string; shape: number[]; values: Float32Array }[] }
/** The team's rollouts on given tasks, one sample each (an evaluation pass). */
interface RolloutJob { kind: 'rollouts'; config: TrainConfig; adapters: [string, AdapterSpec | null][]; tasks: RolloutTask[]; temperature: number; seed: number }
type Job = LaneJob | RolloutJob;
type Result = LaneResult | { kind: 'rollouts'; trajectories: Trajectory[] };
type Reply = { ok: true; result: Result } | { ok: false; error: string };

export class TrainWorkers implements UpdateLanes {
  /** Per worker: replies awaited, by job id. */
  private readonly pending: Map<number, { resolve: (r: Result) => void; reject: (e: Error) => void }>[];
  private readonly dead: (Error | null)[];
  private nextId = 0;

  private constructor(private readonly workers: Worker[]) {
    this.pending = workers.map(() => new Map());
    this.dead = workers.map(() => null);
    workers.forEach((w, i) => {
      const fail = (e: Error) => {
        this.dead[i] = e;
        for (const p of this.pending[i].values()) p.reject(e);
        this.pending[i].clear();
      };
      w.on('error', (e) => fail(new Error(`worker ${i + 1} died: ${e.message}`)));
      w.on('exit', (code) => fail(new Error(`worker ${i + 1} exited (code ${code})`)));
      w.on('message', (m: Reply & { id: number }) => {
        const p = this.pending[i].get(m.id);
        if (!p) return;
        this.pending[i].delete(m.id);
        if (m.ok) p.resolve(m.result);
        else p.reject(new Error(`worker ${i + 1}: ${m.error}`));
      });
    });
  }

  /** Starts `count` workers, each with a copy of `model`'s weights (Hugging Face layout). */
  static async start(count: number, model: CausalLM): Promise<TrainWorkers> {
    const weights = [...model.weights.keys()].map((name) => {
      const t = model.hfWeight(name);
      const out = { name, shape: t.shape, values: t.dataSync() as Float32Array };
      t.dispose();
      return out;
    });
    const boot = tsWorkerBoot(import.meta.url);
    const workers = [...Array(count)].map(() => new Worker(boot, { eval: true, workerData: { role: 'update-lane', config: model.config, weights } satisfies Boot }));
    try {
      await Promise.all(workers.map((w) => new Promise<void>((resolve, reject) => {
        w.once('message', (m: { ready?: boolean; error?: string }) => (m.ready ? resolve() : reject(new Error(m.error))));
        w.once('error', reject);
      })));
    } catch (e) {
      await Promise.all(workers.map((w) => w.terminate()));
      throw new Error(`worker thread failed to start: ${(e as Error).message}`);
    }
    return new TrainWorkers(workers);
  }

  get count(): number {
    return this.workers.length;
  }

  /** Runs an update job on worker `lane` (1-based). */
  run(lane: number, job: LaneJob): Promise<LaneResult> {
    return this.post(lane, job) as Promise<LaneResult>;
  }

  /**
   * An evaluation's sampled pass on the last worker (core's EvalOffload): the team with these adapters
   * on `tasks`, one sample each, at `temperature` with `seed` — the trajectories the main thread would make.
   */
  readonly rollouts = async (config: TrainConfig, adapters: Map<string, AdapterSpec | null>, tasks: RolloutTask[],
    temperature: number, seed: number): Promise<Trajectory[]> => {
    const r = await this.post(this.workers.length, { kind: 'rollouts', config, adapters: [...adapters], tasks, temperature, seed });
    if (r.kind !== 'rollouts') throw new Error('worker answered a rollout job with update results');
    return r.trajectories;
  };

  /**
   * Posts a job to worker `lane` (1-based) at once: the worker runs its jobs one after another in the
   * order posted, so it keeps busy while this thread computes its own share without yielding.
   */
  private post(lane: number, job: Job): Promise<Result> {
    const i = lane - 1;
    const w = this.workers[i];
    if (!w) return Promise.reject(new Error(`no worker ${lane} (${this.workers.length} started)`));
    if (this.dead[i]) return Promise.reject(this.dead[i]!);
    const id = this.nextId++;
    return new Promise<Result>((resolve, reject) => {
      this.pending[i].set(id, { resolve, reject });
      w.postMessage({ id, job });
    });
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.terminate()));
  }
}

/** Worker side of a rollout job: the run's parts (model with tokenizer, sandbox, SQL tool), made once per config. */
let team: { key: string; parts: RunParts } | null = null;
async function rollouts(job: RolloutJob): Promise<Result> {
  const key = JSON.stringify([job.config.agentModel, job.config.workflow]);
  if (team?.key !== key) {
    await team?.parts.sandbox?.dispose();
    await team?.parts.sql?.dispose();
    team = { key, parts: await setUpRun(job.config, false) };
  }
  const { agentModel, sandbox, sql } = team.parts;
  const adapters = new Map<string, LoraAdapter>();
  for (const [id, spec] of job.adapters) {
    if (!spec) continue;
    adapters.set(id, assignSpec(LoraAdapter.create(agentModel.config, spec.settings, spec.name), spec));
  }
  try {
    const domain = domainOf(job.config.workflow);
    const trajectories = await runRollouts(job.config.workflow, job.tasks, {
      agents: new EngineAgents(agentModel, adapters), sandbox, sql, outcome: domain.outcome, samplesPerTask: 1,
      temperature: job.temperature, seed: job.seed, toolTimeoutMs: job.config.toolTimeoutMs,
    });
    return { kind: 'rollouts', trajectories };
  } finally {
    for (const a of adapters.values()) a.dispose();
  }
}

/** Worker side: build the replica, then answer jobs one at a time. */
async function serve(): Promise<void> {
  const { config, weights } = workerData as Boot;
  let server: LaneServer;
  try {
    await initBackend({ force: 'wasm' }); // the main thread's kernels and gradients, on this thread's wasm
    const model = new CausalLM(config, new Map(weights.map((w) => [w.name, tf.tensor(w.values, w.shape)])));
    server = new LaneServer(model, ppoLoss);
  } catch (e) {
    parentPort!.postMessage({ error: (e as Error).message });
    return;
  }
  parentPort!.postMessage({ ready: true });
  // One job at a time, in the order posted (a job's awaits may yield to the next message).
  let chain: Promise<unknown> = Promise.resolve();
  parentPort!.on('message', ({ id, job }: { id: number; job: Job }) => {
    chain = chain.then(() => (job.kind === 'rollouts' ? rollouts(job) : server.handle(job))).then(
      (result) => parentPort!.postMessage({ id, ok: true, result } satisfies Reply & { id: number },
        result.kind === 'rollouts' ? [] : [(result.kind === 'logprobs' ? result.logp : result.grads).buffer as ArrayBuffer]),
      (e: Error) => parentPort!.postMessage({ id, ok: false, error: e.message } satisfies Reply & { id: number }),
    );
  });
}

if (!isMainThread && (workerData as { role?: string } | null)?.role === 'update-lane') void serve();
