/** Paths and readers for the parity fixtures (tiny HF checkpoints with transformers' outputs). */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from './webgpu.ts';

export const PARITY = path.join(repoRoot, 'test/fixtures/parity');

export interface ParityReference {
  cases: Record<'short' | 'long', { input_ids: number[]; logits: number[][]; next_token_logprobs?: number[] }>;
  greedy: { prompt_ids: number[]; new_ids: number[]; max_new_tokens: number };
}

export function readReference(name: string): ParityReference {
  return JSON.parse(readFileSync(path.join(PARITY, name, 'reference.json'), 'utf8'));
}

/** Largest absolute difference between two [T][V] arrays. */
export function maxAbsDiff(a: ArrayLike<number>[] | number[][], b: ArrayLike<number>[] | number[][]): number {
  let m = 0;
  for (let t = 0; t < a.length; t++) for (let j = 0; j < a[t].length; j++) m = Math.max(m, Math.abs(a[t][j] - b[t][j]));
  return m;
}
