/**
 * The per-agent policy-gradient update (MAPPA section 4): every action is one sample for its own
 * agent's LoRA adapter; REINFORCE++ advantages over the whole batch; PPO-clipped loss over the
 * action's tokens only; AdamW on the adapter; global-norm gradient clipping; micro-batches with
 * gradient accumulation so memory is bounded by the micro-batch.
 *
 * For: `policyUpdate(model, policies, samples, settings)` once per training iteration.
 * Not for: producing samples (the MAPPA loop) or advantage maths (advantages.ts).
 *
 * Story of one call (one function per stage, `policyUpdate` at the end calls them in order):
 *   1. log-probs of every action under the sampling policy (adapter as it is now) and the
 *      reference (adapter off) — no gradient (`samplingLogProbs`);
 *   2. advantages (KL folded into the per-token reward, whitened; advantages.ts);
 *   3. per agent, per mini-batch: accumulate d(loss)/d(adapter) over micro-batches
 *      (`miniBatchGradient`), clip by the global norm, one AdamW step — unless loss or gradient is
 *      not finite: then skip, keep the adapter as it was, and report it (`clippedStep`).
 * Lanes (other threads) take a share of stages 1 and 3a's micro-batches (`Sharing`).
 */
import * as tf from '@tensorflow/tfjs-core';
import type { LoraAdapter } from '../engine/lora/adapter.ts';
import type { CausalLM } from '../engine/model/llama.ts';
import { rowLogProbs } from '../engine/model/score.ts';
import type { AdamW } from './adamw.ts';
import { computeAdvantages, type Whitening } from './advantages.ts';
import { flattenAdapter, shareJobs, unflatten, type AdapterSpec, type LaneBatch, type UpdateLanes } from './lanes.ts';
import { chunks, logProbRows, makeBatch, microBatches, perSample, positionLogProbs, type Batch, type TrainSample } from './batches.ts';

export { actionLogProbs, MAX_TRAIN_TOKENS, microBatches, type TrainSample } from './batches.ts';


export interface UpdateSettings {
  klCoef: number;
  clipEps: number;
  whitening: Whitening;
  microBatchSize: number;
  /** Optimizer steps per agent per update (the agent's samples split into this many mini-batches). */
  miniBatches: number;
  epochs: number;
  maxGradNorm: number;
  /**
   * Mask actions that hit their token budget out of the loss (MAPPA.md: "truncated completions are
   * masked out"). Turn off where the budget cuts actions that still did their job: a data-team SQL
   * block cut right after its last statement runs, is scored on what it did, and masking it would
   * leave only the short replies of the successful trajectories to learn from.
   */
  maskTruncated: boolean;
}

export const DEFAULT_UPDATE: UpdateSettings = {
  klCoef: 0.01, clipEps: 0.2, whitening: 'batch', microBatchSize: 4, miniBatches: 1, epochs: 1, maxGradNorm: 1, maskTruncated: true,
};

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

/**
 * The PPO-clipped loss of one micro-batch, normalised by `tokenCount` (all action tokens of the
 * mini-batch), plus side metrics (summed, not normalised) kept out of the gradient path.
 */
export function ppoLoss(model: CausalLM, adapter: LoraAdapter, b: Batch, clipEps: number, tokenCount: number,
  side?: tf.Tensor1D[]): tf.Scalar {
  // Only positions that predict an action token are projected to the vocabulary.
  const rows: number[] = [];
  b.actionMask.forEach((row, r) => row.forEach((m, t) => m && rows.push(r * row.length + t)));
  const at = (grid: number[][]) => tf.tensor1d(rows.map((k) => grid[Math.floor(k / grid[0].length)][k % grid[0].length]));
  const { logp, entropy } = rowLogProbs(model, b.ids, rows, { attentionMask: b.mask, adapter, train: true, withEntropy: !!side }); // [N]
  const adv = at(b.advantages);
  const ratio = tf.exp(tf.sub(logp, at(b.oldLogprobs)));
  const surr1 = tf.mul(ratio, adv);
  const surr2 = tf.mul(tf.clipByValue(ratio, 1 - clipEps, 1 + clipEps), adv);
  const loss = tf.div(tf.sum(tf.neg(tf.minimum(surr1, surr2))), tokenCount) as tf.Scalar;
  if (side) {
    // Entropy of the full next-token distribution, clip indicator and k1 KL to the reference (metrics only).
    // Kept past the gradient tape's cleanup; read asynchronously by the caller ([entropy, clipped, kl] sums).
    side.push(tf.keep(tf.stack([
      tf.sum(entropy!),
      tf.sum(tf.cast(tf.greater(tf.abs(tf.sub(ratio, 1)), clipEps), 'float32')),
      tf.sum(tf.sub(logp, at(b.refLogprobs))),
    ]) as tf.Tensor1D));
  }
  return loss;
}

/** Other threads for the update (lanes.ts): they compute a share of the micro-batches, with the same result. */
export interface UpdateThreads {
  lanes?: UpdateLanes | null;
  /** A lane failed: its share is redone on this thread, and the caller hears why. */
  onLaneError?: (e: Error) => void;
}

/**
 * Micro-batches shared between this thread and the lanes; after a lane fails, everything runs here
 * (the failed share is redone here too, so the result is the same), and the caller hears why once.
 */
class Sharing {
  private failed = false;

  constructor(readonly lanes: UpdateLanes | null | undefined, private readonly onLaneError?: (e: Error) => void) {}

  /** Whether lanes take part (an adapter is then flattened once for them). */
  get active(): boolean {
    return Boolean(this.lanes?.count) && !this.failed;
  }

  run<J extends { ids: number[][] }, R>(jobs: J[], local: (j: J) => Promise<R>, remote: (lanes: UpdateLanes, lane: number, j: J) => Promise<R>): Promise<R[]> {
    const lanes = this.lanes;
    return shareJobs(jobs, rowsCost, this.active ? lanes!.count : 0, local,
      (lane, j) => remote(lanes!, lane, j), (e) => {
        this.failed = true;
        this.onLaneError?.(e);
      });
  }
}

/** A job's cost for sharing: its padded [rows, T] cells. */
const rowsCost = (j: { ids: number[][] }) => j.ids.length * j.ids[0].length;

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
 * and the reference (adapter off), no gradient; each micro-batch a job for this thread or a lane.
 */
async function samplingLogProbs(model: CausalLM, policies: Map<string, AgentPolicy>, samples: TrainSample[], byAgent: Map<string, number[]>,
  microBatchSize: number, sharing: Sharing): Promise<{ old: number[][]; ref: number[][] }> {
  const old: number[][] = new Array(samples.length);
  const ref: number[][] = new Array(samples.length);
  interface LogProbJob { rows: number[]; adapter: LoraAdapter | null; spec: AdapterSpec | null; into: number[][]; ids: number[][]; mask: number[][]; perRow: number[][] }
  const jobs: LogProbJob[] = [];
  for (const [agent, idx] of byAgent) {
    const adapter = policies.get(agent)!.adapter;
    const spec = sharing.lanes?.count ? flattenAdapter(adapter) : null;
    for (const rows of microBatches(samples, idx, microBatchSize)) {
      const r = logProbRows(samples, rows);
      jobs.push({ rows, adapter, spec, into: old, ...r }, { rows, adapter: null, spec: null, into: ref, ...r });
    }
  }
  const results = await sharing.run(jobs,
    (j) => positionLogProbs(model, j.ids, j.mask, j.perRow.flat(), j.adapter),
    async (lanes, lane, j) => {
      const r = await lanes.run(lane, { kind: 'logprobs', adapter: j.spec, ids: j.ids, mask: j.mask, positions: j.perRow.flat() });
      if (r.kind !== 'logprobs') throw new Error('lane answered a log-prob job with gradients');
      return r.logp;
    });
  jobs.forEach((j, k) => perSample(j.into, j.rows, j.perRow, results[k]));
  return { old, ref };
}

/** One mini-batch's gradient and loss, summed over its micro-batches in order. */
interface MiniBatchGradient {
  grads: tf.Tensor[] | null;
  loss: number;
  /** Padded tokens the micro-batches ran (for tokens per second). */
  cells: number;
}

/**
 * Stage 3a: the PPO gradient of one mini-batch, its micro-batches shared with the lanes; each
 * micro-batch's side metrics (entropy, clipped, kl sums) are added to `side` in order.
 */
async function miniBatchGradient(model: CausalLM, policy: AgentPolicy, batches: LaneBatch[], clipEps: number, tokenCount: number,
  sharing: Sharing, side: number[]): Promise<MiniBatchGradient> {
  const vars = policy.adapter.variables();
  const spec = sharing.active ? flattenAdapter(policy.adapter) : null;
  const parts = await sharing.run(batches,
    async (b) => {
      const sideOut: tf.Tensor1D[] = [];
      const { value, grads } = tf.variableGrads(() => ppoLoss(model, policy.adapter, b, clipEps, tokenCount, sideOut), vars);
      const loss = (await value.data())[0];
      const sums = Array.from(await sideOut[0].data()) as [number, number, number];
      tf.dispose([value, ...sideOut]);
      return { loss, grads: vars.map((v) => grads[v.name]), side: sums };
    },
    async (lanes, lane, b) => {
      const r = await lanes.run(lane, { kind: 'gradients', adapter: spec ?? flattenAdapter(policy.adapter), batch: b, clipEps, tokenCount });
      if (r.kind !== 'gradients') throw new Error('lane answered a gradient job with log-probs');
      return { loss: r.loss, grads: unflatten(r.grads, vars), side: r.side };
    });
  const out: MiniBatchGradient = { grads: null, loss: 0, cells: 0 };
  for (const [k, part] of parts.entries()) {
    out.cells += rowsCost(batches[k]);
    out.loss += part.loss;
    if (out.grads === null) out.grads = part.grads;
    else {
      const prev: tf.Tensor[] = out.grads;
      out.grads = prev.map((a, j) => tf.add(a, part.grads[j]));
      prev.forEach((t) => t.dispose());
      part.grads.forEach((t) => t.dispose());
    }
    part.side.forEach((v, j) => (side[j] += v));
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
export async function policyUpdate(model: CausalLM, policies: Map<string, AgentPolicy>, samples: TrainSample[],
  settings: Partial<UpdateSettings> = {}, opts: UpdateThreads = {}): Promise<UpdateMetrics> {
  const s = { ...DEFAULT_UPDATE, ...settings };
  const started = performance.now();
  if (!s.maskTruncated) samples = samples.map((x) => ({ ...x, truncated: false }));
  checkSamples(samples, policies);
  const sharing = new Sharing(opts.lanes, opts.onLaneError);
  const byAgent = new Map<string, number[]>();
  samples.forEach((x, i) => byAgent.set(x.agent, [...(byAgent.get(x.agent) ?? []), i]));

  const { old, ref } = await samplingLogProbs(model, policies, samples, byAgent, s.microBatchSize, sharing);
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
        const g = await miniBatchGradient(model, policy, batches, s.clipEps, tokenCount, sharing, side);
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
