/**
 * The per-agent policy-gradient update (MAPPA section 4): every action is one sample for its own
 * agent's LoRA adapter; REINFORCE++ advantages over the whole batch; PPO-clipped loss over the
 * action's tokens only; AdamW on the adapter; global-norm gradient clipping; micro-batches with
 * gradient accumulation so memory is bounded by the micro-batch.
 *
 * For: `policyUpdate(model, policies, samples, settings)` once per training iteration.
 * Not for: producing samples (the MAPPA loop) or advantage maths (advantages.ts).
 *
 * Story of one call:
 *   1. log-probs of every action under the sampling policy (adapter as it is now) and the
 *      reference (adapter off) — no gradient;
 *   2. advantages (KL folded into the per-token reward, whitened);
 *   3. per agent, per mini-batch: accumulate d(loss)/d(adapter) over micro-batches, clip by the
 *      global norm, one AdamW step — unless loss or gradient is not finite: then skip, keep the
 *      adapter as it was, and report it.
 */
import * as tf from '@tensorflow/tfjs-core';
import type { LoraAdapter } from '../engine/lora/adapter.ts';
import type { CausalLM } from '../engine/model/llama.ts';
import { rowLogProbs } from '../engine/model/score.ts';
import { promptBatches } from '../engine/model/generate.ts';
import type { AdamW } from './adamw.ts';
import { computeAdvantages, type Whitening } from './advantages.ts';
import { flattenAdapter, shareJobs, unflatten, type AdapterSpec, type LaneBatch, type UpdateLanes } from './lanes.ts';

export interface TrainSample {
  agent: string;
  prompt: number[];
  action: number[];
  /** The action's reward (coach score / 10 under process supervision). */
  reward: number;
  /** Per-token shaping rewards for the action's tokens (optional). */
  tokenRewards?: number[];
  /** Prompt group (for GRPO-style whitening). */
  group?: string;
  /** The action hit its token budget: masked out of the loss. */
  truncated?: boolean;
}

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

/** One micro-batch's right-padded rows (lanes.ts `LaneBatch`: the same plain arrays travel to a lane). */
type Batch = LaneBatch;

/** Right-pad prompt+action rows. Example: prompt [1,2], action [3] -> ids [1,2,3], action position 1 of T-1. */
function makeBatch(samples: TrainSample[], perToken?: { adv: number[][]; old: number[][]; ref: number[][] }, rows?: number[]): Batch {
  const idx = rows ?? samples.map((_, i) => i);
  const width = Math.max(...idx.map((i) => samples[i].prompt.length + samples[i].action.length));
  const b: Batch = { ids: [], mask: [], actionMask: [], advantages: [], oldLogprobs: [], refLogprobs: [] };
  for (const i of idx) {
    const s = samples[i];
    const seq = [...s.prompt, ...s.action];
    const pad = width - seq.length;
    b.ids.push([...seq, ...new Array(pad).fill(0)]);
    b.mask.push([...seq.map(() => 1), ...new Array(pad).fill(0)]);
    const lane = (values?: number[]) => {
      const row = new Array(width - 1).fill(0);
      s.action.forEach((_, j) => (row[s.prompt.length - 1 + j] = values ? values[j] : s.truncated ? 0 : 1));
      return row;
    };
    b.actionMask.push(lane());
    b.advantages.push(lane(perToken?.adv[i]));
    b.oldLogprobs.push(lane(perToken?.old[i]));
    b.refLogprobs.push(lane(perToken?.ref[i]));
  }
  return b;
}

function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/**
 * Attention cells (rows x longest^2) one micro-batch may hold. The backward pass keeps every layer's
 * [B, heads, T, T] scores, and tfjs-wasm addresses about 2 GB safely. Measured on the shipped model
 * (LoRA on all projections): 4 rows x 1024 tokens abort, 2 x 1024 and 1 x 2048 pass. Longer samples go
 * fewer at a time; gradients accumulate over micro-batches, so the update is the same.
 */
const MAX_TRAIN_ATTENTION_CELLS = 2 * 1024 * 1024;

/**
 * The longest sample (prompt + action tokens) the trainer updates on: one alone in a backward pass
 * passes at 2048 tokens and overflows the wasm heap at 3000 (measured as above); 1536 keeps a margin.
 * The trainer leaves longer samples out of the update and counts them (filters.droppedOverContext).
 */
export const MAX_TRAIN_TOKENS = 1536;

/** Sample indices in micro-batches of at most maxRows rows and MAX_TRAIN_ATTENTION_CELLS cells.
 *  Example: 4 math samples of ~600 tokens -> one micro-batch; 4 data samples of 1400 -> four. */
export function microBatches(samples: TrainSample[], idx: number[], maxRows: number): number[][] {
  const lengths = idx.map((i) => samples[i].prompt.length + samples[i].action.length);
  return promptBatches(lengths, maxRows, MAX_TRAIN_ATTENTION_CELLS).map((b) => b.map((k) => idx[k]));
}

/** Flat [B, T-1] rows of each batch row's action tokens, in order. */
function actionRows(samples: TrainSample[], rows: number[], width: number): number[][] {
  return rows.map((i, r) => samples[i].action.map((_, j) => r * (width - 1) + samples[i].prompt.length - 1 + j));
}

/** One micro-batch's flat action positions and padded rows, for a log-prob pass. */
function logProbRows(samples: TrainSample[], rows: number[]): { ids: number[][]; mask: number[][]; perRow: number[][] } {
  const b = makeBatch(samples, undefined, rows);
  return { ids: b.ids, mask: b.mask, perRow: actionRows(samples, rows, b.ids[0].length) };
}

/** Log-probs at flat positions of padded rows under `adapter` (null = reference), on this thread, no gradient. */
async function positionLogProbs(model: CausalLM, ids: number[][], mask: number[][], positions: number[], adapter: LoraAdapter | null): Promise<Float32Array> {
  const { logp } = rowLogProbs(model, ids, positions, { attentionMask: mask, adapter });
  const host = (await logp.data()) as Float32Array;
  logp.dispose();
  return host;
}

/** Splits a micro-batch's flat log-probs back into one array per sample. */
function perSample(out: number[][], rows: number[], perRow: number[][], host: Float32Array): void {
  let at = 0;
  rows.forEach((i, r) => {
    out[i] = Array.from(host.subarray(at, at + perRow[r].length));
    at += perRow[r].length;
  });
}

/** Log-probs of each sample's action tokens under `adapter` (null = reference), no gradient. */
export async function actionLogProbs(model: CausalLM, samples: TrainSample[], adapter: LoraAdapter | null, microBatchSize: number): Promise<number[][]> {
  const out: number[][] = new Array(samples.length);
  for (const rows of microBatches(samples, samples.map((_, i) => i), microBatchSize)) {
    const { ids, mask, perRow } = logProbRows(samples, rows);
    perSample(out, rows, perRow, await positionLogProbs(model, ids, mask, perRow.flat(), adapter));
  }
  return out;
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

export async function policyUpdate(model: CausalLM, policies: Map<string, AgentPolicy>, samples: TrainSample[],
  settings: Partial<UpdateSettings> = {}, opts: UpdateThreads = {}): Promise<UpdateMetrics> {
  const { lanes, onLaneError } = opts;
  const s = { ...DEFAULT_UPDATE, ...settings };
  const started = performance.now();
  if (!s.maskTruncated) samples = samples.map((x) => ({ ...x, truncated: false }));
  for (const x of samples) {
    if (!policies.has(x.agent)) throw new Error(`policyUpdate: sample for unknown agent "${x.agent}"`);
    if (x.action.length === 0 || x.prompt.length === 0) throw new Error(`policyUpdate: a sample of "${x.agent}" has an empty prompt or action`);
    if (!Number.isFinite(x.reward)) throw new Error(`policyUpdate: a sample of "${x.agent}" has a non-finite reward ${x.reward}`);
  }
  const laneCount = lanes?.count ?? 0;
  let lanesFailed = false;
  const laneError = (e: Error) => {
    lanesFailed = true;
    onLaneError?.(e);
  };
  const share = <J, R>(jobs: J[], cost: (j: J) => number, local: (j: J) => Promise<R>, remote: (lane: number, j: J) => Promise<R>) =>
    shareJobs(jobs, cost, lanesFailed ? 0 : laneCount, local, remote, laneError);

  // 1. Sampling-policy and reference log-probs, per agent (each agent has its own adapter), every
  //    micro-batch a job for this thread or a lane.
  const old: number[][] = new Array(samples.length);
  const ref: number[][] = new Array(samples.length);
  const byAgent = new Map<string, number[]>();
  samples.forEach((x, i) => byAgent.set(x.agent, [...(byAgent.get(x.agent) ?? []), i]));
  interface LogProbJob { rows: number[]; adapter: LoraAdapter | null; spec: AdapterSpec | null; into: number[][]; ids: number[][]; mask: number[][]; perRow: number[][] }
  const lpJobs: LogProbJob[] = [];
  for (const [agent, idx] of byAgent) {
    const adapter = policies.get(agent)!.adapter;
    const spec = laneCount ? flattenAdapter(adapter) : null;
    for (const rows of microBatches(samples, idx, s.microBatchSize)) {
      const r = logProbRows(samples, rows);
      lpJobs.push({ rows, adapter, spec, into: old, ...r }, { rows, adapter: null, spec: null, into: ref, ...r });
    }
  }
  const lpResults = await share(lpJobs, (j) => j.ids.length * j.ids[0].length,
    (j) => positionLogProbs(model, j.ids, j.mask, j.perRow.flat(), j.adapter),
    async (lane, j) => {
      const r = await lanes!.run(lane, { kind: 'logprobs', adapter: j.spec, ids: j.ids, mask: j.mask, positions: j.perRow.flat() });
      if (r.kind !== 'logprobs') throw new Error('lane answered a log-prob job with gradients');
      return r.logp;
    });
  lpJobs.forEach((j, k) => perSample(j.into, j.rows, j.perRow, lpResults[k]));
  // 2. Advantages over the whole batch.
  const { advantages, meanKl } = computeAdvantages(
    samples.map((x, i) => ({ ...x, oldLogprobs: old[i], refLogprobs: ref[i] })),
    { klCoef: s.klCoef, whitening: s.whitening },
  );
  // 3. Per agent: mini-batches of accumulated micro-batch gradients (micro-batches shared with the
  //    lanes, summed in order), clipped, one AdamW step each.
  const agents: Record<string, AgentUpdateMetrics> = {};
  let tokensProcessed = 0;
  for (const [agent, idx] of byAgent) {
    const policy = policies.get(agent)!;
    const m: AgentUpdateMetrics = {
      samples: idx.length, tokens: 0, loss: 0, kl: 0, entropy: 0, clipFraction: 0, gradNorm: 0,
      meanReward: idx.reduce((a, i) => a + samples[i].reward, 0) / idx.length, steps: 0, skippedSteps: 0, skipReasons: [],
    };
    agents[agent] = m;
    if (!policy.trainable) continue;
    const vars = policy.adapter.variables();
    let sideTotals = { entropy: 0, clipped: 0, kl: 0, tokens: 0 };
    for (let epoch = 0; epoch < s.epochs; epoch++) {
      for (const mini of chunks(idx, Math.ceil(idx.length / s.miniBatches))) {
        const tokenCount = mini.reduce((a, i) => a + (samples[i].truncated ? 0 : samples[i].action.length), 0);
        if (tokenCount === 0) continue;
        const batches = microBatches(samples, mini, s.microBatchSize)
          .filter((micro) => !micro.every((i) => samples[i].truncated)) // nothing to learn from
          .map((micro) => makeBatch(samples, { adv: advantages, old, ref }, micro));
        const spec = laneCount && !lanesFailed ? flattenAdapter(policy.adapter) : null;
        const parts = await share(batches, (b) => b.ids.length * b.ids[0].length,
          async (b) => {
            const side: tf.Tensor1D[] = [];
            const { value, grads } = tf.variableGrads(() => ppoLoss(model, policy.adapter, b, s.clipEps, tokenCount, side), vars);
            const loss = (await value.data())[0];
            const sums = Array.from(await side[0].data()) as [number, number, number];
            tf.dispose([value, ...side]);
            return { loss, grads: vars.map((v) => grads[v.name]), side: sums };
          },
          async (lane, b) => {
            const r = await lanes!.run(lane, { kind: 'gradients', adapter: spec ?? flattenAdapter(policy.adapter), batch: b, clipEps: s.clipEps, tokenCount });
            if (r.kind !== 'gradients') throw new Error('lane answered a gradient job with log-probs');
            return { loss: r.loss, grads: unflatten(r.grads, vars), side: r.side };
          });
        let acc: tf.Tensor[] | null = null;
        let lossSum = 0;
        for (const [k, part] of parts.entries()) {
          tokensProcessed += batches[k].ids.length * batches[k].ids[0].length;
          lossSum += part.loss;
          if (acc === null) acc = part.grads;
          else {
            const prev: tf.Tensor[] = acc;
            acc = prev.map((a, j) => tf.add(a, part.grads[j]));
            prev.forEach((t) => t.dispose());
            part.grads.forEach((t) => t.dispose());
          }
          sideTotals.entropy += part.side[0];
          sideTotals.clipped += part.side[1];
          sideTotals.kl += part.side[2];
        }
        if (acc === null) continue;
        const norm = tf.tidy(() => tf.sqrt(tf.addN(acc!.map((g) => tf.sum(tf.square(g))))));
        const gradNorm = (await norm.data())[0];
        norm.dispose();
        m.steps++;
        if (!Number.isFinite(lossSum) || !Number.isFinite(gradNorm)) {
          m.skippedSteps++;
          m.skipReasons.push(`non-finite ${Number.isFinite(lossSum) ? 'gradient norm' : 'loss'} (loss ${lossSum}, grad norm ${gradNorm}); step skipped, adapter unchanged`);
        } else {
          const factor = gradNorm > s.maxGradNorm ? s.maxGradNorm / (gradNorm + 1e-6) : 1;
          const clipped = tf.tidy(() => acc!.map((g) => tf.mul(g, factor)));
          policy.optimizer.apply(clipped);
          clipped.forEach((t) => t.dispose());
        }
        acc.forEach((t) => t.dispose());
        m.loss += lossSum;
        m.gradNorm += gradNorm;
        sideTotals.tokens += tokenCount;
      }
    }
    const steps = Math.max(m.steps, 1);
    m.loss /= steps;
    m.gradNorm /= steps;
    m.tokens = sideTotals.tokens;
    m.entropy = sideTotals.tokens ? sideTotals.entropy / sideTotals.tokens : 0;
    m.clipFraction = sideTotals.tokens ? sideTotals.clipped / sideTotals.tokens : 0;
    m.kl = sideTotals.tokens ? sideTotals.kl / sideTotals.tokens : 0;
    sideTotals = { entropy: 0, clipped: 0, kl: 0, tokens: 0 };
  }
  const seconds = (performance.now() - started) / 1000;
  const sampleAdvantages = advantages.map((a) => (a.length ? a.reduce((x, y) => x + y, 0) / a.length : 0));
  return { agents, kl: meanKl, tokensPerSecond: tokensProcessed / Math.max(seconds, 1e-9), seconds, sampleAdvantages };
}
