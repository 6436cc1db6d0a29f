/**
 * What both updates share (update.ts per agent, batched-update.ts batched): the passes they ask for
 * (`Gradients`), an agent's policy and metrics, the sample check, and one agent's clipped AdamW step.
 *
 * For: update.ts and batched-update.ts. Not for: the stages themselves (those two files).
 * Example: const { gradNorm, skipped } = await clippedStep(policy, grads, loss, 1);  // one AdamW step, or why not
 */
import * as tf from '@tensorflow/tfjs-core';
import type { LoraAdapter } from '../engine/lora/adapter.ts';
import type { AdamW } from './adamw.ts';
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
   * Several agents' jobs at once, each item's results in its jobs' order: where the compute has lanes,
   * one agent's single micro-batch no longer leaves the other lanes idle. Absent: one agent at a time.
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
  const norm = tf.tidy(() => tf.sqrt(tf.addN(grads.map((g) => tf.sum(tf.square(g))))));
  const gradNorm = (await norm.data())[0];
  norm.dispose();
  let skipped: string | undefined;
  if (!Number.isFinite(loss) || !Number.isFinite(gradNorm)) {
    skipped = `non-finite ${Number.isFinite(loss) ? 'gradient norm' : 'loss'} (loss ${loss}, grad norm ${gradNorm}); step skipped, adapter unchanged`;
  } else {
    const factor = gradNorm > maxGradNorm ? maxGradNorm / (gradNorm + 1e-6) : 1;
    const clipped = tf.tidy(() => grads.map((g) => tf.mul(g, factor)));
    policy.optimizer.apply(clipped);
    clipped.forEach((t) => t.dispose());
  }
  grads.forEach((t) => t.dispose());
  return { gradNorm, skipped };
}

