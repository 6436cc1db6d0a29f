/**
 * Where the work of an iteration runs, behind one interface: the loop and the update ask for
 * log-probs, gradients and played passes of the team, and never see a thread.
 *
 *   logProbs   micro-batches of padded rows -> the log-prob at given positions, no gradient
 *   gradients  micro-batches -> each one's PPO loss, its gradient w.r.t. the adapter, side sums
 *   play       passes of the team (tasks, adapters as values, temperature, seed) -> trajectories
 *
 * Two implementations give the same numbers: LocalCompute (./local.ts, this thread) and LaneCompute
 * (./lanes.ts, this thread plus lane threads with replicas of the model; it shares the work, and when
 * a lane fails it redoes that share here and carries on alone).
 *
 * For: rl/update.ts (logProbs, gradients), loop/train.ts (play: the iteration's rollouts) and
 * loop/eval-queue.ts (play: evaluation passes). Not for: what is computed (rl/ppo.ts, loop/rollout.ts).
 *
 * Example: const compute = LocalCompute.forTeam({ agentModel, tools });
 *          const [trajs] = await compute.play([{ config, adapters: new Map(), tasks, samplesPerTask: 1, temperature: 0, seed: 1 }]);
 */
import type * as tf from '@tensorflow/tfjs-core';
import type { LoraAdapter } from '../engine/lora/adapter.ts';
import type { AdapterValues } from '../engine/lora/adapter-values.ts';
import type { GenerationProgress } from '../engine/model/generate.ts';
import type { LoadedModel } from '../engine/model/load.ts';
import type { MicroBatch } from '../rl/batches.ts';
import type { ToolRunners } from '../tools/runners.ts';
import type { TrainConfig } from '../loop/config.ts';
import type { RolloutTask, Trajectory } from '../loop/rollout.ts';

/** Log-probs at flat positions (b * (T-1) + t) of padded rows, under the adapter (null: the reference). */
export interface LogProbJob {
  adapter: LoraAdapter | null;
  ids: number[][]; // [B, T]
  mask: number[][]; // [B, T]
  positions: number[];
}

/** One micro-batch's PPO loss, normalised by `tokenCount` (the mini-batch's action tokens). */
export interface GradientJob {
  batch: MicroBatch;
  clipEps: number;
  tokenCount: number;
}

/** A micro-batch's loss, gradient (one tensor per adapter variable, in `variables()` order; the caller disposes) and side sums. */
export interface Gradient {
  loss: number;
  grads: tf.Tensor[];
  /** Sums over the micro-batch's action tokens: [entropy, clipped tokens, k1 KL to the reference]. */
  side: [number, number, number];
}

/** The team on `tasks`, `samplesPerTask` times each, with these adapters (agent id -> values; missing or null: the base model). */
export interface TeamPass {
  config: TrainConfig;
  adapters: Map<string, AdapterValues | null>;
  tasks: RolloutTask[];
  samplesPerTask: number;
  temperature: number;
  seed: number;
}

export interface PlayOptions {
  /** Checked between decoding steps: an aborted pass throws the signal's reason. */
  signal?: AbortSignal;
  /** Pre-fill and decoding progress of each generation (passes played on this thread only). */
  onProgress?: (agentId: string, p: GenerationProgress) => void;
  /** This thread is busy with other work: play away from it where there is room (see `spare`). */
  beside?: boolean;
}

export interface Compute {
  logProbs(jobs: LogProbJob[]): Promise<Float32Array[]>;
  gradients(adapter: LoraAdapter, jobs: GradientJob[]): Promise<Gradient[]>;
  play(passes: TeamPass[], opts?: PlayOptions): Promise<Trajectory[][]>;
  /** Whether `play({beside: true})` runs away from this thread, so that it can overlap this thread's own work. */
  readonly spare: boolean;
}

/** What playing the team needs: the agents' model (with its tokenizer) and the tools their code runs on. */
export interface TeamParts {
  agentModel: LoadedModel;
  tools: ToolRunners;
}
