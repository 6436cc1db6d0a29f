/**
 * The per-agent policy-gradient update (MAPPA section 4): every action is one sample for its own
 * agent's LoRA adapter; REINFORCE++ advantages over the whole batch; PPO-clipped loss over the
 * action's tokens only; AdamW on the adapter; global-norm gradient clipping; micro-batches with
 * gradient accumulation so memory is bounded by the micro-batch.
 *
 * For: `policyUpdate(gradients, policies, samples, settings)` once per training iteration.
 * Not for: producing samples (loop/rewards.ts) or advantage maths (advantages.ts).
 *
 * Story of one call (one function per stage, `policyUpdate` at the end calls them in order):
 *   1. log-probs of every action under the sampling policy (adapter as it is now) and the
 *      reference (adapter off) — no gradient (`samplingLogProbs`);
 *   2. advantages (KL folded into the per-token reward, whitened; advantages.ts);
 *   3. per agent, per mini-batch: accumulate d(loss)/d(adapter) over micro-batches
 *      (`miniBatchGradient`, each micro-batch's part is ppo.ts's `ppoGradient`), clip by the global
 *      norm, one AdamW step — unless loss or gradient is not finite: then skip, keep the adapter as it
 *      was, and report it (`clippedStep`).
 * The passes of stages 1 and 3 are asked of `Gradients` (below), whoever runs them.
 *
 * Example: const m = await policyUpdate(gradients, policies, samples, { epochs: 1 });
 *          m.agents.solver.steps   // 1: one AdamW step on the solver's adapter
 */
import * as tf from '@tensorflow/tfjs-core';
import type { LoraAdapter } from '../engine/lora/adapter.ts';
import type { AdamW } from './adamw.ts';
import { computeAdvantages } from './advantages.ts';
import { chunks, logProbRows, makeBatch, microBatches, perSample, type LogProbJob, type MicroBatch, type TrainSample } from './batches.ts';
import type { Gradient, GradientJob } from './ppo.ts';
import { DEFAULT_UPDATE, type UpdateSettings } from './update-settings.ts';

export { actionLogProbs, MAX_TRAIN_TOKENS, microBatches, type LogProbJob, type TrainSample } from './batches.ts';
export { ppoGradient, ppoLoss, type Gradient, type GradientJob } from './ppo.ts';
export { DEFAULT_UPDATE, type UpdateSettings } from './update-settings.ts';

/**
 * What the update needs computed, in job order: the log-probs of padded rows (no gradient), and each
 * micro-batch's PPO loss with its gradient (ppo.ts's `ppoGradient`). compute/ answers it; the results
 * are the same wherever the jobs run.
 */
export interface Gradients {
  logProbs(jobs: LogProbJob[]): Promise<Float32Array[]>;
  gradients(adapter: LoraAdapter, jobs: GradientJob[]): Promise<Gradient[]>;
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
function checkSamples(samples: TrainSample[], policies: Map<string, AgentPolicy>): void {
  for (const x of samples) {
    if (!policies.has(x.agent)) throw new Error(`policyUpdate: sample for unknown agent "${x.agent}"`);
    if (x.action.length === 0 || x.prompt.length === 0) throw new Error(`policyUpdate: a sample of "${x.agent}" has an empty prompt or action`);
    if (!Number.isFinite(x.reward)) throw new Error(`policyUpdate: a sample of "${x.agent}" has a non-finite reward ${x.reward}`);
  }
}

/**
 * Stage 1: every action's log-probs under the sampling policy (its agent's adapter as it is now)
 * and the reference (adapter off), no gradient; one job per micro-batch and adapter.
 */
async function samplingLogProbs(gradients: Gradients, policies: Map<string, AgentPolicy>, samples: TrainSample[], byAgent: Map<string, number[]>,
  microBatchSize: number): Promise<{ old: number[][]; ref: number[][] }> {
  const old: number[][] = new Array(samples.length);
  const ref: number[][] = new Array(samples.length);
  const jobs: (LogProbJob & { rows: number[]; perRow: number[][]; into: number[][] })[] = [];
  for (const [agent, idx] of byAgent) {
    const adapter = policies.get(agent)!.adapter;
    for (const rows of microBatches(samples, idx, microBatchSize)) {
      const { ids, mask, perRow } = logProbRows(samples, rows);
      const job = { rows, ids, mask, perRow, positions: perRow.flat() };
      jobs.push({ ...job, adapter, into: old }, { ...job, adapter: null, into: ref });
    }
  }
  const results = await gradients.logProbs(jobs);
  jobs.forEach((j, k) => perSample(j.into, j.rows, j.perRow, results[k]));
  return { old, ref };
}

/** One mini-batch's gradient and loss, summed over its micro-batches in order. */
interface MiniBatchGradient {
  grads: tf.Tensor[] | null;
  loss: number;
  /** Padded tokens the micro-batches ran (for tokens per second). */
  cells: number;
  /** Per micro-batch, in order: sums over its action tokens [entropy, clipped tokens, k1 KL to the reference]. */
  sides: [number, number, number][];
}

/** Stage 3a: the PPO gradient of one mini-batch, summed over its micro-batches in order. */
async function miniBatchGradient(gradients: Gradients, adapter: LoraAdapter, batches: MicroBatch[], clipEps: number,
  tokenCount: number): Promise<MiniBatchGradient> {
  const parts = await gradients.gradients(adapter, batches.map((batch) => ({ batch, clipEps, tokenCount })));
  const out: MiniBatchGradient = { grads: null, loss: 0, cells: 0, sides: parts.map((p) => p.side) };
  for (const [k, part] of parts.entries()) {
    out.cells += batches[k].ids.length * batches[k].ids[0].length;
    out.loss += part.loss;
    if (out.grads === null) out.grads = part.grads;
    else {
      const prev: tf.Tensor[] = out.grads;
      out.grads = prev.map((a, j) => tf.add(a, part.grads[j]));
      prev.forEach((t) => t.dispose());
      part.grads.forEach((t) => t.dispose());
    }
  }
  return out;
}

/**
 * Stage 3b: one AdamW step on the gradient clipped to `maxGradNorm` (global norm), or none when the
 * loss or the norm is not finite (then the reason). Disposes the gradient. Returns the norm.
 */
async function clippedStep(policy: AgentPolicy, grads: tf.Tensor[], loss: number, maxGradNorm: number): Promise<{ gradNorm: number; skipped?: string }> {
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

/**
 * The update (see the top comment): check -> stage 1 log-probs -> stage 2 advantages -> stage 3 per
 * trainable agent, per mini-batch: gradient (3a) and clipped step (3b). Returns per-agent metrics
 * and each sample's mean advantage (what the trainer records on its action).
 */
export async function policyUpdate(gradients: Gradients, policies: Map<string, AgentPolicy>, samples: TrainSample[],
  settings: Partial<UpdateSettings> = {}): Promise<UpdateMetrics> {
  const s = { ...DEFAULT_UPDATE, ...settings };
  const started = performance.now();
  if (!s.maskTruncated) samples = samples.map((x) => ({ ...x, truncated: false }));
  checkSamples(samples, policies);
  const byAgent = new Map<string, number[]>();
  samples.forEach((x, i) => byAgent.set(x.agent, [...(byAgent.get(x.agent) ?? []), i]));

  const { old, ref } = await samplingLogProbs(gradients, policies, samples, byAgent, s.microBatchSize);
  const { advantages, meanKl } = computeAdvantages(
    samples.map((x, i) => ({ ...x, oldLogprobs: old[i], refLogprobs: ref[i] })),
    { klCoef: s.klCoef, whitening: s.whitening },
  );

  const agents: Record<string, AgentUpdateMetrics> = {};
  let cells = 0;
  for (const [agent, idx] of byAgent) {
    const policy = policies.get(agent)!;
    const m: AgentUpdateMetrics = {
      samples: idx.length, tokens: 0, loss: 0, kl: 0, entropy: 0, clipFraction: 0, gradNorm: 0,
      meanReward: idx.reduce((a, i) => a + samples[i].reward, 0) / idx.length, steps: 0, skippedSteps: 0, skipReasons: [],
    };
    agents[agent] = m;
    if (!policy.trainable) continue;
    const side = [0, 0, 0]; // entropy, clipped, kl sums over the agent's tokens
    for (let epoch = 0; epoch < s.epochs; epoch++) {
      for (const mini of chunks(idx, Math.ceil(idx.length / s.miniBatches))) {
        const tokenCount = mini.reduce((a, i) => a + (samples[i].truncated ? 0 : samples[i].action.length), 0);
        if (tokenCount === 0) continue;
        const batches = microBatches(samples, mini, s.microBatchSize)
          .filter((micro) => !micro.every((i) => samples[i].truncated)) // nothing to learn from
          .map((micro) => makeBatch(samples, { adv: advantages, old, ref }, micro));
        const g = await miniBatchGradient(gradients, policy.adapter, batches, s.clipEps, tokenCount);
        for (const part of g.sides) part.forEach((v, j) => (side[j] += v));
        cells += g.cells;
        if (g.grads === null) continue;
        const { gradNorm, skipped } = await clippedStep(policy, g.grads, g.loss, s.maxGradNorm);
        m.steps++;
        if (skipped) {
          m.skippedSteps++;
          m.skipReasons.push(skipped);
        }
        m.loss += g.loss;
        m.gradNorm += gradNorm;
        m.tokens += tokenCount;
      }
    }
    const steps = Math.max(m.steps, 1);
    m.loss /= steps;
    m.gradNorm /= steps;
    m.entropy = m.tokens ? side[0] / m.tokens : 0;
    m.clipFraction = m.tokens ? side[1] / m.tokens : 0;
    m.kl = m.tokens ? side[2] / m.tokens : 0;
  }
  const seconds = (performance.now() - started) / 1000;
  const sampleAdvantages = advantages.map((a) => (a.length ? a.reduce((x, y) => x + y, 0) / a.length : 0));
  return { agents, kl: meanKl, tokensPerSecond: cells / Math.max(seconds, 1e-9), seconds, sampleAdvantages };
}
