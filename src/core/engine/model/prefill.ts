/**
 * The prefill of a batch of prompts with the work the rows share done once: a prompt that appears
 * several times (two samples of one task) runs once, and the longest prefix common to every
 * distinct prompt (an agent's system prompt and the chat template's header) runs once for one row,
 * its keys and values copied to each row before the rest of each prompt runs.
 *
 * Why: a rollout batch is 16-24 rows, half of them twins in the first agent's turn, and every row
 * of an agent starts with the same ~100-token system prompt: a plain left-padded prefill computes
 * all of it once per row. The result is the same cache and logits up to float rounding (the
 * cache holds the rows' padding between the shared prefix and each suffix instead of before the
 * prompt; masked slots add exact zeros, and position ids skip them either way).
 *
 *   plain:   rows [B, T] left-padded                               -> B x T tokens through the model
 *   shared:  prefix [1, P] once, copied to U distinct rows, then    -> P + U x (T' ) tokens, T' = longest suffix
 *            suffixes [U, T'] left-padded on that cache; rows picked back to B
 *
 * For: generate() (the first step of a cached generation). Not for: training forwards (they need
 * every position's hidden state) or generation without a cache.
 *
 * Example: prompts [[1, 5, 6, 7], [1, 5, 6, 8], [1, 5, 6, 7]]
 *   -> distinct [[1,5,6,7], [1,5,6,8]], order [0, 1, 0]; shared prefix [1, 5, 6] (3 tokens);
 *      suffixes [[7], [8]]; 3 + 2 tokens run instead of 12; the cache and logits come back for 3 rows.
 */
import { type AdapterView, type CausalLM, type KVCache, disposeCache, selectCacheRows } from './llama.ts';

/** Left-pad rows to one length. Example: [[5], [6, 7]] -> ids [[0, 5], [6, 7]], mask [[0, 1], [1, 1]]. */
export function leftPad(rows: number[][], padId = 0): { ids: number[][]; mask: number[][] } {
  const width = Math.max(...rows.map((r) => r.length));
  return {
    ids: rows.map((r) => [...new Array(width - r.length).fill(padId), ...r]),
    mask: rows.map((r) => [...new Array(width - r.length).fill(0), ...r.map(() => 1)]),
  };
}

/** A shared prefix shorter than this is not worth its extra forward call. */
const MIN_SHARED_PREFIX = 8;

export interface PrefillPlan {
  /** The distinct prompts, in order of first appearance. */
  distinct: number[][];
  /** For each row, the index of its prompt in `distinct`. */
  order: number[];
  /** Tokens run once for all rows (0 = none shared). */
  prefix: number;
}

/** Which prompts are the same and what prefix all share (at least one token of each is left to run after it). */
export function planPrefill(prompts: number[][], minPrefix = MIN_SHARED_PREFIX): PrefillPlan {
  const index = new Map<string, number>();
  const distinct: number[][] = [];
  const order = prompts.map((p) => {
    const key = p.join(',');
    let i = index.get(key);
    if (i === undefined) {
      i = distinct.length;
      index.set(key, i);
      distinct.push(p);
    }
    return i;
  });
  let prefix = Math.min(...distinct.map((p) => p.length)) - 1;
  for (let t = 0; t < prefix; t++) {
    const id = distinct[0][t];
    if (distinct.some((p) => p[t] !== id)) prefix = t;
  }
  return { distinct, order, prefix: distinct.length > 1 && prefix >= minPrefix ? prefix : 0 };
}

/**
 * Run the prompts' prefill with the shared work done once; returns the cache for every row (in the
 * given order) and the logits of each row's last prompt token, Float32Array [B * V].
 */
export async function sharedPrefill(model: CausalLM, prompts: number[][], adapter: AdapterView | null | undefined,
  minPrefix = MIN_SHARED_PREFIX): Promise<{ cache: KVCache; logits: Float32Array }> {
  const { cache, logits, order } = await distinctPrefill(model, prompts, adapter, minPrefix);
  return { cache: order ? selectCacheRows(cache, order) : cache, logits };
}

/**
 * The same, with the cache left at one row per distinct prompt: `order` (null when every prompt is
 * distinct) gives each row's cache row, for whoever copies the cache next (the fused decoder) to
 * expand it in that copy rather than in a gather of its own.
 */
export async function distinctPrefill(model: CausalLM, prompts: number[][], adapter: AdapterView | null | undefined,
  minPrefix = MIN_SHARED_PREFIX): Promise<{ cache: KVCache; logits: Float32Array; order: number[] | null }> {
  const plan = planPrefill(prompts, minPrefix);
  let past: KVCache | null = null;
  let rows = plan.distinct;
  if (plan.prefix > 0) {
    const head = model.forward([rows[0].slice(0, plan.prefix)], { useCache: true, lastOnly: true, adapter });
    head.logits.dispose();
    past = selectCacheRows(head.cache!, rows.map(() => 0)); // disposes the one-row cache
    rows = rows.map((p) => p.slice(plan.prefix));
  }
  const { ids, mask } = leftPad(rows);
  let out;
  try {
    out = model.forward(ids, { attentionMask: mask, cache: past, useCache: true, lastOnly: true, adapter });
  } catch (e) {
    if (past) disposeCache(past);
    throw e;
  }
  const distinctLogits = (await out.logits.data()) as Float32Array; // [U, 1, V]
  out.logits.dispose();
  const cache = out.cache!;
  if (plan.distinct.length === prompts.length) return { cache, logits: distinctLogits, order: null };
  const V = model.config.vocabSize;
  const logits = new Float32Array(prompts.length * V);
  plan.order.forEach((u, r) => logits.set(distinctLogits.subarray(u * V, (u + 1) * V), r * V));
  return { cache, logits, order: plan.order };
}
