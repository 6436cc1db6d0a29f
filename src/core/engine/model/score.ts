/**
 * Scoring: the log-probability of chosen next tokens — what the trainer needs for the policy, the
 * sampling policy and the reference (adapter off).
 *
 * For: `rowLogProbs` (differentiable, only at the positions asked for, chunked over rows so no
 * [rows, vocab] logits block outgrows a GPU binding), `tokenLogProbs` (the whole [B, T-1] grid) and
 * `scoreSequences` (host arrays). Not for: generation (generate.ts).
 *
 * Position (b, t) predicts ids[b][t+1]; its flat row index is b * (T-1) + t.
 * Example: ids [[1, 10, 12]] -> tokenLogProbs = [[log p(10 | 1), log p(12 | 1 10)]], shape [B, T-1].
 * Rows may be padded on either side; masked targets get log-prob 0 in the full grid.
 */
import * as tf from '@tensorflow/tfjs-core';
import { selectedLogProbs } from '../kernels/logprob.ts';
import { keptIndex } from './kept-rows.ts';
import type { AdapterView, CausalLM } from './llama.ts';
import { planSharedPrefix, sharedHiddenRows } from './shared-prefix.ts';

export interface ScoreOptions {
  /** [B][T] 1 for real tokens, 0 for padding; default all ones. */
  attentionMask?: number[][];
  adapter?: AdapterView | null;
  train?: boolean;
  /** Largest [rows, vocab] float32 logits block computed at once (default 64 MiB). */
  maxLogitBytes?: number;
  /**
   * Per row, a group label (e.g. its agent): rows of a group run their common prefix once
   * (shared-prefix.ts), the same numbers to float rounding; absent, every row runs whole.
   */
  prefixGroups?: number[];
  /** The adapter of the prefix rows, one per group in order of first appearance (default: `adapter`). */
  prefixAdapter?: AdapterView | null;
  /**
   * Rows equal in ids, mask and group run once, their log-probs copied back by a gather (whose gradient
   * sums the copies): the same numbers to float rounding (a relay agent's 64 samples hold ~20 % repeats).
   * Not with an adapter view that names rows (batched-adapter.ts): its rows would no longer line up.
   */
  uniqueRows?: boolean;
}

/**
 * The distinct rows of a batch (equal ids, mask and group label are one row), in order of first
 * appearance, with the asked positions mapped onto them; null when every row is distinct.
 * Example: ids [[1, 2], [3, 4], [1, 2]], rows [0, 1, 2] -> ids [[1, 2], [3, 4]], rows [0, 1], back [0, 1, 0].
 */
export function distinctRows(ids: number[][], mask: number[][] | undefined, groups: number[] | undefined, rows: number[]):
  { keep: number[]; rows: number[]; back: number[] } | null {
  const width = ids[0].length - 1;
  const kept = firstOf(ids.map((row, b) => `${groups ? groups[b] : 0}|${row.join(',')}|${mask ? mask[b].join('') : ''}`));
  if (kept.firsts.length === ids.length) return null;
  const flat = rows.map((r) => kept.index[Math.floor(r / width)] * width + (r % width)); // each position on its kept row
  const asked = firstOf(flat);
  return { keep: kept.firsts, rows: asked.firsts.map((i) => flat[i]), back: asked.index };
}

/** Each key's index among the distinct keys (in order of first appearance), and where each distinct key first stands. */
function firstOf<K>(keys: K[]): { index: number[]; firsts: number[] } {
  const seen = new Map<K, number>();
  const firsts: number[] = [];
  const index = keys.map((k, i) => {
    let u = seen.get(k);
    if (u === undefined) {
      u = firsts.length;
      seen.set(k, u);
      firsts.push(i);
    }
    return u;
  });
  return { index, firsts };
}

/**
 * log p of the next token at the given flat positions: [N], plus the full-distribution entropy at
 * those positions when asked (kept out of nothing: callers use it for metrics only).
 */
export function rowLogProbs(model: CausalLM, ids: number[][], rows: number[], opts: ScoreOptions & { withEntropy?: boolean } = {}):
  { logp: tf.Tensor1D; entropy?: tf.Tensor1D } {
  const batch = ids.length;
  const steps = ids[0].length;
  if (steps < 2) throw new Error('rowLogProbs: sequences need at least 2 tokens');
  const distinct = opts.uniqueRows ? distinctRows(ids, opts.attentionMask, opts.prefixGroups, rows) : null;
  if (distinct) {
    const pick = <T>(xs: T[] | undefined) => xs && distinct.keep.map((b) => xs[b]);
    return tf.tidy(() => {
      const once = rowLogProbs(model, pick(ids)!, distinct.rows,
        { ...opts, uniqueRows: false, attentionMask: pick(opts.attentionMask), prefixGroups: pick(opts.prefixGroups) });
      const back = tf.tensor1d(distinct.back, 'int32');
      const logp = tf.gather(once.logp, back) as tf.Tensor1D; // [N]
      return once.entropy ? { logp, entropy: tf.gather(once.entropy, back) as tf.Tensor1D } : { logp };
    });
  }
  const vocab = model.config.vocabSize;
  const chunkRows = Math.max(1, Math.floor((opts.maxLogitBytes ?? 64 << 20) / (vocab * 4)));
  const plan = opts.prefixGroups ? planSharedPrefix(ids, opts.attentionMask, rows, opts.prefixGroups) : null;
  return tf.tidy(() => {
    const targets = rows.map((r) => ids[Math.floor(r / (steps - 1))][(r % (steps - 1)) + 1]);
    let picked: tf.Tensor2D; // [N, H]
    if (plan) {
      picked = sharedHiddenRows(model, ids, opts.attentionMask, rows, plan,
        { adapter: opts.adapter, prefixAdapter: opts.prefixAdapter === undefined ? opts.adapter : opts.prefixAdapter, train: opts.train });
    } else {
      const hiddenRows = rows.map((r) => Math.floor(r / (steps - 1)) * steps + (r % (steps - 1)));
      const { keep, at } = keptIndex(hiddenRows, batch, steps);
      const { hidden } = model.hiddenStates(ids, { attentionMask: opts.attentionMask, adapter: opts.adapter, train: opts.train, keep }); // [B, m, H]
      const flat = tf.reshape(hidden, [-1, model.config.hiddenSize]) as tf.Tensor2D; // [B*m, H]
      picked = tf.gather(flat, tf.tensor1d(at, 'int32')) as tf.Tensor2D;
    }
    const logps: tf.Tensor1D[] = [];
    const entropies: tf.Tensor1D[] = [];
    for (let start = 0; start < rows.length; start += chunkRows) {
      const n = Math.min(chunkRows, rows.length - start);
      const logits = model.project(tf.slice(picked, [start, 0], [n, -1])); // [n, V]
      logps.push(selectedLogProbs(logits, tf.tensor1d(targets.slice(start, start + n), 'int32')));
      if (opts.withEntropy) {
        entropies.push(tf.sub(tf.logSumExp(logits, -1), tf.sum(tf.mul(tf.softmax(logits), logits), -1)) as tf.Tensor1D);
      }
    }
    const logp = logps.length === 1 ? logps[0] : (tf.concat(logps) as tf.Tensor1D);
    if (!opts.withEntropy) return { logp };
    return { logp, entropy: entropies.length === 1 ? entropies[0] : (tf.concat(entropies) as tf.Tensor1D) };
  });
}

/** Differentiable log p(ids[:, t+1] | ids[:, :t+1]) as a tensor [B, T-1] (0 where the target is padding). */
function tokenLogProbs(model: CausalLM, ids: number[][], opts: ScoreOptions = {}): tf.Tensor2D {
  const batch = ids.length;
  const steps = ids[0].length;
  const all = Array.from({ length: batch * (steps - 1) }, (_, i) => i);
  return tf.tidy(() => {
    let lp = tf.reshape(rowLogProbs(model, ids, all, opts).logp, [batch, steps - 1]) as tf.Tensor2D;
    if (opts.attentionMask) lp = tf.mul(lp, tf.tensor2d(opts.attentionMask.map((r) => r.slice(1)), [batch, steps - 1], 'float32'));
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
