/**
 * What both updates share (update.ts per agent, batched-update.ts batched): the passes they ask for
 * (`Gradients`), an agent's policy and metrics, the sample check, one agent's clipped AdamW step, and the
 * log-probs stage 1 already knows (the rollout's, the frozen reference's remembered: `knownLogProbs`).
 *
 * For: update.ts and batched-update.ts. Not for: the stages themselves (those two files).
 * Example: const { gradNorm, skipped } = await clippedStep(policy, grads, loss, 1);  // one AdamW step, or why not
 */
import * as tf from '@tensorflow/tfjs-core';
import type { LoraAdapter } from '../engine/lora/adapter.ts';
import type { AdamW } from './adamw.ts';
import { hostNorm, hostSums, scaleInPlace } from '../engine/host-math.ts';
import type { LogProbJob, TrainSample } from './batches.ts';
import type { Gradient, GradientJob } from './ppo.ts';
import type { BatchedGradient, BatchedGradientJob, BatchedLogProbJob } from './batched-passes.ts';

/**
 * What the update needs computed, in job order: the log-probs of padded rows (no gradient), and each
 * micro-batch's PPO loss with its gradient (ppo.ts's `ppoGradient`). compute/ answers it; the results
 * are the same wherever the jobs run.
 */
export interface Gradients {
  logProbs(jobs: LogProbJob[]): Promise<Float32Array[]>;
  gradients(adapter: LoraAdapter, jobs: GradientJob[]): Promise<Gradient[]>;
  /**
   * Several agents' jobs at once, each item's results in its jobs' order: where the compute runs jobs side
   * by side, one agent's single micro-batch no longer runs alone. Absent: one agent at a time.
   */
  gradientsOfMany?(items: { adapter: LoraAdapter; jobs: GradientJob[] }[]): Promise<Gradient[][]>;
  /**
   * The team's passes, rows of several agents in one pass (batched-passes.ts), where this compute offers
   * them; without them a `batched` update runs per agent.
   */
  batchedLogProbs?(jobs: BatchedLogProbJob[]): Promise<Float32Array[]>;
  batchedGradients?(jobs: BatchedGradientJob[]): Promise<BatchedGradient[]>;
}

export interface AgentPolicy {
  adapter: LoraAdapter;
  optimizer: AdamW;
  /** Frozen agents take part in rollouts but are never updated. */
  trainable: boolean;
}

export interface AgentUpdateMetrics {
  samples: number;
  tokens: number;
  loss: number;
  kl: number;
  entropy: number;
  clipFraction: number;
  gradNorm: number;
  meanReward: number;
  steps: number;
  skippedSteps: number;
  skipReasons: string[];
}

export interface UpdateMetrics {
  agents: Record<string, AgentUpdateMetrics>;
  /** Mean k1 KL (sampling policy vs reference) per action token over the batch. */
  kl: number;
  tokensPerSecond: number;
  seconds: number;
  /** Per sample, in input order: the mean REINFORCE++ advantage over its action tokens (0 when truncated). */
  sampleAdvantages: number[];
}




/** Refuses samples the update cannot learn from, naming the agent. */
export function checkSamples(samples: TrainSample[], policies: Map<string, AgentPolicy>): void {
  for (const x of samples) {
    if (!policies.has(x.agent)) throw new Error(`policyUpdate: sample for unknown agent "${x.agent}"`);
    if (x.action.length === 0 || x.prompt.length === 0) throw new Error(`policyUpdate: a sample of "${x.agent}" has an empty prompt or action`);
    if (!Number.isFinite(x.reward)) throw new Error(`policyUpdate: a sample of "${x.agent}" has a non-finite reward ${x.reward}`);
  }
}

/** An agent's metrics before its steps: its samples and mean reward. */
export function agentMetrics(samples: TrainSample[], idx: number[]): AgentUpdateMetrics {
  return {
    samples: idx.length, tokens: 0, loss: 0, kl: 0, entropy: 0, clipFraction: 0, gradNorm: 0,
    meanReward: idx.reduce((a, i) => a + samples[i].reward, 0) / idx.length, steps: 0, skippedSteps: 0, skipReasons: [],
  };
}

/** Means over the agent's steps and tokens, from the summed loss, norm and side sums [entropy, clipped, kl]. */
export function closeMetrics(m: AgentUpdateMetrics, side: number[]): void {
  const steps = Math.max(m.steps, 1);
  m.loss /= steps;
  m.gradNorm /= steps;
  m.entropy = m.tokens ? side[0] / m.tokens : 0;
  m.clipFraction = m.tokens ? side[1] / m.tokens : 0;
  m.kl = m.tokens ? side[2] / m.tokens : 0;
}

/**
 * One AdamW step on the gradient clipped to `maxGradNorm` (global norm), or none when the
 * loss or the norm is not finite (then the reason). Disposes the gradient. Returns the norm.
 */
export async function clippedStep(policy: AgentPolicy, grads: tf.Tensor[], loss: number, maxGradNorm: number): Promise<{ gradNorm: number; skipped?: string }> {
  const sums = hostSums(); // the step's arithmetic on the host where tensors live there (engine/host-math.ts)
  const host = sums ? grads.map((g) => new Float32Array(g.dataSync() as Float32Array)) : null; // copies: clipped in place
  let gradNorm: number;
  if (host) gradNorm = hostNorm(host, sums!);
  else {
    const norm = tf.tidy(() => tf.sqrt(tf.addN(grads.map((g) => tf.sum(tf.square(g))))));
    gradNorm = (await norm.data())[0];
    norm.dispose();
  }
  let skipped: string | undefined;
  if (!Number.isFinite(loss) || !Number.isFinite(gradNorm)) {
    skipped = `non-finite ${Number.isFinite(loss) ? 'gradient norm' : 'loss'} (loss ${loss}, grad norm ${gradNorm}); step skipped, adapter unchanged`;
  } else {
    const factor = gradNorm > maxGradNorm ? maxGradNorm / (gradNorm + 1e-6) : 1;
    if (host) {
      scaleInPlace(host, factor);
      policy.optimizer.applyHost(host);
    } else {
      const clipped = tf.tidy(() => grads.map((g) => tf.mul(g, factor)));
      policy.optimizer.apply(clipped);
      clipped.forEach((t) => t.dispose());
    }
  }
  grads.forEach((t) => t.dispose());
  return { gradNorm, skipped };
}

/*
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
 * Example: const memory = new RefMemory();
 *          const known = knownLogProbs(samples, { reuseSampled: true, memory });
 *          known.old[i]   // samples[i].sampledLogprobs, or undefined: a pass computes it
 *          known.ref[i]   // remembered from an earlier update, or undefined
 *          memory.keep(samples[i], refFromPass)   // after the pass
 */
/** Characters of keys a RefMemory holds before it forgets its oldest entries (about 64 MB of strings). */
const REF_MEMORY_CHARS = 32 * 1024 * 1024;

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
