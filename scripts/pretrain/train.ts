/**
 * Training a tiny Llama from scratch (or continuing one) on masked next-token examples, in tfjs,
 * through the project's own `CausalLM.forward`, so what is trained is exactly what is served.
 *
 * For: scripts/pretrain.ts (agent and judge models). Weights are tf.Variables under their Hugging
 * Face names; Adam with linear warm-up and cosine decay; seeded init and batch order.
 * Not for: LoRA/RL updates (src/core/rl/update.ts).
 *
 * Loss: weighted mean of -log p(ids[t] | ids[<t]): weight 1 where lossMask[t] = 1 (the targets) and
 * `promptWeight` elsewhere (0 = targets only; a small weight lets the prompt text, ~85 % of the
 * tokens, teach reading and copying too, like `train_on_inputs` in common SFT tools).
 * Batches are packed by length (examples sorted into buckets, so little padding), right-padded with
 * id 0 and masked. On wasm the embedding's gradient needs UnsortedSegmentSum, registered by
 * src/core/engine/kernels/wasm-segment-sum.ts.
 *
 * Example:
 *   const weights = initWeights(config, new Rng(0));
 *   await trainModel(config, weights, examples, { steps: 500, tokensPerBatch: 4096, lr: 3e-3, seed: 0 });
 */
import * as tf from '@tensorflow/tfjs-core';
import { expectedWeights, type ModelConfig } from '../../src/core/engine/model/config.ts';
import { CausalLM } from '../../src/core/engine/model/llama.ts';
import { Rng } from '../../src/core/stats/rng.ts';
import type { BpeModel } from './bpe.ts';
import { shardLoss, shardRows, type GradientWorkers, type Shard } from './data-parallel.ts';
import type { Example } from './transcripts.ts';

/** Seeded init: normal(0, 0.02) for matrices (residual outputs scaled by 1/sqrt(2 * layers)), ones for norms. */
export function initWeights(config: ModelConfig, rng: Rng): Map<string, tf.Variable> {
  const weights = new Map<string, tf.Variable>();
  const residualStd = 0.02 / Math.sqrt(2 * config.numLayers);
  for (const [name, shape] of expectedWeights(config)) {
    const size = shape.reduce((a, b) => a * b, 1);
    const data = new Float32Array(size);
    if (shape.length === 1) data.fill(1);
    else {
      const std = /o_proj|down_proj/.test(name) ? residualStd : 0.02;
      for (let i = 0; i < size; i++) data[i] = rng.normal(0, std);
    }
    weights.set(name, tf.variable(tf.tensor(data, shape), true, name));
  }
  return weights;
}

/**
 * Grow the (tied) embedding matrix for the tokens a continued tokenizer added: each new token's row
 * starts as the mean of the two tokens it merges, so the model reads it about as it read the pair.
 * Example: merge ['SE', 'LECT'] -> row('SELECT') = (row('SE') + row('LECT')) / 2.
 */
export function extendEmbeddings(weights: Map<string, tf.Variable>, base: BpeModel, grown: BpeModel): void {
  const name = 'model.embed_tokens.weight';
  const old = weights.get(name)!;
  const [rows, hidden] = old.shape as [number, number];
  const data = new Float32Array(grown.vocab.size * hidden);
  data.set(old.dataSync() as Float32Array);
  for (const [left, right] of grown.merges.slice(base.merges.length)) {
    const id = grown.vocab.get(left + right)!;
    if (id < rows) continue;
    const l = grown.vocab.get(left)! * hidden;
    const r = grown.vocab.get(right)! * hidden;
    for (let k = 0; k < hidden; k++) data[id * hidden + k] = (data[l + k] + data[r + k]) / 2;
  }
  old.dispose();
  weights.set(name, tf.variable(tf.tensor2d(data, [grown.vocab.size, hidden]), true, name));
}

export interface TrainOptions {
  steps: number;
  /** Padded tokens per batch (rows x length); rows adapt to the bucket's length. */
  tokensPerBatch: number;
  lr: number;
  /** Weight of the loss on prompt (non-target) tokens; 0 = targets only. Default 0. */
  promptWeight?: number;
  warmup?: number;
  seed: number;
  /** Stop early after this many seconds (the schedule still ends at `steps`). */
  maxSeconds?: number;
  log?: (info: { step: number; loss: number; lr: number; tokens: number; seconds: number }) => void;
  /** Worker threads that compute a share of every batch's rows (data-parallel); none = this thread alone. */
  workers?: GradientWorkers;
}

export interface TrainReport {
  steps: number;
  tokens: number;
  trainedTokens: number;
  seconds: number;
  firstLoss: number;
  finalLoss: number;
}

/** Batches of similar length: examples sorted by length, cut into groups under the token budget, shuffled. */
export function makeBatches(examples: Example[], tokensPerBatch: number, rng: Rng): Example[][] {
  const sorted = [...examples].sort((a, b) => a.ids.length - b.ids.length);
  const batches: Example[][] = [];
  let current: Example[] = [];
  for (const e of sorted) {
    const width = Math.max(e.ids.length, ...current.map((c) => c.ids.length));
    if (current.length && width * (current.length + 1) > tokensPerBatch) {
      batches.push(current);
      current = [];
    }
    current.push(e);
  }
  if (current.length) batches.push(current);
  return rng.shuffle(batches);
}

/** Linear warm-up, then cosine decay to 10 % of the peak. `timeShare` (elapsed / time budget) moves
 *  the decay forward when a slow machine would otherwise stop mid-schedule. */
export function lrAt(step: number, total: number, peak: number, warmup: number, timeShare = 0): number {
  if (step < warmup) return (peak * (step + 1)) / warmup;
  const progress = Math.min(1, Math.max((step - warmup) / Math.max(1, total - warmup), timeShare));
  return peak * (0.1 + 0.9 * 0.5 * (1 + Math.cos(Math.PI * progress)));
}

export async function trainModel(config: ModelConfig, weights: Map<string, tf.Variable>, examples: Example[], opts: TrainOptions): Promise<TrainReport> {
  const rng = new Rng(`pretrain-batches/${opts.seed}`);
  const model = new CausalLM(config, weights as Map<string, tf.Tensor>);
  const optimizer = tf.train.adam(opts.lr, 0.9, 0.95, 1e-8);
  const variables = [...weights.values()];
  const warmup = opts.warmup ?? Math.min(100, Math.floor(opts.steps / 10));
  const start = performance.now();
  let queue: Example[][] = [];
  let tokens = 0;
  let trainedTokens = 0;
  let firstLoss = NaN;
  let smooth = NaN;
  let step = 0;
  for (; step < opts.steps; step++) {
    if (opts.maxSeconds && (performance.now() - start) / 1000 > opts.maxSeconds) break;
    if (!queue.length) queue = makeBatches(examples, opts.tokensPerBatch, rng);
    const batch = queue.pop()!;
    const width = Math.max(...batch.map((e) => e.ids.length));
    const ids = batch.map((e) => [...e.ids, ...new Array(width - e.ids.length).fill(0)]);
    const attentionMask = batch.map((e) => e.ids.map(() => 1).concat(new Array(width - e.ids.length).fill(0)));
    // Position t predicts ids[t + 1]: targets and weights are shifted by one.
    const targets = ids.map((r) => [...r.slice(1), 0]);
    const pw = opts.promptWeight ?? 0;
    const weightRows = batch.map((e) => [...e.lossMask.slice(1).map((m) => (m ? 1 : pw)), ...new Array(width - e.ids.length + 1).fill(0)]);
    const count = weightRows.flat().reduce((a, b) => a + b, 0);
    const targetCount = batch.reduce((s, e) => s + e.lossMask.slice(1).reduce((a, b) => a + b, 0), 0);
    const lr = lrAt(step, opts.steps, opts.lr, warmup, opts.maxSeconds ? (performance.now() - start) / 1000 / opts.maxSeconds : 0);
    (optimizer as unknown as { learningRate: number }).learningRate = lr;
    // The batch's rows in 1 + workers shards: the workers take theirs (posted now), this thread the first.
    const shards = shardRows({ ids, attentionMask, targets, weights: weightRows } satisfies Shard, 1 + (opts.workers?.size ?? 0));
    const pending = opts.workers?.gradients(shards.slice(1), weights, count);
    const { value, grads } = tf.variableGrads(() => shardLoss(model, config, shards[0], count), variables);
    let loss = (await value.data())[0];
    value.dispose();
    if (pending) {
      const others = await pending;
      for (const g of others.grads) {
        for (const [hfName, t] of g) {
          const name = weights.get(hfName)!.name; // variableGrads keys by the variable's own name
          const sum = tf.add(grads[name], t);
          tf.dispose([grads[name], t]);
          grads[name] = sum;
        }
      }
      loss += others.losses.reduce((a, b) => a + b, 0);
    }
    optimizer.applyGradients(grads as unknown as Parameters<typeof optimizer.applyGradients>[0]); // typed as variables; tfjs reads gradients by name
    tf.dispose(Object.values(grads));
    if (!Number.isFinite(loss)) throw new Error(`trainModel: loss became ${loss} at step ${step}; lower --lr`);
    if (Number.isNaN(firstLoss)) firstLoss = loss;
    smooth = Number.isNaN(smooth) ? loss : 0.95 * smooth + 0.05 * loss;
    tokens += batch.length * width;
    trainedTokens += targetCount;
    opts.log?.({ step, loss: smooth, lr, tokens, seconds: (performance.now() - start) / 1000 });
  }
  optimizer.dispose();
  return { steps: step, tokens, trainedTokens, seconds: (performance.now() - start) / 1000, firstLoss, finalLoss: smooth };
}
