/**
 * Update lanes: extra threads, each with its own replica of the base model, that compute a share of
 * the policy update's micro-batches — the log-prob passes and the PPO gradients. The update stays
 * the single-thread one: every micro-batch is computed by the same code on the same inputs, and the
 * results are combined in micro-batch order, so a run with lanes gives the same adapters as a run
 * without them (exactly, on the same backend with LoRA dropout 0).
 *
 * For: `policyUpdate(..., lanes)` on a multi-core CPU, where tfjs-backend-wasm runs one thread
 * (Node; browsers without cross-origin isolation). The transport lives in the shells: worker
 * threads in the Node CLI (src/cli/train-workers.ts). Not for: webgpu (one device already).
 *
 * Example (main thread + 1 lane, 4 micro-batches of equal cost):
 *   shareJobs(jobs, cost, 1, local, remote)  ->  jobs 0 and 2 here, 1 and 3 on lane 1, results in job order
 */
import * as tf from '@tensorflow/tfjs-core';
import { LoraAdapter, type LoraSettings } from '../engine/lora/adapter.ts';
import type { CausalLM } from '../engine/model/llama.ts';
import { rowLogProbs } from '../engine/model/score.ts';

/** An adapter as plain data: its settings and every variable's values, concatenated in `variables()` order. */
export interface AdapterSpec {
  name: string;
  settings: LoraSettings;
  values: Float32Array;
}

/** The right-padded rows of one micro-batch, as plain arrays (update.ts trains on it; a lane gets it as is). */
export interface LaneBatch {
  ids: number[][]; // [B, T]
  mask: number[][]; // [B, T]
  /** [B, T-1] 1 where the log-prob is of an action token (and the action is not truncated). */
  actionMask: number[][];
  /** [B, T-1] advantage at action positions, 0 elsewhere. */
  advantages: number[][];
  /** [B, T-1] old log-prob at action positions. */
  oldLogprobs: number[][];
  /** [B, T-1] reference-model log-prob at action positions. */
  refLogprobs: number[][];
}

export type LaneJob =
  /** Log-probs at flat positions (b * (T-1) + t) under the adapter, or the reference when null. */
  | { kind: 'logprobs'; adapter: AdapterSpec | null; ids: number[][]; mask: number[][]; positions: number[] }
  /** The PPO loss of one micro-batch and its gradient w.r.t. the adapter, with side sums [entropy, clipped, kl]. */
  | { kind: 'gradients'; adapter: AdapterSpec; batch: LaneBatch; clipEps: number; tokenCount: number };

export type LaneResult =
  | { kind: 'logprobs'; logp: Float32Array }
  | { kind: 'gradients'; loss: number; grads: Float32Array; side: [number, number, number] };

/** Extra compute lanes, numbered 1..count (lane 0 is the calling thread). */
export interface UpdateLanes {
  readonly count: number;
  run(lane: number, job: LaneJob): Promise<LaneResult>;
  close(): Promise<void>;
}

/** The PPO loss of a micro-batch; update.ts provides it (kept there, next to its maths). */
export type PpoLossFn = (model: CausalLM, adapter: LoraAdapter, b: LaneBatch, clipEps: number, tokenCount: number, side?: tf.Tensor1D[]) => tf.Scalar;

/** Every variable of the adapter, concatenated in `variables()` order. */
export function flattenAdapter(adapter: LoraAdapter): AdapterSpec {
  const parts = adapter.variables().map((v) => v.dataSync() as Float32Array);
  const values = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    values.set(p, at);
    at += p.length;
  }
  return { name: adapter.name, settings: adapter.settings, values };
}

/** Splits a flat array back into tensors shaped like `vars` (the caller disposes them). */
export function unflatten(flat: Float32Array, vars: tf.Variable[]): tf.Tensor[] {
  let at = 0;
  return vars.map((v) => {
    const t = tf.tensor(flat.subarray(at, at + v.size), v.shape);
    at += v.size;
    return t;
  });
}

/** Sets the adapter's variables to the spec's values (shapes must match); returns the adapter. */
export function assignSpec(adapter: LoraAdapter, spec: AdapterSpec): LoraAdapter {
  const vars = adapter.variables();
  const size = vars.reduce((n, v) => n + v.size, 0);
  if (size !== spec.values.length) throw new Error(`adapter "${spec.name}" has ${spec.values.length} values, expected ${size}`);
  const parts = unflatten(spec.values, vars);
  vars.forEach((v, i) => v.assign(parts[i]));
  tf.dispose(parts);
  return adapter;
}

/**
 * The lane side: runs jobs on this thread's model replica. Adapters are kept by name and
 * overwritten with each job's values, so a lane holds no state between updates that matters.
 */
export class LaneServer {
  private readonly adapters = new Map<string, LoraAdapter>();

  constructor(private readonly model: CausalLM, private readonly ppoLoss: PpoLossFn) {}

  private adapter(spec: AdapterSpec): LoraAdapter {
    let a = this.adapters.get(spec.name);
    if (!a || JSON.stringify(a.settings) !== JSON.stringify(spec.settings)) {
      a?.dispose();
      a = LoraAdapter.create(this.model.config, spec.settings, spec.name);
      this.adapters.set(spec.name, a);
    }
    return assignSpec(a, spec);
  }

  async handle(job: LaneJob): Promise<LaneResult> {
    if (job.kind === 'logprobs') {
      const adapter = job.adapter ? this.adapter(job.adapter) : null;
      const { logp } = rowLogProbs(this.model, job.ids, job.positions, { attentionMask: job.mask, adapter });
      const out = (await logp.data()) as Float32Array;
      logp.dispose();
      return { kind: 'logprobs', logp: out };
    }
    const adapter = this.adapter(job.adapter);
    const vars = adapter.variables();
    const side: tf.Tensor1D[] = [];
    const { value, grads } = tf.variableGrads(() => this.ppoLoss(this.model, adapter, job.batch, job.clipEps, job.tokenCount, side), vars);
    const loss = (await value.data())[0];
    const flat = new Float32Array(vars.reduce((n, v) => n + v.size, 0));
    let at = 0;
    for (const v of vars) {
      const g = (await grads[v.name].data()) as Float32Array;
      flat.set(g, at);
      at += g.length;
    }
    const sums = Array.from(await side[0].data()) as [number, number, number];
    tf.dispose([value, ...Object.values(grads), ...side]);
    return { kind: 'gradients', loss, grads: flat, side: sums };
  }

  dispose(): void {
    for (const a of this.adapters.values()) a.dispose();
    this.adapters.clear();
  }
}

/**
 * Runs `jobs` over this thread and `laneCount` lanes and returns their results in job order. Jobs
 * go, in order, to whichever lane has the least cost so far (this thread first on ties); a lane's
 * jobs are posted before this thread starts its own. If a lane fails, its jobs are computed here
 * and `onLaneError` is told once, so an update never loses work to a dead thread.
 *
 * Example: costs [4, 4, 4, 4], 1 lane -> this thread runs jobs 0 and 2, lane 1 runs 1 and 3.
 */
export async function shareJobs<J, R>(jobs: J[], cost: (j: J) => number, laneCount: number,
  local: (j: J) => Promise<R>, remote: (lane: number, j: J) => Promise<R>, onLaneError?: (e: Error) => void): Promise<R[]> {
  const load = new Array(laneCount + 1).fill(0);
  const owner = jobs.map((j) => {
    let best = 0;
    for (let l = 1; l < load.length; l++) if (load[l] < load[best]) best = l;
    load[best] += cost(j);
    return best;
  });
  const results: R[] = new Array(jobs.length);
  const failed: number[] = [];
  let reported = false;
  const pending = jobs.map((j, i) => owner[i] === 0 ? null : remote(owner[i], j).then((r) => { results[i] = r; }, (e: Error) => {
    failed.push(i);
    if (!reported) {
      reported = true;
      onLaneError?.(e);
    }
  }));
  for (let i = 0; i < jobs.length; i++) if (owner[i] === 0) results[i] = await local(jobs[i]);
  await Promise.all(pending);
  for (const i of failed.sort((a, b) => a - b)) results[i] = await local(jobs[i]);
  return results;
}
