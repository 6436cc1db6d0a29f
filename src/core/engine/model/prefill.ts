/**
 * The prefill of a batch of prompts with the work the rows share done once: a prompt that appears
 * several times (two samples of one task) runs once, and prompts that start alike are run in groups
 * (planPrefill): each group's shared prefix runs once, in one batch of heads, its keys and values
 * copied to each of its rows before the rest of each prompt runs.
 *
 * Why: a rollout batch's rows of one agent start with the same system prompt and chat header; a
 * judge's batch of 64 prompts reads "Relay agent 17 replied "3". <the agent's prompt>", ~45 tokens
 * shared by the rows with the same agent and reply. A plain left-padded prefill computes all of it
 * once per row. The result is the same cache and logits up to float rounding (the cache holds each
 * row's padding between its group's prefix and its suffix instead of before the prompt; masked slots
 * add exact zeros, and position ids skip them either way).
 *
 *   plain:   rows [B, T] left-padded                            -> B x T tokens through the model
 *   grouped: heads [G, P] left-padded once, copied to the U      -> G x P + U x T' tokens, T' = longest suffix
 *            distinct rows, then suffixes [U, T'] left-padded
 *            on that cache; rows picked back to B
 *
 * For: generate() (the first step of a cached generation). Not for: training forwards (they need
 * every position's hidden state: shared-prefix.ts) or generation without a cache.
 *
 * Example: prompts [[1, 5, 6, 7], [1, 5, 6, 8], [1, 5, 6, 7]], minPrefix 2
 *   -> distinct [[1,5,6,7], [1,5,6,8]], order [0, 1, 0]; one group sharing [1, 5, 6] (3 tokens);
 *      suffixes [[7], [8]]; 3 + 2 tokens run instead of 12; the cache and logits come back for 3 rows.
 */
import { ENGINE_PATHS } from '../paths.ts';
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
  /** For each distinct prompt, its group (empty when nothing is shared). */
  groups: number[];
  /** For each group, the tokens its prompts share and run once (at least one token of each prompt is left after it). */
  prefixes: number[];
}

/** Tokens two prompts share from the start. */
function commonPrefix(a: number[], b: number[]): number {
  let t = 0;
  while (t < a.length && t < b.length && a[t] === b[t]) t++;
  return t;
}

/** The plan with one group, the prefix common to every distinct prompt (ENGINE_PATHS.groupedPrefill off). */
function commonPrefill(distinct: number[][], order: number[], minPrefix: number): PrefillPlan {
  const prefix = Math.min(...distinct.map((p) => commonPrefix(p, distinct[0])), ...distinct.map((p) => p.length - 1));
  if (distinct.length < 2 || prefix < minPrefix) return { distinct, order, groups: [], prefixes: [] };
  return { distinct, order, groups: distinct.map(() => 0), prefixes: [prefix] };
}

/** Indices of the prompts in token order (a prompt before the prompts it is a prefix of). Example: [[2], [1, 3], [1]] -> [2, 1, 0]. */
export function tokenOrder(prompts: number[][]): number[] {
  return prompts.map((_, i) => i).sort((a, b) => {
    const x = prompts[a];
    const y = prompts[b];
    const t = commonPrefix(x, y);
    return t < x.length && t < y.length ? x[t] - y[t] : x.length - y.length;
  });
}

/**
 * Which prompts are the same, and which share a prefix: the distinct prompts in token order, cut into
 * runs that share at least `minPrefix` tokens and half of their first prompt. A run grows while its
 * shared prefix does not shrink its saving ((size - 1) x prefix tokens not run again), so a long shared
 * prefix (a judge prompt's template after the agent's name and reply) is not given up for a short one
 * (the agent's name) that would cover more prompts; a prompt that shares less than half of itself runs
 * alone, since every row's suffix is padded to the longest. Nothing is shared (empty `groups`) when no
 * run holds two prompts.
 */
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
  if (!ENGINE_PATHS.groupedPrefill) return commonPrefill(distinct, order, minPrefix);
  const sorted = tokenOrder(distinct);
  const groups = new Array<number>(distinct.length).fill(0);
  const prefixes: number[] = [];
  let first = sorted[0];
  let prefix = distinct[first].length - 1;
  let size = 1;
  let shared = false;
  for (const i of sorted.slice(1)) {
    const next = Math.min(prefix, commonPrefix(distinct[first], distinct[i]), distinct[i].length - 1);
    if (next >= minPrefix && 2 * next >= distinct[first].length && size * next >= (size - 1) * prefix) {
      prefix = next;
      size++;
      shared = true;
    } else {
      prefixes.push(prefix);
      first = i;
      prefix = distinct[i].length - 1;
      size = 1;
    }
    groups[i] = prefixes.length;
  }
  prefixes.push(prefix);
  // a one-token prompt alone would leave its group an empty head: then nothing is shared
  return shared && prefixes.every((p) => p > 0) ? { distinct, order, groups, prefixes } : { distinct, order, groups: [], prefixes: [] };
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
  if (plan.prefixes.length) {
    const firstOf = plan.prefixes.map((_, g) => plan.groups.indexOf(g));
    const heads = leftPad(firstOf.map((u, g) => rows[u].slice(0, plan.prefixes[g]))); // [G, longest prefix]
    const head = model.forward(heads.ids, { attentionMask: heads.mask, useCache: true, lastOnly: true, adapter });
    head.logits.dispose();
    past = selectCacheRows(head.cache!, plan.groups); // disposes the heads' cache
    rows = rows.map((p, u) => p.slice(plan.prefixes[plan.groups[u]]));
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
