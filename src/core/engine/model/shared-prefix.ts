/**
 * The training forward with the work rows share done once: rows of one group (one agent's samples:
 * its system prompt and the chat template's header, ~28 of a relay row's ~38 tokens) run their
 * longest common prefix once, for one row, and each row runs only its own suffix on a copy of that
 * prefix's keys and values. Differentiable: the gradient of every row reaches the prefix through the
 * copied keys and values, so an adapter's gradient is the full forward's to float rounding.
 *
 *   plain:   rows [B, T] right-padded                          -> B x T tokens through the model
 *   shared:  prefixes [G, P] once (one per group), K/V copied  -> G x P + B x T' tokens, T' = T - shortest prefix
 *            to the B rows, then suffixes [B, T'] on that cache
 *
 * A row's prefix stops before the first position asked for (position t predicts token t+1, so its
 * hidden state must be computed in the suffix). The cache holds each group's padding between its
 * prefix and the rows' suffixes; masked slots add exact zeros and position ids skip them (as in
 * prefill.ts, the decoding side of the same idea).
 *
 * For: rowLogProbs (score.ts) when given `prefixGroups`: the update's log-prob and gradient passes.
 * Not for: decoding (prefill.ts) or rows without a common prefix (planSharedPrefix says null).
 *
 * Example: ids [[1, 5, 6, 7, 9], [1, 5, 6, 8, 9]], groups [0, 0], asked positions 3 and 8 (row 0 t=3, row 1 t=3)
 *   -> prefix [1, 5, 6] once (P = 3), suffixes [[7, 9], [8, 9]]: 3 + 4 tokens run instead of 10.
 */
import * as tf from '@tensorflow/tfjs-core';
import { keptIndex } from './kept-rows.ts';
import type { AdapterView, CausalLM, KVCache } from './llama.ts';

/** A prefix shorter than this is not worth its extra forward call. */
const MIN_TRAIN_PREFIX = 4;

export interface SharedPrefixPlan {
  /** Per row, its group's index (0..G-1, in order of first appearance). */
  group: number[];
  /** Per group, the tokens its rows share and run once. */
  prefix: number[];
  /** Per group, a row of it (whose first `prefix` tokens are the group's). */
  first: number[];
}

/**
 * Which tokens each group of rows shares: the longest common prefix of the group's real tokens, cut
 * before the first asked position of the group. Null when some group would share fewer than
 * `minPrefix` tokens (the plain forward is then run).
 * `rows` are flat positions b * (T-1) + t; `groupOf[b]` any label of row b (e.g. its adapter index).
 */
export function planSharedPrefix(ids: number[][], mask: number[][] | undefined, rows: number[], groupOf: number[],
  minPrefix = MIN_TRAIN_PREFIX): SharedPrefixPlan | null {
  const steps = ids[0].length;
  if (groupOf.length !== ids.length) throw new Error(`planSharedPrefix: ${groupOf.length} group labels for ${ids.length} rows`);
  const index = new Map<number, number>();
  const group = groupOf.map((label) => {
    if (!index.has(label)) index.set(label, index.size);
    return index.get(label)!;
  });
  const g = index.size;
  const first = new Array<number>(g).fill(-1);
  const prefix = new Array<number>(g).fill(steps);
  group.forEach((k, b) => {
    const real = mask ? mask[b].reduce((n, m) => n + (m ? 1 : 0), 0) : steps;
    if (mask && mask[b].slice(0, real).some((m) => !m)) throw new Error('planSharedPrefix: rows must be right-padded');
    if (first[k] < 0) {
      first[k] = b;
      prefix[k] = real;
      return;
    }
    const a = ids[first[k]];
    let p = 0;
    const limit = Math.min(prefix[k], real);
    while (p < limit && a[p] === ids[b][p]) p++;
    prefix[k] = p;
  });
  for (const r of rows) {
    const b = Math.floor(r / (steps - 1));
    const t = r % (steps - 1);
    prefix[group[b]] = Math.min(prefix[group[b]], t);
  }
  if (prefix.some((p) => p < minPrefix)) return null;
  return { group, prefix, first };
}

/**
 * Final hidden states [N, H] at the asked flat positions `rows`, the prefixes run once per group
 * (see the top comment). `prefixAdapter` serves the prefix rows (one per group); `adapter` the B rows.
 */
export function sharedHiddenRows(model: CausalLM, ids: number[][], mask: number[][] | undefined, rows: number[], plan: SharedPrefixPlan,
  opts: { adapter?: AdapterView | null; prefixAdapter?: AdapterView | null; train?: boolean }): tf.Tensor2D {
  const steps = ids[0].length;
  const longest = Math.max(...plan.prefix);
  const shortest = Math.min(...plan.prefix);
  const heads = plan.first.map((b, k) => [...ids[b].slice(0, plan.prefix[k]), ...new Array(longest - plan.prefix[k]).fill(0)]);
  const headMask = plan.prefix.map((p) => [...new Array(p).fill(1), ...new Array(longest - p).fill(0)]);
  return tf.tidy(() => {
    // Nothing reads the prefix rows' hidden states: their last layer runs its keys and values (keep none).
    const head = model.hiddenStates(heads,
      { attentionMask: headMask, useCache: true, adapter: opts.prefixAdapter, train: opts.train, keep: heads.map(() => []) });
    head.hidden.dispose();
    const past = head.cache!; // [G, nkv, longest, hd] per layer
    const idx = tf.tensor1d(plan.group, 'int32');
    const b = ids.length;
    const cacheMask = new Uint8Array(b * longest);
    const nextPosition = new Int32Array(b);
    plan.group.forEach((k, r) => {
      cacheMask.set(past.mask.subarray(k * longest, (k + 1) * longest), r * longest);
      nextPosition[r] = past.nextPosition[k];
    });
    const cache: KVCache = {
      layers: past.layers.map(({ k, v }) => ({ k: tf.gather(k, idx) as tf.Tensor4D, v: tf.gather(v, idx) as tf.Tensor4D })),
      mask: cacheMask, batch: b, length: longest, nextPosition,
    };
    const width = steps - shortest; // T'
    const tails = ids.map((row, r) => {
      const p = plan.prefix[plan.group[r]];
      return [...row.slice(p), ...new Array(p - shortest).fill(0)];
    });
    const tailMask = ids.map((row, r) => {
      const p = plan.prefix[plan.group[r]];
      const m = mask ? mask[r].slice(p) : new Array(steps - p).fill(1);
      return [...m, ...new Array(p - shortest).fill(0)];
    });
    const tailRows = rows.map((r) => {
      const row = Math.floor(r / (steps - 1));
      return row * width + (r % (steps - 1)) - plan.prefix[plan.group[row]];
    });
    const { keep, at } = keptIndex(tailRows, b, width);
    const { hidden } = model.hiddenStates(tails, { attentionMask: tailMask, cache, adapter: opts.adapter, train: opts.train, keep }); // [B, m, H]
    const flat = tf.reshape(hidden, [-1, model.config.hiddenSize]);
    return tf.gather(flat, tf.tensor1d(at, 'int32')) as tf.Tensor2D; // [N, H]
  });
}
