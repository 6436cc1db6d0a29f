/**
 * Update lanes on Node worker threads: each worker holds a replica of the base model on its own
 * tfjs `wasm` backend (one core each; tfjs-backend-wasm 4.22 runs a single thread in Node) and runs
 * the log-prob and gradient jobs of src/core/rl/lanes.ts. `mappa train` starts one worker per extra
 * core, so the update uses every core with results equal to a single-thread run.
 *
 * Example:
 *   const lanes = await UpdateWorkers.start(1, loaded.model);   // 2 cores: this thread + 1 worker
 *   await policyUpdate(model, policies, samples, settings, lanes);
 *   await lanes.close();
 */
import * as tf from '@tensorflow/tfjs-core';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import type { ModelConfig } from '../core/model/config.ts';
import type { CausalLM } from '../core/model/llama.ts';
import type { LaneJob, LaneResult, UpdateLanes } from '../core/rl/lanes.ts';

interface Boot { role: 'update-lane'; config: ModelConfig; weights: { name: string; shape: number[]; values: Float32Array }[] }
type Reply = { ok: true; result: LaneResult } | { ok: false; error: string };

/** tsx's ESM `register` API file, from its exports map (workers run this TypeScript file through it). */
function tsxEsmApi(): string {
  const manifest = createRequire(import.meta.url).resolve('tsx/package.json');
  const entry = JSON.parse(readFileSync(manifest, 'utf8')).exports['./esm/api'].import.default as string;
  return path.join(path.dirname(manifest), entry);
}

export class UpdateWorkers implements UpdateLanes {
  private queue: Promise<unknown>[];
  private dead: (Error | null)[];

  private constructor(private readonly workers: Worker[]) {
    this.queue = workers.map(() => Promise.resolve());
    this.dead = workers.map(() => null);
    workers.forEach((w, i) => w.on('error', (e) => (this.dead[i] = e)));
  }

  /** Starts `count` workers, each with a copy of `model`'s weights (Hugging Face layout). */
  static async start(count: number, model: CausalLM): Promise<UpdateWorkers> {
    const weights = [...model.weights.keys()].map((name) => {
      const t = model.hfWeight(name);
      const out = { name, shape: t.shape, values: t.dataSync() as Float32Array };
      t.dispose();
      return out;
    });
    const tsxApi = pathToFileURL(tsxEsmApi()).href;
    const boot = `import(${JSON.stringify(tsxApi)}).then((api) => { api.register(); return import(${JSON.stringify(import.meta.url)}); })`;
    const workers = [...Array(count)].map(() => new Worker(boot, { eval: true, workerData: { role: 'update-lane', config: model.config, weights } satisfies Boot }));
    try {
      await Promise.all(workers.map((w) => new Promise<void>((resolve, reject) => {
        w.once('message', (m: { ready?: boolean; error?: string }) => (m.ready ? resolve() : reject(new Error(m.error))));
        w.once('error', reject);
      })));
    } catch (e) {
      await Promise.all(workers.map((w) => w.terminate()));
      throw new Error(`update worker failed to start: ${(e as Error).message}`);
    }
    return new UpdateWorkers(workers);
  }

  get count(): number {
    return this.workers.length;
  }

  /** Runs a job on worker `lane` (1-based); a lane's jobs run one after another, in the order posted. */
  run(lane: number, job: LaneJob): Promise<LaneResult> {
    const i = lane - 1;
    const w = this.workers[i];
    if (!w) return Promise.reject(new Error(`no update lane ${lane} (${this.workers.length} started)`));
    const result = this.queue[i].then(() => new Promise<LaneResult>((resolve, reject) => {
      if (this.dead[i]) return reject(new Error(`update worker ${lane} died: ${this.dead[i]!.message}`));
      const onError = (e: Error) => reject(new Error(`update worker ${lane} died: ${e.message}`));
      const onExit = (code: number) => reject(new Error(`update worker ${lane} exited (code ${code})`));
      w.once('error', onError);
      w.once('exit', onExit);
      w.once('message', (m: Reply) => {
        w.off('error', onError);
        w.off('exit', onExit);
        if (m.ok) resolve(m.result);
        else reject(new Error(`update worker ${lane}: ${m.error}`));
      });
      w.postMessage(job);
    }));
    this.queue[i] = result.catch(() => undefined);
    return result;
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.terminate()));
  }
}

/** Worker side: build the replica, then answer jobs one at a time. */
async function serve(): Promise<void> {
  const { config, weights } = workerData as Boot;
  let server: import('../core/rl/lanes.ts').LaneServer;
  try {
    const { initBackend } = await import('../core/backend.ts');
    await initBackend({ force: 'wasm' }); // the main thread's kernels and gradients, on this thread's wasm
    const { CausalLM: Model } = await import('../core/model/llama.ts');
    const { LaneServer } = await import('../core/rl/lanes.ts');
    const { ppoLoss } = await import('../core/rl/update.ts');
    const model = new Model(config, new Map(weights.map((w) => [w.name, tf.tensor(w.values, w.shape)])));
    server = new LaneServer(model, ppoLoss);
  } catch (e) {
    parentPort!.postMessage({ error: (e as Error).message });
    return;
  }
  parentPort!.postMessage({ ready: true });
  parentPort!.on('message', (job: LaneJob) => {
    server.handle(job).then(
      (result) => parentPort!.postMessage({ ok: true, result } satisfies Reply, [(result.kind === 'logprobs' ? result.logp : result.grads).buffer as ArrayBuffer]),
      (e: Error) => parentPort!.postMessage({ ok: false, error: e.message } satisfies Reply),
    );
  });
}

if (!isMainThread && (workerData as { role?: string } | null)?.role === 'update-lane') void serve();
