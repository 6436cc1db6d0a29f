/**
 * Data-parallel gradients for pretraining: each batch's rows are cut into shards, the main thread
 * computes the first shard's gradient while worker threads (each with its own tfjs `wasm` backend,
 * one core each) compute the others, and the gradients are summed before the one optimizer step.
 * The maths is the single-thread step's: every shard's loss is divided by the whole batch's weight
 * count, so the shard losses and gradients add up to the batch's (up to float summation order).
 *
 * For: scripts/pretrain/train.ts on a multi-core CPU (tfjs-backend-wasm 4.22 runs one thread in
 * Node). Not for: RL updates, webgpu.
 *
 * Example (2 cores):
 *   const pool = await GradientWorkers.start(1, config, [...weights.keys()]);
 *   const shards = shardRows(batchRows, 2);             // [rows 0..k), [rows k..n)
 *   const pending = pool.gradients(shards.slice(1), weights, count);
 *   const mine = tf.variableGrads(() => shardLoss(model, config, shards[0], count));
 *   const theirs = await pending;                        // Float32Array per weight, per worker
 *   await pool.close();
 */
import * as tf from '@tensorflow/tfjs-core';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import type { ModelConfig } from '../../src/core/engine/model/config.ts';
import { CausalLM } from '../../src/core/engine/model/llama.ts';
import { tsWorkerBoot } from '../../src/cli/ts-worker.ts';

/** Rows of one batch, already padded to one width: ids, attention mask, next-token targets and loss weights. */
export interface Shard {
  ids: number[][]; // [rows, T]
  attentionMask: number[][]; // [rows, T]
  targets: number[][]; // [rows, T]: ids shifted left by one
  weights: number[][]; // [rows, T]: 1 on targets, the prompt weight elsewhere, 0 on padding
}

/**
 * The shard's share of the batch loss: -sum(weight * log p(target)) / count, where count is the
 * whole batch's weight sum, so shard losses add up to the batch loss.
 */
export function shardLoss(model: CausalLM, config: ModelConfig, s: Shard, count: number): tf.Scalar {
  const rows = s.ids.length;
  const width = s.ids[0].length;
  const logits = model.forward(s.ids, { attentionMask: s.attentionMask, train: true }).logits; // [rows, T, V]
  const flat = tf.reshape(logits, [rows * width, config.vocabSize]); // [rows*T, V]
  const onehot = tf.cast(tf.oneHot(tf.tensor1d(s.targets.flat(), 'int32'), config.vocabSize), 'float32'); // [rows*T, V]
  const logp = tf.sum(tf.mul(tf.logSoftmax(flat), onehot), -1); // [rows*T]
  const w = tf.tensor1d(s.weights.flat());
  return tf.div(tf.neg(tf.sum(tf.mul(logp, w))), Math.max(1, count)) as tf.Scalar;
}

/** Cuts a batch into at most `parts` shards of consecutive rows, the first ones one row larger. */
export function shardRows(s: Shard, parts: number): Shard[] {
  const n = s.ids.length;
  const k = Math.max(1, Math.min(parts, n));
  const out: Shard[] = [];
  let start = 0;
  for (let i = 0; i < k; i++) {
    const size = Math.floor(n / k) + (i < n % k ? 1 : 0);
    const cut = <T>(rows: T[]) => rows.slice(start, start + size);
    out.push({ ids: cut(s.ids), attentionMask: cut(s.attentionMask), targets: cut(s.targets), weights: cut(s.weights) });
    start += size;
  }
  return out;
}

/** The weights as one flat Float32Array (in `names` order) for a worker. Synchronous, so the jobs are
 *  posted before the caller starts its own shard. */
function flatten(weights: Map<string, tf.Tensor>, names: string[]): Float32Array {
  const parts = names.map((n) => weights.get(n)!.dataSync() as Float32Array);
  const out = new Float32Array(parts.reduce((s, p) => s + p.length, 0));
  let offset = 0;
  for (const p of parts) {
    out.set(p, offset);
    offset += p.length;
  }
  return out;
}

interface Job { weights: Float32Array; shard: Shard; count: number }
type Reply = { ok: true; grads: Float32Array; loss: number } | { ok: false; error: string };

/** A pool of gradient workers; `count` = 0 is allowed (then `gradients` gets no shards). */
export class GradientWorkers {
  private constructor(private readonly workers: Worker[], private readonly names: string[], private readonly shapes: number[][]) {}

  /** Starts `count` workers, each holding a replica of the model with `config` and weight `names` (shapes from `weights`). */
  static async start(count: number, config: ModelConfig, weights: Map<string, tf.Tensor>): Promise<GradientWorkers> {
    const names = [...weights.keys()];
    const shapes = names.map((n) => weights.get(n)!.shape);
    // Workers run this same TypeScript file, so they register tsx's loader before importing it.
    const boot = tsWorkerBoot(import.meta.url);
    const workers = [...Array(count)].map(() => new Worker(boot, { eval: true, workerData: { role: 'pretrain-gradients', config, names, shapes } }));
    await Promise.all(workers.map((w) => new Promise<void>((resolve, reject) => {
      w.once('message', (m: { ready?: boolean; error?: string }) => (m.ready ? resolve() : reject(new Error(`gradient worker failed to start: ${m.error}`))));
      w.once('error', (e) => reject(new Error(`gradient worker failed to start: ${e.message}`)));
    })));
    return new GradientWorkers(workers, names, shapes);
  }

  get size(): number {
    return this.workers.length;
  }

  /**
   * Gradients of shardLoss for each shard (shard i on worker i) at the current weights, as tensors by
   * weight name, and the losses. The jobs are posted before this returns, so the caller can compute
   * its own shard meanwhile and await the promise afterwards.
   */
  gradients(shards: Shard[], weights: Map<string, tf.Tensor>, count: number): Promise<{ grads: Map<string, tf.Tensor>[]; losses: number[] }> {
    if (shards.length > this.workers.length) throw new Error(`GradientWorkers: ${shards.length} shards for ${this.workers.length} workers`);
    if (!shards.length) return Promise.resolve({ grads: [], losses: [] });
    const flat = flatten(weights, this.names);
    const posted = Promise.all(shards.map((shard, i) => new Promise<Reply>((resolve, reject) => {
      const w = this.workers[i];
      const onError = (e: Error) => reject(new Error(`gradient worker ${i + 1} died: ${e.message}`));
      w.once('error', onError);
      w.once('message', (m: Reply) => {
        w.off('error', onError);
        resolve(m);
      });
      w.postMessage({ weights: flat, shard, count } satisfies Job);
    })));
    return posted.then((replies) => this.unpack(replies));
  }

  private unpack(replies: Reply[]): { grads: Map<string, tf.Tensor>[]; losses: number[] } {
    const grads: Map<string, tf.Tensor>[] = [];
    for (const [i, r] of replies.entries()) {
      if (!r.ok) throw new Error(`gradient worker ${i + 1}: ${r.error}`);
      const m = new Map<string, tf.Tensor>();
      let offset = 0;
      for (const [j, name] of this.names.entries()) {
        const size = this.shapes[j].reduce((a, b) => a * b, 1);
        m.set(name, tf.tensor(r.grads.subarray(offset, offset + size), this.shapes[j]));
        offset += size;
      }
      grads.push(m);
    }
    return { grads, losses: replies.map((r) => (r.ok ? r.loss : NaN)) };
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.terminate()));
  }
}

/** Worker side: a model replica; per job, load the weights, return the shard's gradient (flat, in `names` order). */
async function serve(): Promise<void> {
  const { config, names, shapes } = workerData as { config: ModelConfig; names: string[]; shapes: number[][] };
  try {
    const { initBackend } = await import('../../src/core/engine/backend.ts');
    await initBackend({ force: 'wasm' }); // also registers the gradients and wasm kernels the main thread uses
  } catch (e) {
    parentPort!.postMessage({ error: (e as Error).message });
    return;
  }
  const vars = new Map(names.map((n, j) => [n, tf.variable(tf.zeros(shapes[j]), true, n)]));
  const model = new CausalLM(config, vars as Map<string, tf.Tensor>);
  parentPort!.postMessage({ ready: true });
  parentPort!.on('message', (job: Job) => {
    try {
      let offset = 0;
      for (const [j, n] of names.entries()) {
        const size = shapes[j].reduce((a, b) => a * b, 1);
        tf.tidy(() => vars.get(n)!.assign(tf.tensor(job.weights.subarray(offset, offset + size), shapes[j])));
        offset += size;
      }
      const { value, grads } = tf.variableGrads(() => shardLoss(model, config, job.shard, job.count), [...vars.values()]);
      const out = new Float32Array(offset);
      offset = 0;
      for (const n of names) {
        const g = grads[n].dataSync() as Float32Array;
        out.set(g, offset);
        offset += g.length;
      }
      const loss = value.dataSync()[0];
      tf.dispose([value, ...Object.values(grads)]);
      parentPort!.postMessage({ ok: true, grads: out, loss } satisfies Reply, [out.buffer]);
    } catch (e) {
      parentPort!.postMessage({ ok: false, error: (e as Error).message } satisfies Reply);
    }
  });
}

if (!isMainThread && (workerData as { role?: string } | null)?.role === 'pretrain-gradients') void serve();
