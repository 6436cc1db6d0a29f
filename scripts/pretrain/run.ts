/**
 * What every stage of one pretraining run (scripts/pretrain.ts) shares: the flags, the models'
 * context length, the log, and the trainer that runs with --threads worker threads.
 *
 * For: scripts/pretrain.ts and its agent stages (agent-stages.ts). Not for: the training step itself
 * (train.ts) or the worker threads (data-parallel.ts).
 *
 * Example:
 *   const flags = parseFlags(['--seed', '1', '--skip-eval']);   // DEFAULTS with seed 1 and skip-eval 1
 *   const run: Run = { flags, started: performance.now(), train: trainer(flags) };
 *   const report = await run.train(config, weights, examples, { steps: 10, tokensPerBatch: 2048, lr: 3e-3, seed: 0, log: logEvery('agent') });
 */
import type * as tf from '@tensorflow/tfjs-core';
import os from 'node:os';
import type { ModelConfig } from '../../src/core/engine/model/config.ts';
import { GradientWorkers } from './data-parallel.ts';
import { trainModel, type TrainOptions, type TrainReport } from './train.ts';
import { parseScriptFlags } from './flags.ts';

/** Every flag with its default; see scripts/pretrain.ts for what each one does. */
export const DEFAULTS = {
  seed: 0, out: 'models', 'agent-tasks': 3000, 'judge-tasks': 1500, vocab: 1024, hidden: 128, layers: 4,
  'data-tasks': 1200, 'agent-steps': 1400, 'mix-steps': 1200, 'judge-steps': 300, 'tokens-per-batch': 2048, lr: 3e-3, 'mix-lr': 2e-3,
  'judge-lr': 2e-3, 'prompt-weight': 0.2, 'max-minutes': 150, 'eval-tasks': 200, 'skip-eval': 0, init: '', 'extra-vocab': 512,
  threads: Math.min(4, os.availableParallelism()),
  flaws: '',
  'mix-math': 1500,
  'stage1-extensions': 3, 'stage1-extension-steps': 300,
  agent: '',
};
export type Flags = typeof DEFAULTS;

/** `--name value` or `--name=value` for every flag in DEFAULTS; a bare --skip-eval means 1. Unknown flags and non-numbers throw. */
export function parseFlags(argv: string[]): Flags {
  return parseScriptFlags('pretrain', DEFAULTS, argv, ['skip-eval']);
}

/** Context length of the models; the data team's coach prompts (files, metrics) run past 1024 tokens. */
export const MAX_TOKENS = 2048;

export const log = (msg: string) => console.log(`[pretrain ${new Date().toISOString().slice(11, 19)}] ${msg}`);

/** A trainModel log callback that prints every 10th step under `name`. */
export const logEvery = (name: string) => (i: { step: number; loss: number; lr: number; tokens: number; seconds: number }) => {
  if (i.step % 10 === 0) log(`${name} step ${i.step} loss ${i.loss.toFixed(3)} lr ${i.lr.toExponential(2)} ${Math.round(i.tokens / i.seconds)} tok/s`);
};

/** The run's time budget in seconds (--max-minutes); each stage may use up to a share of it, counted from Run.started. */
export const budgetSeconds = (flags: Flags) => flags['max-minutes'] * 60;

export type Examples = Parameters<typeof trainModel>[2];
export type Train = (config: ModelConfig, weights: Map<string, tf.Variable>, examples: Examples, opts: TrainOptions) => Promise<TrainReport>;

/** What every stage reads: the flags, when the run started (the time budget counts from there), and the trainer. */
export interface Run {
  flags: Flags;
  started: number;
  train: Train;
}

/**
 * trainModel with --threads: this thread and threads - 1 worker threads, each computing a share of
 * every batch's rows. Each training gets its own worker pool: the model's shapes change between
 * stages (vocabulary, positions). Throws at once on a --threads that is not a whole number >= 1.
 */
export function trainer(flags: Flags): Train {
  if (!Number.isInteger(flags.threads) || flags.threads < 1) throw new Error(`pretrain: --threads must be a whole number >= 1, got ${flags.threads}`);
  return async (config, weights, examples, opts) => {
    const workers = flags.threads > 1 ? await GradientWorkers.start(flags.threads - 1, config, weights) : undefined;
    try {
      return await trainModel(config, weights, examples, { ...opts, workers });
    } finally {
      await workers?.close();
    }
  };
}
