/**
 * The last layer at the rows that are read. A decoder layer's queries, attention output, MLP and the final
 * norm act on each position alone; only its keys and values reach other positions. So in the last layer,
 * where nothing comes after, a position whose hidden state nobody reads needs its keys and values and
 * nothing else: a prefill reads one position a row (the last), the update's log-probs the few positions
 * that predict an action's tokens (2 of a relay row's ~11 after its shared prefix), a shared prefix none.
 *
 *   every position:   k, v = proj(rmsnorm(h))                              [B, T, H] -> cache
 *   kept slots only:  h' = h + o_proj(attn(q, k, v)), h' += mlp(rmsnorm(h')), rmsnorm   [B, m, H]
 *
 * Row b keeps the positions keep[b] (of its new tokens), padded to m slots by repeating its last one
 * (a row that keeps none takes position 0): the batch dimension stays, so a per-row adapter
 * (batched-adapter.ts) still lines up. Each product row, softmax row and norm is computed as in the
 * full pass, so the kept rows' values are the full pass's (test/unit/model/kept-rows.test.ts).
 *
 * For: CausalLM.hiddenStates's `keep` (and `lastOnly`), score.ts and shared-prefix.ts. Not for: decoding
 * one token a row (there is nothing to leave out).
 *
 * Example: keepSlots([[3, 5], [4]], 6) -> { m: 2, slots: [3, 5, 10, 10] }   (flat b * T + t, row 1 padded)
 *          keptIndex([4, 9, 10], 2, 6) -> { keep: [[4], [3, 4]], at: [0, 2, 3] }   (flat b * 6 + t; m = 2)
 */
import * as tf from '@tensorflow/tfjs-core';
import { ropeTables } from './rope.ts';

/** Slots a batch row: the longest row's kept positions, at least 1 (keepSlots and keptIndex agree on it). */
const slotsPerRow = (keep: number[][]): number => Math.max(1, ...keep.map((k) => k.length));

/** Per batch row, m slots of kept positions; `slots` [B * m] flat indices b * T + t into the new tokens. */
export function keepSlots(keep: number[][], steps: number): { m: number; slots: number[] } {
  const m = slotsPerRow(keep);
  const slots: number[] = [];
  keep.forEach((k, b) => {
    for (const t of k) if (!(Number.isInteger(t) && t >= 0 && t < steps)) throw new Error(`keep: position ${t} is outside the row's ${steps} tokens`);
    for (let j = 0; j < m; j++) slots.push(b * steps + (k.length ? k[Math.min(j, k.length - 1)] : 0));
  });
  return { m, slots };
}

/**
 * The kept positions of asked flat rows r = b * width + t (row b's position t), per batch row in order of
 * first asking, and where each asked row lands among the [B * m] kept slots.
 */
export function keptIndex(rows: number[], batch: number, width: number): { keep: number[][]; at: number[] } {
  const keep: number[][] = Array.from({ length: batch }, () => []);
  const slot = new Map<number, number>();
  const where = rows.map((r) => {
    const b = Math.floor(r / width);
    if (!slot.has(r)) {
      slot.set(r, keep[b].length);
      keep[b].push(r % width);
    }
    return [b, slot.get(r)!] as const;
  });
  const m = slotsPerRow(keep);
  return { keep, at: where.map(([b, j]) => b * m + j) };
}

/** The last layer's kept queries: what attention needs beside the full pass's keys and values. */
export interface KeptQueries {
  m: number;
  /** [B * m] flat b * T + t: the rows of the layer's input [B * T, H] the slots read. */
  index: tf.Tensor1D;
  /** RoPE tables at the slots' positions, [B, 1, m, hd]. */
  cos: tf.Tensor4D;
  sin: tf.Tensor4D;
  /** The slots' rows of the additive attention bias, [B, 1, m, S]. */
  bias: tf.Tensor4D;
}

/**
 * The slots' host arrays cut from the full pass's: `positions` [B * T] position ids, `bias` [B * T * S];
 * RoPE's cos/sin at the slots' positions from the model's inverse frequencies.
 */
export function keptQueries(slots: { m: number; slots: number[] }, positions: Int32Array, bias: Float32Array, total: number,
  invFreq: Float64Array): KeptQueries {
  const { m } = slots;
  const batch = slots.slots.length / m;
  const at = new Int32Array(slots.slots.length);
  const rows = new Float32Array(slots.slots.length * total);
  slots.slots.forEach((bt, i) => {
    at[i] = positions[bt];
    rows.set(bias.subarray(bt * total, (bt + 1) * total), i * total);
  });
  const { cos, sin } = ropeTables(invFreq, at, batch, m);
  return { m, index: tf.tensor1d(slots.slots, 'int32'), cos, sin, bias: tf.tensor4d(rows, [batch, 1, m, total]) };
}
