/**
 * Autoregressive generation for a batch of prompts: batched prefill, then one token per step
 * with a KV cache (or full recomputation, for comparison and benchmarks).
 *
 * For: agents' actions and the judge's answers. Returns the sampled tokens and their log-probs.
 * Not for: choosing a token (sampling.ts) or the forward pass itself (llama.ts).
 *
 * Prompts of different lengths are left-padded and masked, so a batch gives the same tokens as
 * one prompt at a time. Rows that finish (EOS, a stop string, the budget) are dropped from the
 * batch and its cache, so the rest decode without dead rows.
 * Example: await generate(model, [[1, 10, 12]], {maxNewTokens: 4, temperature: 0})
 *   -> [{tokens: [8, 61, 68, 30], logprobs: [...], finishReason: 'length', ...}]
 */
import { Rng } from '../../stats/rng.ts';
import { pausePoint } from '../pause-point.ts';
import { ENGINE_PATHS } from '../paths.ts';
import { FusedDecoder, type FusedOptions } from './decode-wasm.ts';
import { GpuDecoder } from './decode-webgpu.ts';
import { distinctPrefill, leftPad, tokenOrder } from './prefill.ts';
import { type AdapterView, type CausalLM, type KVCache, disposeCache, selectCacheRows } from './llama.ts';
import { type SamplingOptions, type UniformSource, sampleToken } from './sampling.ts';

export interface GenerateOptions extends SamplingOptions {
  maxNewTokens: number;
  /** Seed of the sampling generator (default 0); ignored when `rng` is given. */
  seed?: number;
  rng?: UniformSource;
  /** Token ids that end a sequence (included in `tokens`, like HF). */
  eosTokenIds?: number[];
  /** Text that ends a sequence; needs `decode`. The returned `text` is cut before it. */
  stopStrings?: string[];
  decode?: (ids: number[]) => string;
  adapter?: AdapterView | null;
  /** false = recompute the whole sequence every step (no KV cache). Default true. */
  useCache?: boolean;
  /** false = decode with the plain tfjs ops even where a fused step (decode-wasm.ts, decode-webgpu.ts) can serve. Default true. */
  fused?: boolean;
  /** false = a plain left-padded prefill, without running shared prompts and prefixes once (prefill.ts). Default true. */
  sharePrefill?: boolean;
  /** Progress: the pre-fill (done 0 then 1; tokens = rows x padded prompt length), then each decoding step. */
  onProgress?: (p: GenerationProgress) => void;
  /** Called after each step for each still-running row with its new token. */
  onToken?: (row: number, token: number) => void;
  /**
   * Checked before each step (the pre-fill and every decoding step): once aborted, generate throws its
   * reason. Every few ms of decoding the event loop gets a turn (pause-point.ts), so an abort sent as a
   * message arrives within one step.
   */
  signal?: AbortSignal;
}

export interface GenerationProgress {
  phase: 'prefill' | 'decode';
  done: number;
  total: number;
  /** Rows still generating. */
  rows: number;
  /** Prompt tokens of the pre-fill (rows x padded length). */
  tokens: number;
}

export type FinishReason = 'eos' | 'stop' | 'length';

export interface Generation {
  tokens: number[];
  logprobs: number[];
  finishReason: FinishReason;
  /** Decoded text (when `decode` was given), cut before a matched stop string. */
  text?: string;
}

/**
 * Split prompts (by index, order kept) into batches whose prefill attention stays bounded:
 * rows x longest^2 <= maxCells, and at most maxRows rows. Long prompts (a coach reading a whole
 * data-team workspace, ~2k tokens) then go a few at a time instead of building a [B, heads, T, T]
 * score tensor of gigabytes.
 * Example: promptBatches([100, 100, 2000], 16, 4_000_000) -> [[0, 1], [2]]
 */
export function promptBatches(lengths: number[], maxRows: number, maxCells = 16 * 1024 * 1024): number[][] {
  const batches: number[][] = [];
  let current: number[] = [];
  let longest = 0;
  lengths.forEach((len, i) => {
    const l = Math.max(longest, len);
    if (current.length && (current.length + 1 > maxRows || (current.length + 1) * l * l > maxCells)) {
      batches.push(current);
      current = [];
      longest = 0;
    }
    current.push(i);
    longest = Math.max(longest, len);
  });
  if (current.length) batches.push(current);
  return batches;
}

/**
 * promptBatches over the prompts in token order: prompts that start alike share a batch, and so their
 * prefill (prefill.ts runs each group's shared prefix once). Indices into `prompts`.
 * Example: alikeBatches([[5, 1], [3, 1], [5, 2], [3, 2]], 2) -> [[1, 3], [0, 2]]
 */
export function alikeBatches(prompts: number[][], maxRows: number): number[][] {
  if (!ENGINE_PATHS.groupedPrefill) return promptBatches(prompts.map((p) => p.length), maxRows);
  const order = tokenOrder(prompts);
  return promptBatches(order.map((i) => prompts[i].length), maxRows).map((batch) => batch.map((j) => order[j]));
}

export async function generate(model: CausalLM, prompts: number[][], opts: GenerateOptions): Promise<Generation[]> {
  if (prompts.length === 0) return [];
  for (const p of prompts) if (p.length === 0) throw new Error('generate: every prompt needs at least one token');
  if (opts.stopStrings?.length && !opts.decode) throw new Error('generate: stopStrings need a decode function');
  const rng = opts.rng ?? new Rng(opts.seed ?? 0);
  const eos = new Set(opts.eosTokenIds ?? []);
  const useCache = opts.useCache ?? true;
  const results: Generation[] = prompts.map(() => ({ tokens: [], logprobs: [], finishReason: 'length' }));
  if (opts.maxNewTokens <= 0) return results;

  let active = prompts.map((_, i) => i); // original row index of each batch row
  const { ids, mask } = leftPad(prompts);
  let seqIds = ids; // full sequences (for recomputation)
  let seqMask = mask;
  let cache: KVCache | null = null;
  let fused: Decoder | null = null; // after the prefill, where one can serve
  let stepIds = ids;
  let stepMask: number[][] | undefined = mask;

  const prefillTokens = ids.length * (ids[0]?.length ?? 0);
  opts.onProgress?.({ phase: 'prefill', done: 0, total: 1, rows: ids.length, tokens: prefillTokens });
  try {
    for (let step = 0; step < opts.maxNewTokens; step++) {
      await pausePoint(opts.signal);
      let last: Float32Array; // [B', V]
      let order: number[] | null = null; // the shared prefill's cache row of each row, where twins share one
      if (fused) last = await fused.step(stepIds.map((r) => r[0]));
      else if (step === 0 && useCache && opts.sharePrefill !== false) ({ cache, logits: last, order } = await distinctPrefill(model, prompts, opts.adapter));
      else {
        const out = model.forward(useCache ? stepIds : seqIds, {
          attentionMask: useCache ? stepMask : seqMask,
          cache,
          useCache,
          lastOnly: true,
          adapter: opts.adapter,
        });
        cache = out.cache;
        last = (await out.logits.data()) as Float32Array; // [B', 1, V]
        out.logits.dispose();
      }
      if (step === 0 && cache) {
        fused = opts.fused !== false && opts.maxNewTokens > 1
          ? await openDecoder(model, cache, opts.adapter, opts.maxNewTokens - 1, { rows: order ?? undefined })
          : null;
        if (fused) {
          disposeCache(cache);
          cache = null;
        } else if (order) cache = selectCacheRows(cache, order);
      }
      if (step === 0) opts.onProgress?.({ phase: 'prefill', done: 1, total: 1, rows: active.length, tokens: prefillTokens });
      else opts.onProgress?.({ phase: 'decode', done: step, total: opts.maxNewTokens - 1, rows: active.length, tokens: 0 });
      const vocab = model.config.vocabSize;

      const keep: number[] = [];
      const next: number[] = [];
      for (let j = 0; j < active.length; j++) {
        const row = active[j];
        const { token, logprob } = sampleToken(last.subarray(j * vocab, (j + 1) * vocab), opts, rng);
        const r = results[row];
        r.tokens.push(token);
        r.logprobs.push(logprob);
        opts.onToken?.(row, token);
        if (eos.has(token)) {
          r.finishReason = 'eos';
        } else if (opts.stopStrings?.length && stopAt(opts.decode!(r.tokens), opts.stopStrings) >= 0) {
          r.finishReason = 'stop';
        } else {
          keep.push(j);
          next.push(token);
        }
      }
      if (keep.length === 0) break;
      if (keep.length < active.length) {
        if (cache) cache = selectCacheRows(cache, keep);
        fused?.keepRows(keep);
        seqIds = keep.map((j) => seqIds[j]);
        seqMask = keep.map((j) => seqMask[j]);
        active = keep.map((j) => active[j]);
      }
      seqIds = seqIds.map((r, j) => [...r, next[j]]);
      seqMask = seqMask.map((r) => [...r, 1]);
      stepIds = next.map((t) => [t]);
      stepMask = undefined;
    }
  } finally {
    if (cache) disposeCache(cache);
    fused?.dispose();
  }

  if (opts.decode) {
    for (const r of results) {
      const text = opts.decode(r.tokens);
      const cut = opts.stopStrings?.length ? stopAt(text, opts.stopStrings) : -1;
      r.text = cut >= 0 ? text.slice(0, cut) : text;
    }
  }
  return results;
}

/** A fused decoding step after the prefill: the wasm one (synchronous) or the WebGPU one. */
interface Decoder {
  step(tokens: number[]): Float32Array | Promise<Float32Array>;
  keepRows(rows: number[]): void;
  dispose(): void;
}

/** The fused step that serves this backend and model (each declines elsewhere, saying why), or null: the plain step. */
async function openDecoder(model: CausalLM, cache: KVCache, adapter: AdapterView | null | undefined, extra: number,
  opts: FusedOptions): Promise<Decoder | null> {
  return FusedDecoder.open(model, cache, adapter, extra, opts) ?? (await GpuDecoder.open(model, cache, adapter, extra, opts));
}

/** Index of the earliest stop string in text, or -1. */
function stopAt(text: string, stops: string[]): number {
  let best = -1;
  for (const s of stops) {
    const i = text.indexOf(s);
    if (i >= 0 && (best < 0 || i < best)) best = i;
  }
  return best;
}

