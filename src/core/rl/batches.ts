/**
 * The update's samples and their micro-batches: right-padded [B, T] rows of prompt + action
 * tokens, which positions are action tokens, and the no-gradient log-prob passes over them.
 *
 * For: update.ts (its stages build their jobs from these) and whatever runs those jobs.
 * Not for: the loss or the optimizer step (update.ts).
 *
 * Example: samples prompt [1, 2], action [3] and prompt [4], action [5, 6]:
 *          makeBatch(samples) -> ids [[1, 2, 3], [4, 5, 6]], mask all 1, actionMask [[0, 1], [1, 1]]
 *          (position t of T-1 predicts token t+1).
 */
import type { LoraAdapter } from '../engine/lora/adapter.ts';
import type { CausalLM } from '../engine/model/llama.ts';
import { rowLogProbs } from '../engine/model/score.ts';
import { promptBatches } from '../engine/model/generate.ts';
import { MAX_TRAIN_ATTENTION_CELLS } from '../engine/model/memory-plan.ts';

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
  /** 'state' whitening: the mean reward this agent's prompt has earned before (advantages.ts StateBaselines). */
  baseline?: number;
  /** The sampler's log-prob of each action token (a rollout's; the policy's own at temperature 1: rl/update-steps.ts). */
  sampledLogprobs?: number[];
}

/** One micro-batch's right-padded rows, as plain arrays (what a gradient is computed on, here or elsewhere). */
export interface MicroBatch {
  ids: number[][]; // [B, T]
  mask: number[][]; // [B, T]
  /** [B, T-1] 1 where the log-prob is of an action token (and the action is not truncated). */
  actionMask: number[][];
  /** [B, T-1] advantage at action positions, 0 elsewhere. */
  advantages: number[][];
  /** [B, T-1] old log-prob at action positions. */
  oldLogprobs: number[][];
  /** [B, T-1] reference-model log-prob at action positions. */
  refLogprobs: number[][];
}

/** Right-pad prompt+action rows. Example: prompt [1,2], action [3] -> ids [1,2,3], action position 1 of T-1. */
export function makeBatch(samples: TrainSample[], perToken?: { adv: number[][]; old: number[][]; ref: number[][] }, rows?: number[]): MicroBatch {
  const idx = rows ?? samples.map((_, i) => i);
  const width = Math.max(...idx.map((i) => samples[i].prompt.length + samples[i].action.length));
  const b: MicroBatch = { ids: [], mask: [], actionMask: [], advantages: [], oldLogprobs: [], refLogprobs: [] };
  for (const i of idx) {
    const s = samples[i];
    const seq = [...s.prompt, ...s.action];
    const pad = width - seq.length;
    b.ids.push([...seq, ...new Array(pad).fill(0)]);
    b.mask.push([...seq.map(() => 1), ...new Array(pad).fill(0)]);
    const actionRow = (values?: number[]) => {
      const row = new Array(width - 1).fill(0);
      s.action.forEach((_, j) => (row[s.prompt.length - 1 + j] = values ? values[j] : s.truncated ? 0 : 1));
      return row;
    };
    b.actionMask.push(actionRow());
    b.advantages.push(actionRow(perToken?.adv[i]));
    b.oldLogprobs.push(actionRow(perToken?.old[i]));
    b.refLogprobs.push(actionRow(perToken?.ref[i]));
  }
  return b;
}

export function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}


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
export function logProbRows(samples: TrainSample[], rows: number[]): { ids: number[][]; mask: number[][]; perRow: number[][] } {
  const b = makeBatch(samples, undefined, rows);
  return { ids: b.ids, mask: b.mask, perRow: actionRows(samples, rows, b.ids[0].length) };
}

/** Log-probs at flat positions (b * (T-1) + t) of padded rows, under the adapter (null: the reference). */
export interface LogProbJob {
  adapter: LoraAdapter | null;
  ids: number[][]; // [B, T]
  mask: number[][]; // [B, T]
  positions: number[];
  /** Per row, a group label: rows of a group run their common prefix once (update.sharedPrefix; engine/model/shared-prefix.ts). */
  prefixGroups?: number[];
}

/** Log-probs at flat positions of padded rows under `adapter` (null = reference), no gradient. */
export async function positionLogProbs(model: CausalLM, ids: number[][], mask: number[][], positions: number[],
  adapter: LoraAdapter | null, prefixGroups?: number[]): Promise<Float32Array> {
  const { logp } = rowLogProbs(model, ids, positions, { attentionMask: mask, adapter, prefixGroups });
  const host = (await logp.data()) as Float32Array;
  logp.dispose();
  return host;
}

/** Splits a micro-batch's flat log-probs back into one array per sample. */
export function perSample(out: number[][], rows: number[], perRow: number[][], host: Float32Array): void {
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

