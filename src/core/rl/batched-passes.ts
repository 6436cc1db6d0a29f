/**
 * The batched update's two passes over rows of several agents, each row through its own agent's
 * adapter (engine/lora/batched-adapter.ts): the log-probs of padded rows (no gradient), and a
 * micro-batch's PPO loss with every agent's gradient from one forward and one backward.
 *
 * The loss of agent k in a micro-batch is ppo.ts's, over its rows only and normalised by its own
 * mini-batch's action tokens:
 *   loss_k = -sum_{t in rows of k} min(ratio_t A_t, clip(ratio_t, 1 - eps, 1 + eps) A_t) / tokenCount_k
 * and the pass differentiates sum_k loss_k: agent k's variables reach only its rows, so the gradient
 * w.r.t. them is d(loss_k)/d(adapter k), what the per-agent pass gives.
 *
 * For: batched-update.ts (it builds the jobs) and compute/ (it runs them). Not for: per-agent passes (ppo.ts).
 *
 * Example: const [g] = await batchedGradient(model, { adapters: [a, b], rowAdapter: [0, 1, 1], batch, clipEps: 0.2, tokenCounts: [3, 5] });
 *          g.agents   // [0, 1]: g.losses[1] and g.grads[1] are agent b's part (its variables' gradients in `variables()` order)
 */
import * as tf from '@tensorflow/tfjs-core';
import type { LoraAdapter } from '../engine/lora/adapter.ts';
import { BatchedAdapter } from '../engine/lora/batched-adapter.ts';
import type { CausalLM } from '../engine/model/llama.ts';
import { rowLogProbs } from '../engine/model/score.ts';
import type { MicroBatch } from './batches.ts';

/** Log-probs at flat positions (b * (T-1) + t) of padded rows, row i under adapters[rowAdapter[i]]. */
export interface BatchedLogProbJob {
  adapters: LoraAdapter[];
  rowAdapter: number[];
  ids: number[][]; // [B, T]
  mask: number[][]; // [B, T]
  positions: number[];
  /** Each agent's rows run their common prefix once (update.sharedPrefix; engine/model/shared-prefix.ts). */
  sharePrefix?: boolean;
}

/** One micro-batch of several agents' rows: row i is agent rowAdapter[i]'s, normalised by tokenCounts[rowAdapter[i]]. */
export interface BatchedGradientJob {
  adapters: LoraAdapter[];
  rowAdapter: number[];
  batch: MicroBatch;
  clipEps: number;
  /** Per adapter: the action tokens of its mini-batch (what its part of the loss is divided by). */
  tokenCounts: number[];
  /** Each agent's rows run their common prefix once (update.sharedPrefix; engine/model/shared-prefix.ts). */
  sharePrefix?: boolean;
}

/** Per agent the micro-batch reached (indices into the job's adapters): its loss, gradient and side sums. */
export interface BatchedGradient {
  agents: number[];
  losses: number[];
  /** Per agent, one tensor per variable of its adapter in `variables()` order (the caller disposes). */
  grads: tf.Tensor[][];
  /** Per agent: sums over its action tokens [entropy, clipped tokens, k1 KL to the reference]. */
  sides: [number, number, number][];
}

/** The job's log-probs, no gradient. */
export async function batchedLogProbs(model: CausalLM, job: BatchedLogProbJob): Promise<Float32Array> {
  const view = BatchedAdapter.over(job.adapters, job.rowAdapter);
  const heads = job.sharePrefix ? prefixView(job.adapters, job.rowAdapter) : null;
  try {
    const { logp } = rowLogProbs(model, job.ids, job.positions, {
      attentionMask: job.mask, adapter: view, ...(heads ? { prefixGroups: job.rowAdapter, prefixAdapter: heads } : {}),
    });
    const host = (await logp.data()) as Float32Array;
    logp.dispose();
    return host;
  } finally {
    view.dispose();
    heads?.dispose();
  }
}

/** The view for the prefix rows of a shared-prefix pass: one row per agent, in order of first appearance. */
function prefixView(adapters: LoraAdapter[], rowAdapter: number[]): BatchedAdapter {
  return BatchedAdapter.over(adapters, [...new Set(rowAdapter)]);
}

/** sum_k loss_k (see the top comment) of the job's rows, with the per-agent losses [U] and side sums [U, 3] kept in `out`. */
function teamLoss(model: CausalLM, view: BatchedAdapter, job: BatchedGradientJob, out: tf.Tensor[], heads: BatchedAdapter | null): tf.Scalar {
  const b = job.batch;
  const width = b.actionMask[0].length;
  const rows: number[] = [];
  const agentOf: number[] = [];
  b.actionMask.forEach((row, r) => row.forEach((m, t) => {
    if (!m) return;
    rows.push(r * width + t);
    agentOf.push(view.rowIndex[r]);
  }));
  const at = (grid: number[][]) => tf.tensor1d(rows.map((k) => grid[Math.floor(k / width)][k % width]));
  const u = view.used.length;
  const seg = tf.tensor1d(agentOf, 'int32');
  const { logp, entropy } = rowLogProbs(model, b.ids, rows, {
    attentionMask: b.mask, adapter: view, train: true, withEntropy: true, ...(heads ? { prefixGroups: job.rowAdapter, prefixAdapter: heads } : {}),
  }); // [N]
  const adv = at(b.advantages);
  const ratio = tf.exp(tf.sub(logp, at(b.oldLogprobs)));
  const surr1 = tf.mul(ratio, adv);
  const surr2 = tf.mul(tf.clipByValue(ratio, 1 - job.clipEps, 1 + job.clipEps), adv);
  const counts = tf.tensor1d(view.usedIndex.map((k) => job.tokenCounts[k])); // [U]
  const losses = tf.div(tf.unsortedSegmentSum(tf.neg(tf.minimum(surr1, surr2)), seg, u), counts); // [U]
  out.push(tf.keep(losses));
  out.push(tf.keep(tf.stack([
    tf.unsortedSegmentSum(entropy!, seg, u),
    tf.unsortedSegmentSum(tf.cast(tf.greater(tf.abs(tf.sub(ratio, 1)), job.clipEps), 'float32'), seg, u),
    tf.unsortedSegmentSum(tf.sub(logp, at(b.refLogprobs)), seg, u),
  ], 1))); // [U, 3]
  return tf.sum(losses) as tf.Scalar;
}

/** Every reached agent's loss and gradient from one forward and one backward over the job's rows. */
export async function batchedGradient(model: CausalLM, job: BatchedGradientJob): Promise<BatchedGradient> {
  const view = BatchedAdapter.over(job.adapters, job.rowAdapter);
  const heads = job.sharePrefix ? prefixView(job.adapters, job.rowAdapter) : null;
  try {
    const vars = view.variables();
    const kept: tf.Tensor[] = [];
    const { value, grads } = tf.variableGrads(() => teamLoss(model, view, job, kept, heads), vars);
    const losses = Array.from(await kept[0].data());
    const side = await kept[1].data();
    tf.dispose([value, ...kept]);
    let at = 0;
    const perAgent = view.used.map((a) => {
      const own = a.variables().map((v) => grads[v.name]);
      at += own.length;
      return own;
    });
    if (at !== vars.length) throw new Error('batchedGradient: variables and adapters disagree');
    return {
      agents: view.usedIndex,
      losses,
      grads: perAgent,
      sides: view.used.map((_, k) => [side[3 * k], side[3 * k + 1], side[3 * k + 2]]),
    };
  } finally {
    view.dispose();
    heads?.dispose();
  }
}
