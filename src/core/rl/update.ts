/**
 * The per-agent policy-gradient update (MAPPA section 4): every action is one sample for its own
 * agent's LoRA adapter; REINFORCE++ advantages over the whole batch; PPO-clipped loss over the
 * action's tokens only; AdamW on the adapter; global-norm gradient clipping; micro-batches with
 * gradient accumulation so memory is bounded by the micro-batch.
 *
 * For: `policyUpdate(gradients, policies, samples, settings)` once per training iteration.
 * Not for: producing samples (loop/rewards.ts) or advantage maths (advantages.ts).
 *
 * With `batched: true` and a compute that offers team passes, the same update runs in passes of
 * several agents at once (batched-update.ts); otherwise, per agent, as below.
 *
 * Story of one call (one function per stage, `policyUpdate` at the end calls them in order):
 *   1. log-probs of every action under the sampling policy (adapter as it is now) and the
 *      reference (adapter off) — no gradient (`samplingLogProbs`);
 *   2. advantages (KL folded into the per-token reward, whitened; advantages.ts);
 *   3. per agent, per mini-batch (in rounds: every agent's first mini-batch, then every agent's second...,
 *      so that a compute that runs jobs side by side can take several agents' at once): accumulate d(loss)/d(adapter) over micro-batches
 *      (`miniBatchGradient`, each micro-batch's part is ppo.ts's `ppoGradient`), clip by the global
 *      norm, one AdamW step — unless loss or gradient is not finite: then skip, keep the adapter as it
 *      was, and report it (`clippedStep`).
 * The passes of stages 1 and 3 are asked of `Gradients` (below), whoever runs them. `memory` (a
 * RefMemory the trainer keeps for the run) answers the reference's log-probs of samples seen before.
 *
 * Example: const m = await policyUpdate(gradients, policies, samples, { epochs: 1 });
 *          m.agents.solver.steps   // 1: one AdamW step on the solver's adapter
 */
import * as tf from '@tensorflow/tfjs-core';
import type { Gradient, GradientJob } from './ppo.ts';
import { computeAdvantages } from './advantages.ts';
import { chunks, logProbRows, makeBatch, microBatches, perSample, type LogProbJob, type MicroBatch, type TrainSample } from './batches.ts';
import { batchedPolicyUpdate } from './batched-update.ts';
import {
  agentMetrics, checkSamples, clippedStep, closeMetrics, knownLogProbs, missing, type AgentPolicy, type AgentUpdateMetrics, type Gradients,
  type RefMemory, type UpdateMetrics,
} from './update-steps.ts';
import { DEFAULT_UPDATE, type UpdateSettings } from './update-settings.ts';


/**
 * Stage 1: every action's log-probs under the sampling policy (its agent's adapter as it is now)
 * and the reference (adapter off), no gradient; one job per micro-batch and adapter, for the rows
 * whose log-probs are not known already (update-steps.ts `knownLogProbs`: the rollout's, the reference's memory).
 */
async function samplingLogProbs(gradients: Gradients, policies: Map<string, AgentPolicy>, samples: TrainSample[], byAgent: Map<string, number[]>,
  s: UpdateSettings, memory?: RefMemory): Promise<{ old: number[][]; ref: number[][] }> {
  const known = knownLogProbs(samples, { reuseSampled: s.reuseRolloutLogprobs, memory });
  const old = known.old as number[][];
  const ref = known.ref as number[][];
  const jobs: (LogProbJob & { rows: number[]; perRow: number[][]; into: number[][] })[] = [];
  for (const [agent, idx] of byAgent) {
    const adapter = policies.get(agent)!.adapter;
    for (const [into, jobAdapter] of [[old, adapter], [ref, null]] as const) {
      for (const rows of microBatches(samples, missing(into, idx), s.microBatchSize)) {
        const { ids, mask, perRow } = logProbRows(samples, rows);
        const prefix = s.sharedPrefix ? { prefixGroups: rows.map(() => 0) } : {};
        jobs.push({ rows, ids, mask, perRow, positions: perRow.flat(), ...prefix, adapter: jobAdapter, into });
      }
    }
  }
  const results = await gradients.logProbs(jobs);
  jobs.forEach((j, k) => {
    perSample(j.into, j.rows, j.perRow, results[k]);
    if (memory && j.into === ref) for (const i of j.rows) memory.keep(samples[i], ref[i]);
  });
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

/** Stage 3a's jobs: one mini-batch's micro-batches, each a PPO gradient (ppo.ts's `ppoGradient`). */
function miniBatchJobs(batches: MicroBatch[], clipEps: number, tokenCount: number, sharePrefix: boolean): GradientJob[] {
  return batches.map((batch) => ({ batch, clipEps, tokenCount, ...(sharePrefix ? { sharePrefix } : {}) }));
}

/** Stage 3a's result: the mini-batch's gradient and loss, its micro-batches' parts summed in order. */
function miniBatchGradient(batches: MicroBatch[], parts: Gradient[]): MiniBatchGradient {
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

/** An agent the update trains: its policy, its samples in mini-batches, and its [entropy, clipped, kl] sums. */
interface Trained { agent: string; policy: AgentPolicy; minis: number[][]; side: number[] }

/** Stage 3, one round: each trained agent's mini-batch `round`, its token count and micro-batches (truncated rows alone: nothing to learn from). */
function roundBatches(samples: TrainSample[], trained: Trained[], round: number, s: UpdateSettings,
  values: { adv: number[][]; old: number[][]; ref: number[][] }): { t: Trained; tokenCount: number; batches: MicroBatch[] }[] {
  return trained.flatMap((t) => {
    const mini = t.minis[round];
    if (!mini) return [];
    const tokenCount = mini.reduce((a, i) => a + (samples[i].truncated ? 0 : samples[i].action.length), 0);
    if (tokenCount === 0) return [];
    const batches = microBatches(samples, mini, s.microBatchSize)
      .filter((micro) => !micro.every((i) => samples[i].truncated))
      .map((micro) => makeBatch(samples, values, micro));
    return [{ t, tokenCount, batches }];
  });
}

/** Stage 3b: one agent's clipped AdamW step on its mini-batch's gradient, counted in its metrics. */
async function stepAgent(policy: AgentPolicy, g: MiniBatchGradient, tokenCount: number, m: AgentUpdateMetrics, maxGradNorm: number): Promise<void> {
  const { gradNorm, skipped } = await clippedStep(policy, g.grads!, g.loss, maxGradNorm);
  m.steps++;
  if (skipped) {
    m.skippedSteps++;
    m.skipReasons.push(skipped);
  }
  m.loss += g.loss;
  m.gradNorm += gradNorm;
  m.tokens += tokenCount;
}

/**
 * The update (see the top comment): check -> stage 1 log-probs -> stage 2 advantages -> stage 3 per
 * trainable agent, per mini-batch: gradient (3a) and clipped step (3b). Returns per-agent metrics
 * and each sample's mean advantage (what the trainer records on its action).
 */
export async function policyUpdate(gradients: Gradients, policies: Map<string, AgentPolicy>, samples: TrainSample[],
  settings: Partial<UpdateSettings> = {}, memory?: RefMemory): Promise<UpdateMetrics> {
  const s = { ...DEFAULT_UPDATE, ...settings };
  const started = performance.now();
  if (!s.maskTruncated) samples = samples.map((x) => ({ ...x, truncated: false }));
  checkSamples(samples, policies);
  if (s.batched && gradients.batchedLogProbs && gradients.batchedGradients) return batchedPolicyUpdate(gradients, policies, samples, s, memory);
  const byAgent = new Map<string, number[]>();
  samples.forEach((x, i) => byAgent.set(x.agent, [...(byAgent.get(x.agent) ?? []), i]));

  const { old, ref } = await samplingLogProbs(gradients, policies, samples, byAgent, s, memory);
  const { advantages, meanKl } = computeAdvantages(
    samples.map((x, i) => ({ ...x, oldLogprobs: old[i], refLogprobs: ref[i] })),
    { klCoef: s.klCoef, whitening: s.whitening },
  );

  const agents: Record<string, AgentUpdateMetrics> = {};
  const trained: Trained[] = [];
  for (const [agent, idx] of byAgent) {
    const policy = policies.get(agent)!;
    agents[agent] = agentMetrics(samples, idx);
    if (policy.trainable) trained.push({ agent, policy, minis: chunks(idx, Math.ceil(idx.length / s.miniBatches)), side: [0, 0, 0] });
  }
  let cells = 0;
  const rounds = Math.max(0, ...trained.map((t) => t.minis.length));
  for (let epoch = 0; epoch < s.epochs; epoch++) {
    for (let round = 0; round < rounds; round++) {
      const due = roundBatches(samples, trained, round, s, { adv: advantages, old, ref });
      // Each agent's gradient depends on its own adapter alone: where the compute takes several agents' jobs together
      // (`gradientsOfMany`), the round's are asked at once; else each agent's is computed just before its step.
      const jobs = due.map((d) => miniBatchJobs(d.batches, s.clipEps, d.tokenCount, s.sharedPrefix));
      const together = gradients.gradientsOfMany && due.length > 1
        ? await gradients.gradientsOfMany(due.map((d, k) => ({ adapter: d.t.policy.adapter, jobs: jobs[k] }))) : null;
      for (const [k, { t, tokenCount, batches }] of due.entries()) {
        const g = miniBatchGradient(batches, together?.[k] ?? await gradients.gradients(t.policy.adapter, jobs[k]));
        for (const part of g.sides) part.forEach((v, j) => (t.side[j] += v));
        cells += g.cells;
        if (g.grads !== null) await stepAgent(t.policy, g, tokenCount, agents[t.agent], s.maxGradNorm);
      }
    }
  }
  for (const t of trained) closeMetrics(agents[t.agent], t.side);
  const seconds = (performance.now() - started) / 1000;
  const sampleAdvantages = advantages.map((a) => (a.length ? a.reduce((x, y) => x + y, 0) / a.length : 0));
  return { agents, kl: meanKl, tokensPerSecond: cells / Math.max(seconds, 1e-9), seconds, sampleAdvantages };
}
