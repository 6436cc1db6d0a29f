/**
 * How unsure a judge is of each action, and which actions to ask a person about.
 *
 * The measure: the spread of the judge's own score distribution. The judge answers greedily as it
 * does when coaching (its scratchpad, then "PROCESS_SCORE: "); at that point its next-token
 * probabilities over the digits are a distribution over the scores 0..10 ("1" then "0" is 10, read
 * with one more position). The standard deviation of that distribution is the spread.
 *
 * Why the spread and not an ensemble (Christiano et al. 2017; ActPRM): an ensemble needs several
 * judges. The sandbox's judges have no heads to disagree, no dropout (only LoRA has it), and a judge a
 * person taught has no sibling checkpoints; training several would multiply teaching time. The spread
 * needs the judge alone and one forward pass over the answer it already gives. Its known blind spot:
 * a judge that is sure and wrong is never asked about (docs/judges.md measures how much that costs
 * against random picks).
 *
 * For: `mappa judge ask`, the corrections benchmark, later the page's "ask me" cards.
 * Not for: scoring as a coach (coach.ts) or teaching (teach.ts).
 *
 * Example: const r = await readJudge(judge, [prompt]);
 *            -> [{answer: '2\nPROCESS_SCORE: 10', score: 10, dist: [0.38, 0, ..., 0.61], mean: 6.1, spread: 4.9}]
 *          pickUncertain(readings, 1) -> [{index: 0, why: 'spread 4.9: P(0) 0.38, P(10) 0.61'}]
 */
import * as tf from '@tensorflow/tfjs-core';
import { alikeBatches, generate, promptBatches } from '../engine/model/generate.ts';
import { stopTokenIds, type LoadedModel } from '../engine/model/load.ts';
import type { Rng } from '../stats/rng.ts';
import { parseCoachAnswer } from './coach-format.ts';

export interface JudgeReading {
  /** The judge's greedy answer, as a coach reads it. */
  answer: string;
  /** The score in that answer (null: unparsable). */
  score: number | null;
  /** P(score = s), s = 0..10, at the score's position; null when the answer has no score line to read it at. */
  dist: number[] | null;
  /** Expected score and standard deviation under `dist` (NaN without one). */
  mean: number;
  spread: number;
}

/** The chat ids a judge reads for one coach prompt (ModelCoach's encoding). */
function promptIds(judge: LoadedModel, prompt: string): number[] {
  return judge.tokenizer!.encodeChat([{ role: 'user', content: prompt }], { addGenerationPrompt: true });
}

/** The judge's greedy answers (token ids and text) to coach prompts, `maxBatch` rows at a time. */
async function judgeAnswers(judge: LoadedModel, prompts: string[], maxBatch = 16): Promise<{ tokens: number[]; text: string }[]> {
  const tok = judge.tokenizer;
  if (!tok) throw new Error(`${judge.source.name}: the judge needs a tokenizer`);
  const ids = prompts.map((p) => promptIds(judge, p));
  const out: { tokens: number[]; text: string }[] = new Array(prompts.length);
  for (const batch of alikeBatches(ids, maxBatch)) {
    const gens = await generate(judge.model, batch.map((i) => ids[i]), {
      maxNewTokens: judge.generation.maxNewTokens ?? 16, temperature: 0, eosTokenIds: stopTokenIds(judge),
    });
    gens.forEach((g, j) => (out[batch[j]] = { tokens: g.tokens, text: tok.decode(g.tokens, { skipSpecialTokens: true }) }));
  }
  return out;
}

/**
 * How many answer tokens come before the score's first digit ("...PROCESS_SCORE: " then a digit token),
 * or -1 (no score line, or a first digit merged with other text into one token).
 */
function scorePosition(judge: LoadedModel, tokens: number[], digits: Set<number>): number {
  const tok = judge.tokenizer!;
  for (let j = 0; j < tokens.length; j++) {
    if (/PROCESS_SCORE\s*:\s*\d$/.test(tok.decode(tokens.slice(0, j + 1), { skipSpecialTokens: true }))) return digits.has(tokens[j]) ? j : -1;
  }
  return -1;
}

/**
 * The judge's score distribution for each prompt (see the file's comment). One forward pass per
 * prompt: [prompt, answer up to the score, "1"]; the logits before "1" give the first digit, those
 * after it split "1" into 1 and 10. Rows are right-padded (causal attention never looks ahead).
 */
export async function readJudge(judge: LoadedModel, prompts: string[], maxBatch = 16): Promise<JudgeReading[]> {
  const tok = judge.tokenizer!;
  const digitIds = Array.from({ length: 10 }, (_, d) => tok.encode(String(d), { addSpecialTokens: false }));
  const digitsOk = digitIds.every((x) => x.length === 1);
  const answers = await judgeAnswers(judge, prompts, maxBatch);
  const rows: { index: number; ids: number[] }[] = [];
  const readings: JudgeReading[] = answers.map((a, i) => {
    const p = parseCoachAnswer(a.text, false);
    const at = digitsOk ? scorePosition(judge, a.tokens, new Set(digitIds.map(([id]) => id))) : -1;
    if (at >= 0) rows.push({ index: i, ids: [...promptIds(judge, prompts[i]), ...a.tokens.slice(0, at), digitIds[1][0]] });
    return { answer: a.text, score: p.ok ? p.score : null, dist: null, mean: NaN, spread: NaN };
  });
  for (const batch of promptBatches(rows.map((r) => r.ids.length), maxBatch)) {
    const width = Math.max(...batch.map((b) => rows[b].ids.length));
    const ids = batch.map((b) => [...rows[b].ids, ...new Array(width - rows[b].ids.length).fill(0)]);
    const mask = batch.map((b) => rows[b].ids.map(() => 1).concat(new Array(width - rows[b].ids.length).fill(0)));
    const { logits } = judge.model.forward(ids, { attentionMask: mask }); // [B, T, V]
    const probs = tf.tidy(() => tf.softmax(logits, -1));
    const data = (await probs.array()) as number[][][];
    tf.dispose([logits, probs]);
    batch.forEach((b, j) => {
      const len = rows[b].ids.length;
      const first = digitIds.map(([id]) => data[j][len - 2][id]);
      const afterOne = data[j][len - 1];
      // After "1" only "0" makes a score (10); any other digit would not parse, so it is left out.
      const ten = afterOne[digitIds[0][0]] / Math.max(1e-12, 1 - digitIds.slice(1).reduce((s, [id]) => s + afterOne[id], 0));
      readings[rows[b].index] = { ...readings[rows[b].index], ...distribution(first, Math.min(1, ten)) };
    });
  }
  return readings;
}

/**
 * Scores 0..10 from the first digit's probabilities (renormalised over the digits) and the share of
 * "1" that goes on to "0". Example: distribution([0.5, 0.5, 0, 0, 0, 0, 0, 0, 0, 0], 1)
 *   -> {dist: [0.5, 0, ..., 0, 0.5], mean: 5, spread: 5}
 */
export function distribution(first: number[], tenShare: number): { dist: number[]; mean: number; spread: number } {
  const total = first.reduce((a, b) => a + b, 0) || 1;
  const dist = first.map((p) => p / total);
  dist.push(dist[1] * tenShare);
  dist[1] *= 1 - tenShare;
  const mean = dist.reduce((s, p, k) => s + p * k, 0);
  const spread = Math.sqrt(dist.reduce((s, p, k) => s + p * (k - mean) ** 2, 0));
  return { dist, mean, spread };
}

/** An action picked to ask the person about: its index in the batch, and why it was picked. */
export interface PickedAction {
  index: number;
  why: string;
}

const fmt = (x: number) => x.toFixed(2).replace(/^0/, '');

/** The `k` actions the judge is least sure of (largest spread; unreadable answers first, as the least sure of all). */
export function pickUncertain(readings: readonly JudgeReading[], k: number): PickedAction[] {
  const key = (r: JudgeReading) => (r.dist ? r.spread : Infinity);
  const order = readings.map((_, i) => i).sort((a, b) => key(readings[b]) - key(readings[a]) || a - b);
  return order.slice(0, k).map((i) => {
    const r = readings[i];
    if (!r.dist) return { index: i, why: 'its answer has no score line to read a distribution at: the least sure of all' };
    const top = r.dist.map((p, s) => [s, p] as const).sort((a, b) => b[1] - a[1]).slice(0, 2);
    return { index: i, why: `spread ${r.spread.toFixed(1)} points: ${top.map(([s, p]) => `P(${s}) ${fmt(p)}`).join(', ')}` };
  });
}

/** `k` actions at random (the baseline the uncertainty rule is measured against). */
export function pickRandom(n: number, k: number, rng: Rng): PickedAction[] {
  return rng.shuffle(Array.from({ length: n }, (_, i) => i)).slice(0, k).map((index) => ({ index, why: 'drawn at random' }));
}
