/**
 * Worker threads for `mappa train` and `mappa eval`: each holds a replica of the base model on its
 * own tfjs `wasm` backend (one core each; tfjs-backend-wasm 4.22 runs a single thread in Node) and
 * answers LaneCompute's jobs (core/compute/lanes.ts): the update's log-prob and gradient
 * micro-batches, and evaluation passes of the whole team (with its own sandbox). The results equal a
 * single-thread run's.
 *
 * Example:
 *   const lanes = await startWorkerLanes(1, loaded.model);        // 2 cores: this thread + 1 worker
 *   const compute = computeFor(parts, lanes, warn);                // what the run trains with
 *   await lanes.close();
 */
import * as tf from '@tensorflow/tfjs-core';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { initBackend } from '../core/engine/backend.ts';
import type { PlayedTeam } from '../core/loop/team.ts';
import type { ModelConfig } from '../core/engine/model/config.ts';
import { CausalLM } from '../core/engine/model/llama.ts';
import { LanePool, serveLaneJobs, type LanePort } from '../core/compute/lane-pool.ts';
import type { Lanes } from '../core/compute/lanes.ts';
import { laneTransfer, LaneServer, type LaneJob, type LaneResult } from '../core/compute/lane-server.ts';
import type { TeamParts } from '../core/loop/rollout.ts';
import { disposeTools } from '../core/tools/runners.ts';
import { setUpTeam } from './run-setup.ts';
import { tsWorkerBoot } from './ts-worker.ts';

interface Boot { role: 'update-lane'; config: ModelConfig; weights: { name: string; shape: number[]; values: Float32Array }[] }

/** A worker thread as a LanePool port. */
function nodePort(w: Worker): LanePort {
  return {
    postMessage: (m, transfer) => w.postMessage(m, transfer as never),
    listen(onReply, onDeath) {
      w.on('message', onReply);
      w.on('error', (e) => onDeath(e));
      w.on('exit', (code) => onDeath(new Error(`exited (code ${code})`)));
    },
    terminate: () => w.terminate(),
  };
}

/** Starts `count` workers, each with a copy of `model`'s weights (Hugging Face layout). */
export async function startWorkerLanes(count: number, model: CausalLM): Promise<Lanes> {
  const weights = model.hfNames().map((name) => {
    const t = model.hfWeight(name);
    const out = { name, shape: t.shape, values: t.dataSync() as Float32Array };
    t.dispose();
    return out;
  });
  const boot = tsWorkerBoot(import.meta.url);
  const workers = [...Array(count)].map(() => new Worker(boot, {
    eval: true,
    workerData: { role: 'update-lane', config: model.config, weights } satisfies Boot,
  }));
  try {
    await Promise.all(workers.map((w) => new Promise<void>((resolve, reject) => {
      w.once('message', (m: { ready?: boolean; error?: string }) => (m.ready ? resolve() : reject(new Error(m.error))));
      w.once('error', reject);
    })));
  } catch (e) {
    await Promise.all(workers.map((w) => w.terminate()));
    throw new Error(`worker thread failed to start: ${(e as Error).message}`);
  }
  return new LanePool<LaneJob, LaneResult>(workers.map(nodePort), 'worker');
}

/** Worker side of a team pass: the run's parts (model with tokenizer, sandbox, SQL tool), made once per config. */
let team: { key: string; parts: TeamParts } | null = null;
async function replicaParts(config: PlayedTeam): Promise<TeamParts> {
  const key = JSON.stringify([config.agentModel, config.workflow]);
  if (team?.key !== key) {
    if (team) await disposeTools(team.parts.tools);
    team = { key, parts: await setUpTeam(config) };
  }
  return team.parts;
}

/** Worker side: build the replica, then answer jobs one at a time. */
async function serve(): Promise<void> {
  const { config, weights } = workerData as Boot;
  let server: LaneServer;
  try {
    await initBackend({ force: 'wasm' }); // the main thread's kernels and gradients, on this thread's wasm
    const model = new CausalLM(config, new Map(weights.map((w) => [w.name, tf.tensor(w.values, w.shape)])));
    server = new LaneServer(model, replicaParts);
  } catch (e) {
    parentPort!.postMessage({ error: (e as Error).message });
    return;
  }
  parentPort!.postMessage({ ready: true });
  const endpoint = {
    postMessage: (m: unknown, t?: Transferable[]) => parentPort!.postMessage(m, t as never),
    onMessage: (h: (m: unknown) => void) => parentPort!.on('message', h),
  };
  serveLaneJobs<LaneJob, LaneResult>(endpoint, (job, signal) => server.handle(job, signal), laneTransfer);
}

if (!isMainThread && (workerData as { role?: string } | null)?.role === 'update-lane') void serve();
