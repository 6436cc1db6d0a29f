/**
 * Teaching a judge from corrections: fine-tune every weight of the judge on the rated actions a person
 * gave, mixed with its earlier training data (replay) so that it does not forget what it knew, and
 * return the new weights as a safetensors file named by its content hash (a new version; the old
 * judge is never written to).
 *
 * For: `mappa judge teach`, the corrections benchmark, later the page's worker. Node and browser alike:
 * files are the caller's (src/cli/judge-store.ts writes a version folder beside the old one).
 * Not for: choosing what to ask (uncertainty.ts) or the file format (corrections.ts).
 *
 * The recipe (defaults measured in docs/judges.md, "Teaching a judge"): each epoch takes every
 * correction once and `mix` times as many replay examples drawn afresh; batches of similar length up
 * to `tokensPerBatch` tokens; Adam at a constant `lr` after a short warm-up; the loss is the answer's
 * tokens only (as the judge was built). A correction teaches the whole answer: its own `answer` when it
 * gives one, else the judge's own answer (its scratchpad) with the score line set to the verdict.
 * Shapes: ids [rows, T], logits [rows, T, V], loss weights [rows, T].
 *
 * Example: const judge = await trainableJudge(folderSource('models/relay-judge'));
 *          const r = await teachJudge(judge, [{prompt, answer: '2 2\nPROCESS_SCORE: 10'}], replay, {epochs: 4});
 *          r.hash -> 'c0ffee12…' (sha-256 of the new model.safetensors), r.safetensors -> Uint8Array
 */
import * as tf from '@tensorflow/tfjs-core';
import { expectedWeights, parseConfig, type ModelConfig } from '../engine/model/config.ts';
import { CausalLM } from '../engine/model/llama.ts';
import { decodeSafetensors, encodeSafetensors } from '../engine/model/safetensors.ts';
import { readAllBytes, type ModelSource } from '../engine/model/source.ts';
import { TextTokenizer } from '../engine/tokenizer/tokenizer.ts';
import { Rng } from '../stats/rng.ts';
import { formatCoachAnswer } from './coach-format.ts';
import type { RatedAction } from './corrections.ts';

/** One thing to teach: the coach prompt and the whole answer the judge should give. */
export interface TeachExample {
  prompt: string;
  answer: string;
}

/** A judge whose weights can be trained: its config, tokenizer and weights as variables. */
export interface TrainableJudge {
  config: ModelConfig;
  tokenizer: TextTokenizer;
  weights: Map<string, tf.Variable>;
}

export interface TeachOptions {
  epochs: number;
  /** Replay examples per correction in every epoch. */
  mix: number;
  lr: number;
  tokensPerBatch: number;
  seed: number;
  onProgress?: (info: { step: number; steps: number; loss: number; seconds: number }) => void;
  /** Stops teaching between steps (the caller then keeps the old judge). */
  signal?: AbortSignal;
}

export const TEACH_DEFAULTS: Omit<TeachOptions, 'onProgress' | 'signal'> = { epochs: 6, mix: 1, lr: 5e-4, tokensPerBatch: 4096, seed: 0 };

export interface TeachResult {
  safetensors: Uint8Array;
  /** sha-256 of `safetensors`, hex. */
  hash: string;
  steps: number;
  seconds: number;
  firstLoss: number;
  finalLoss: number;
}

/** A judge folder (or URL) read for training: weights as trainable variables. */
export async function trainableJudge(source: ModelSource): Promise<TrainableJudge> {
  const config = parseConfig(await source.readJson('config.json'), `${source.name}/config.json`);
  const tokenizer = await TextTokenizer.fromSource(source);
  const { tensors } = await decodeSafetensors(await readAllBytes(source, 'model.safetensors'), `${source.name}/model.safetensors`);
  const weights = new Map<string, tf.Variable>();
  for (const [name, shape] of expectedWeights(config)) {
    const t = tensors.get(name);
    if (!t) throw new Error(`${source.name}/model.safetensors: no tensor "${name}"`);
    weights.set(name, tf.variable(tf.tensor(t.data, shape), true, `teach/${name}`));
  }
  return { config, tokenizer, weights };
}

/**
 * The answer a correction teaches: its own `answer`, else the judge's own answer `own` with the score
 * (and ANSWER_CORRECT, when the correction gives it) set to the verdict; a bare score line when the
 * judge's answer has none. Example: teachingAnswer({score: 0, ...}, '7\nPROCESS_SCORE: 10') -> '7\nPROCESS_SCORE: 0'
 */
export function teachingAnswer(r: Pick<RatedAction, 'score' | 'correct' | 'answer'>, own: string): string {
  if (r.answer !== undefined) return r.answer;
  const score = /PROCESS_SCORE\s*:\s*-?\d+(?:\.\d+)?/i;
  if (!score.test(own)) return formatCoachAnswer(r.score, r.correct);
  let a = own.replace(score, `PROCESS_SCORE: ${Math.round(r.score)}`);
  if (r.correct !== undefined) {
    a = /ANSWER_CORRECT\s*:\s*[01]/i.test(a) ? a.replace(/ANSWER_CORRECT\s*:\s*[01]/i, `ANSWER_CORRECT: ${r.correct ? 1 : 0}`)
      : `${a}\nANSWER_CORRECT: ${r.correct ? 1 : 0}`;
  }
  return a;
}

interface Tokenized {
  ids: number[];
  /** 1 where ids[t] is an answer token (trained), else 0. */
  target: number[];
}

/** The chat a judge learns from: its prompt as ModelCoach encodes it, then the answer and <|im_end|> as targets. */
export function tokenizeExample(tok: TextTokenizer, e: TeachExample): Tokenized {
  const prompt = tok.encodeChat([{ role: 'user', content: e.prompt }], { addGenerationPrompt: true });
  const answer = tok.encode(`${e.answer}<|im_end|>`, { addSpecialTokens: false });
  return { ids: [...prompt, ...answer], target: [...prompt.map(() => 0), ...answer.map(() => 1)] };
}

/** Batches of similar length under the token budget, in a seeded random order. */
function batchesOf(examples: Tokenized[], tokensPerBatch: number, rng: Rng): Tokenized[][] {
  const sorted = [...examples].sort((a, b) => a.ids.length - b.ids.length);
  const out: Tokenized[][] = [];
  let cur: Tokenized[] = [];
  for (const e of sorted) {
    if (cur.length && Math.max(e.ids.length, cur[cur.length - 1].ids.length) * (cur.length + 1) > tokensPerBatch) {
      out.push(cur);
      cur = [];
    }
    cur.push(e);
  }
  if (cur.length) out.push(cur);
  return rng.shuffle(out);
}

/** Mean -log p of the answer tokens of one batch (right-padded; position t predicts ids[t + 1]). */
function batchLoss(model: CausalLM, vocab: number, batch: Tokenized[]): tf.Scalar {
  const width = Math.max(...batch.map((e) => e.ids.length));
  const pad = (row: number[]) => [...row, ...new Array(width - row.length).fill(0)];
  const ids = batch.map((e) => pad(e.ids)); // [rows, T]
  const mask = batch.map((e) => pad(e.ids.map(() => 1)));
  const targets = ids.map((r) => [...r.slice(1), 0]);
  const weights = batch.map((e) => pad([...e.target.slice(1), 0])); // [rows, T]
  const count = weights.flat().reduce((a, b) => a + b, 0);
  const logits = model.forward(ids, { attentionMask: mask, train: true }).logits; // [rows, T, V]
  const flat = tf.reshape(logits, [batch.length * width, vocab]);
  const logp = tf.sum(tf.mul(tf.logSoftmax(flat), tf.oneHot(tf.tensor1d(targets.flat(), 'int32'), vocab)), -1); // [rows*T]
  return tf.div(tf.neg(tf.sum(tf.mul(logp, tf.tensor1d(weights.flat())))), Math.max(1, count)) as tf.Scalar;
}

/** sha-256 of bytes, hex (Web Crypto: the same in Node and the browser). */
export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const d = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>));
  return [...d].map((b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * Teaches `judge` (its weights change in place) and returns the new weights as safetensors with their
 * hash. Refuses no corrections; an aborted `signal` throws before the next step.
 */
export async function teachJudge(judge: TrainableJudge, corrections: TeachExample[], replay: TeachExample[],
  given: Partial<TeachOptions> = {}): Promise<TeachResult> {
  const o = { ...TEACH_DEFAULTS, ...given };
  if (!corrections.length) throw new Error('teach: no corrections to teach');
  const rng = new Rng(`teach/${o.seed}`);
  // Replay examples are tokenized when drawn (a judge's earlier data may be far larger than what is replayed).
  const tokenized = new Map<number, Tokenized>();
  const draw = (i: number) => tokenized.get(i) ?? tokenized.set(i, tokenizeExample(judge.tokenizer, replay[i])).get(i)!;
  const corr = corrections.map((e) => tokenizeExample(judge.tokenizer, e));
  const epochs = Array.from({ length: o.epochs }, () => {
    const extra = replay.length ? Array.from({ length: Math.round(o.mix * corr.length) }, () => draw(rng.int(0, replay.length - 1))) : [];
    return batchesOf([...corr, ...extra], o.tokensPerBatch, rng);
  });
  const longest = Math.max(...[...corr, ...tokenized.values()].map((e) => e.ids.length));
  const positions = judge.config.maxPositionEmbeddings;
  if (longest > positions) throw new Error(`teach: an example has ${longest} tokens, over the judge's ${positions} positions`);
  const steps = epochs.reduce((s, e) => s + e.length, 0);
  const model = new CausalLM(judge.config, judge.weights as Map<string, tf.Tensor>);
  const optimizer = tf.train.adam(o.lr, 0.9, 0.95, 1e-8);
  const variables = [...judge.weights.values()];
  const warmup = Math.min(5, Math.floor(steps / 5));
  const start = performance.now();
  let step = 0;
  let firstLoss = NaN;
  let lastLoss = NaN;
  for (const batch of epochs.flat()) {
    if (o.signal?.aborted) throw new Error('teach: stopped before the end; the old judge is unchanged');
    (optimizer as unknown as { learningRate: number }).learningRate = step < warmup ? (o.lr * (step + 1)) / warmup : o.lr;
    const { value, grads } = tf.variableGrads(() => batchLoss(model, judge.config.vocabSize, batch), variables);
    lastLoss = (await value.data())[0];
    value.dispose();
    optimizer.applyGradients(grads as unknown as Parameters<typeof optimizer.applyGradients>[0]);
    tf.dispose(Object.values(grads));
    if (!Number.isFinite(lastLoss)) throw new Error(`teach: the loss became ${lastLoss} at step ${step}; lower the learning rate`);
    if (Number.isNaN(firstLoss)) firstLoss = lastLoss;
    step++;
    o.onProgress?.({ step, steps, loss: lastLoss, seconds: (performance.now() - start) / 1000 });
  }
  optimizer.dispose();
  const tensors = [];
  for (const [name, shape] of expectedWeights(judge.config)) tensors.push({ name, shape, data: (await judge.weights.get(name)!.data()) as Float32Array });
  const safetensors = encodeSafetensors(tensors, { format: 'pt' });
  return { safetensors, hash: await sha256Hex(safetensors), steps, seconds: (performance.now() - start) / 1000, firstLoss, finalLoss: lastLoss };
}

/** Frees a trainable judge's variables. */
export function disposeJudge(j: TrainableJudge): void {
  tf.dispose([...j.weights.values()]);
}
