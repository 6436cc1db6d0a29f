/**
 * The PPO-clipped policy loss of one micro-batch (MAPPA section 4), over the action tokens only:
 *
 *   ratio_t = exp(logp_t - old_t),  loss = -sum_t min(ratio_t * A_t, clip(ratio_t, 1 - eps, 1 + eps) * A_t) / tokenCount
 *
 * normalised by `tokenCount`, the action tokens of the whole mini-batch, so that summing the
 * micro-batches' gradients gives the mini-batch's. Side metrics (entropy, clipped tokens, k1 KL to the
 * reference), summed, not normalised, are kept out of the gradient path.
 *
 * For: `ppoLoss` and `ppoGradient`, the loss of one micro-batch and its gradient w.r.t. the adapter
 * (update.ts asks for them through its `Gradients` interface and sums the parts).
 * Not for: advantages (advantages.ts) or the optimizer step (update.ts, adamw.ts).
 *
 * Example: one action token, A = 1, old logp = logp (ratio 1): loss = -1 / tokenCount; with
 *          ratio 1.5 and eps 0.2 the clipped term 1.2 * A is the smaller, loss = -1.2 / tokenCount.
 *          const g = await ppoGradient(model, adapter, { batch, clipEps: 0.2, tokenCount: 1 });  // g.loss -1, g.grads[k] d(loss)/d(variable k)
 */
import * as tf from '@tensorflow/tfjs-core';
import type { LoraAdapter } from '../engine/lora/adapter.ts';
import type { CausalLM } from '../engine/model/llama.ts';
import { ENGINE_PATHS } from '../engine/paths.ts';
import { rowLogProbs } from '../engine/model/score.ts';
import type { MicroBatch } from './batches.ts';

/** One micro-batch's PPO loss, normalised by `tokenCount` (the mini-batch's action tokens). */
export interface GradientJob {
  batch: MicroBatch;
  clipEps: number;
  tokenCount: number;
  /** The rows' common prefix run once (update.sharedPrefix; engine/model/shared-prefix.ts): the same loss to float rounding. */
  sharePrefix?: boolean;
}

/** A micro-batch's loss, gradient (one tensor per adapter variable, in `variables()` order; the caller disposes) and side sums. */
export interface Gradient {
  loss: number;
  grads: tf.Tensor[];
  /** Sums over the micro-batch's action tokens: [entropy, clipped tokens, k1 KL to the reference]. */
  side: [number, number, number];
}

export function ppoLoss(model: CausalLM, adapter: LoraAdapter, b: MicroBatch, clipEps: number, tokenCount: number,
  side?: tf.Tensor1D[], sharePrefix = false): tf.Scalar {
  // Only positions that predict an action token are projected to the vocabulary.
  const rows: number[] = [];
  b.actionMask.forEach((row, r) => row.forEach((m, t) => m && rows.push(r * row.length + t)));
  const at = (grid: number[][]) => tf.tensor1d(rows.map((k) => grid[Math.floor(k / grid[0].length)][k % grid[0].length]));
  const prefixGroups = sharePrefix ? b.ids.map(() => 0) : undefined;
  // Repeated samples (same prompt and action) run once: their log-probs are copied, their gradients summed.
  const { logp, entropy } = rowLogProbs(model, b.ids, rows, {
    attentionMask: b.mask, adapter, train: true, withEntropy: !!side, prefixGroups, uniqueRows: ENGINE_PATHS.uniqueRows,
  }); // [N]
  const adv = at(b.advantages);
  const ratio = tf.exp(tf.sub(logp, at(b.oldLogprobs)));
  const surr1 = tf.mul(ratio, adv);
  const surr2 = tf.mul(tf.clipByValue(ratio, 1 - clipEps, 1 + clipEps), adv);
  const loss = tf.div(tf.sum(tf.neg(tf.minimum(surr1, surr2))), tokenCount) as tf.Scalar;
  if (side) {
    // Entropy of the full next-token distribution, clip indicator and k1 KL to the reference (metrics only).
    // Kept past the gradient tape's cleanup; read asynchronously by the caller ([entropy, clipped, kl] sums).
    side.push(tf.keep(tf.stack([
      tf.sum(entropy!),
      tf.sum(tf.cast(tf.greater(tf.abs(tf.sub(ratio, 1)), clipEps), 'float32')),
      tf.sum(tf.sub(logp, at(b.refLogprobs))),
    ]) as tf.Tensor1D));
  }
  return loss;
}

/** The loss of `job` and its gradient w.r.t. every variable of `adapter`, with the side sums read back. */
export async function ppoGradient(model: CausalLM, adapter: LoraAdapter, job: GradientJob): Promise<Gradient> {
  const vars = adapter.variables();
  const sideOut: tf.Tensor1D[] = [];
  const { value, grads } = tf.variableGrads(() => ppoLoss(model, adapter, job.batch, job.clipEps, job.tokenCount, sideOut, job.sharePrefix), vars);
  const loss = (await value.data())[0];
  const side = Array.from(await sideOut[0].data()) as [number, number, number];
  tf.dispose([value, ...sideOut]);
  return { loss, grads: vars.map((v) => grads[v.name]), side };
}
