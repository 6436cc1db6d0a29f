/**
 * Log-probs an update need not compute again (stage 1 of update.ts and batched-update.ts).
 *
 * - The sampling policy's ("old"): a rollout at temperature 1 already holds them. The sampler's
 *   log-prob of a token is log softmax(logits / T) at that token over the whole vocabulary
 *   (engine/model/sampling.ts), which at T = 1 is the policy's own log-prob, from the same adapter the
 *   update starts from (the loop is synchronous: rollout, coach, update). Reused only when the config
 *   says so (`update.reuseRolloutLogprobs`, refused at any other temperature) and the sample carries
 *   one log-prob per action token.
 * - The reference's: the reference is the base model, frozen for the whole run, so a (prompt, action)
 *   it has scored keeps its log-probs. `RefMemory` remembers them by the exact token ids; a relay agent
 *   meets the same 90 input cells every iteration, so most of its samples are ones the reference has
 *   already scored (the math team's prompts never repeat, and gain nothing).
 * Both are the values the passes would give to float tolerance (a pass's rows are padded and grouped
 * differently from one iteration to the next), never to the bit.
 *
 * For: the update's stage 1. Not for: the passes themselves (compute/) or the advantages (advantages.ts).
 * Example: const memory = new RefMemory();
 *          const known = knownLogProbs(samples, { reuseSampled: true, memory });
 *          known.old[i]   // samples[i].sampledLogprobs, or undefined: a pass computes it
 *          known.ref[i]   // remembered from an earlier update, or undefined
 *          memory.keep(samples[i], refFromPass)   // after the pass
 */
import type { TrainSample } from './batches.ts';

/** Characters of keys a RefMemory holds before it forgets its oldest entries (about 64 MB of strings). */
export const REF_MEMORY_CHARS = 32 * 1024 * 1024;

/** The reference model's log-probs of (prompt, action) pairs, by their token ids; the oldest go first past `limit` characters of keys. */
export class RefMemory {
  private readonly map = new Map<string, number[]>();
  private chars = 0;
  /** Lookups answered and lookups made (how much of the reference pass was saved). */
  hits = 0;
  lookups = 0;

  constructor(readonly limit = REF_MEMORY_CHARS) {}

  private static key(s: TrainSample): string {
    return `${s.prompt.join(',')}|${s.action.join(',')}`;
  }

  get(s: TrainSample): number[] | undefined {
    this.lookups++;
    const v = this.map.get(RefMemory.key(s));
    if (v) this.hits++;
    return v;
  }

  keep(s: TrainSample, ref: number[]): void {
    const k = RefMemory.key(s);
    if (this.map.has(k)) return;
    this.map.set(k, ref);
    this.chars += k.length;
    while (this.chars > this.limit && this.map.size) {
      const oldest = this.map.keys().next().value!;
      this.map.delete(oldest);
      this.chars -= oldest.length;
    }
  }

  get size(): number {
    return this.map.size;
  }
}

export interface KnownLogProbs {
  /** Per sample: the sampling policy's log-probs of its action tokens where known, else undefined. */
  old: (number[] | undefined)[];
  /** Per sample: the reference's, where remembered. */
  ref: (number[] | undefined)[];
}

/** What stage 1 already knows of each sample (see the top comment). */
export function knownLogProbs(samples: TrainSample[], opts: { reuseSampled?: boolean; memory?: RefMemory }): KnownLogProbs {
  return {
    old: samples.map((s) => (opts.reuseSampled && s.sampledLogprobs?.length === s.action.length ? s.sampledLogprobs : undefined)),
    ref: samples.map((s) => opts.memory?.get(s)),
  };
}

/** Indices of the samples whose entry in `known` is missing: the rows a pass must still run. */
export function missing(known: (number[] | undefined)[], idx: number[]): number[] {
  return idx.filter((i) => known[i] === undefined);
}
