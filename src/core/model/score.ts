/**
 * Scoring: the log-probability of every next token of a batch of sequences — what the trainer
 * needs for the policy, the sampling policy and the reference (adapter off).
 *
 * For: `tokenLogProbs` (differentiable, inside a gradient tape) and `scoreSequences` (host arrays).
 * Not for: generation (generate.ts).
 *
 * Example: ids [[1, 10, 12]] -> [[log p(10 | 1), log p(12 | 1 10)]], shape [B, T-1].
 * Rows may be padded on either side; masked positions get log-prob 0.
 */
import * as tf from '@tensorflow/tfjs-core';
import { selectedLogProbs } from '../kernels/logprob.ts';
import type { AdapterView, CausalLM } from './llama.ts';

export interface ScoreOptions {
  /** [B][T] 1 for real tokens, 0 for padding; default all ones. */
  attentionMask?: number[][];
  adapter?: AdapterView | null;
  train?: boolean;
}

/** Differentiable log p(ids[:, t+1] | ids[:, :t+1]) as a tensor [B, T-1] (0 where the target is padding). */
export function tokenLogProbs(model: CausalLM, ids: number[][], opts: ScoreOptions = {}): tf.Tensor2D {
  const batch = ids.length;
  const steps = ids[0].length;
  if (steps < 2) throw new Error('tokenLogProbs: sequences need at least 2 tokens');
  return tf.tidy(() => {
    const { logits } = model.forward(ids, { attentionMask: opts.attentionMask, adapter: opts.adapter, train: opts.train });
    const vocab = logits.shape[2];
    const inputs = tf.reshape(tf.slice(logits, [0, 0, 0], [batch, steps - 1, vocab]), [batch * (steps - 1), vocab]) as tf.Tensor2D;
    const targets = tf.tensor1d(ids.flatMap((r) => r.slice(1)), 'int32');
    let lp = tf.reshape(selectedLogProbs(inputs, targets), [batch, steps - 1]) as tf.Tensor2D;
    if (opts.attentionMask) {
      const m = tf.tensor2d(opts.attentionMask.map((r) => r.slice(1)), [batch, steps - 1], 'float32');
      lp = tf.mul(lp, m);
    }
    return lp;
  });
}

/** Host-side scores [B][T-1] (no gradient). */
export async function scoreSequences(model: CausalLM, ids: number[][], opts: ScoreOptions = {}): Promise<number[][]> {
  const lp = tokenLogProbs(model, ids, opts);
  try {
    return (await lp.array()) as number[][];
  } finally {
    lp.dispose();
  }
}
