/**
 * The records a run leaves, shared by the loop, its stores, the CLI and the page: an iteration's
 * metrics, a held-out evaluation's result, and the events a trainer sends its listeners. Types only,
 * in a module of their own so that a reader of a record needs none of the loop.
 *
 * For: anything that writes, reads, sends or draws a run's records. Not for: computing them (train.ts).
 * Example: a metrics.jsonl line is an IterationMetrics ({"iteration": 3, "trainAccuracy": 0.5, ...})
 *          or an evaluation record ({"iteration": 0, "eval": {"greedy": 0.25, "sampled": 0.2, "tasks": 200}}).
 */
import type { GenerationProgress } from '../engine/model/generate.ts';
import type { FilterCounts } from './curriculum.ts';
import type { CoachStats } from './rewards.ts';
import type { GroupStats } from '../rl/state-groups.ts';
import type { Trajectory } from './trajectory.ts';

export type Phase = 'rollout' | 'coach' | 'update' | 'eval' | 'checkpoint';

export interface EvalResult {
  greedy: number;
  sampled: number;
  /** Problems the accuracies are over. */
  tasks: number;
  /** Set while an evaluation is still running (the page's running estimate): the problems it will have in all. */
  of?: number;
  /** Mean quality metrics of the greedy run (data team: rocAuc, accuracy, f1, rmseOverRange...; relay team: stepAccuracy). */
  metrics?: Record<string, number>;
  /** The same of the run at the evaluation temperature. */
  sampledMetrics?: Record<string, number>;
  /**
   * Each held-out task's result, in task order: what paired intervals between two runs need (the same
   * problems, so the difference is taken problem by problem). Absent in records written before it.
   */
  perTask?: { ids: string[]; greedy: boolean[]; sampled: boolean[] };
  /**
   * Per agent, in the workflow's order, of the greedy pass: its steps right and its steps judged, for a
   * domain that judges each step given its input (the relay team). Absent for the others.
   */
  agentSteps?: { ids: string[]; right: number[]; judged: number[] };
}

export interface IterationMetrics {
  iteration: number;
  trainAccuracy: number;
  meanReward: number;
  perAgent: Record<string, {
    meanScore: number; reward: number; loss: number; kl: number; entropy: number;
    clipFraction: number; gradNorm: number; samples: number; skippedSteps: number;
  }>;
  kl: number;
  coach: CoachStats;
  filters: FilterCounts;
  /** Mean quality metrics of this iteration's trajectories (data team), empty for math. */
  quality: Record<string, number>;
  trajectories: number;
  /**
   * Agent generations this iteration (distinct actions: a tree's shared ancestors count once): the budget
   * every credit method is compared at, with `coach.calls`. Absent in records written before it.
   */
  generations?: number;
  /** State groups' sizes (the `groups` reward mode). */
  groups?: GroupStats;
  rolloutTokensPerSecond: number;
  updateTokensPerSecond: number;
  seconds: Record<Phase, number>;
  eval?: EvalResult;
}

export type TrainEvent =
  /** A phase of an iteration began or ended (an evaluation's begins once per pass: greedy, then sampled). */
  | { type: 'phase'; iteration: number; phase: Phase; status: 'start' | 'end' }
  /** Inside a rollout or evaluation: one agent's pre-fill and decoding steps. */
  | { type: 'generation'; iteration: number; agentId: string; progress: GenerationProgress }
  | { type: 'iteration'; metrics: IterationMetrics }
  | { type: 'trajectories'; iteration: number; trajectories: Trajectory[] }
  | { type: 'eval'; iteration: number; result: EvalResult }
  | { type: 'checkpoint'; iteration: number }
  | { type: 'resumed'; iteration: number }
  /** Something went wrong and the loop went on (e.g. a helper that computed part of the update died: its work was redone). */
  | { type: 'warning'; iteration: number; message: string }
  | { type: 'done'; iteration: number };

/** A line of a run's metrics.jsonl as stored: an iteration's record (it has `perAgent`), or an evaluation measured alongside. */
export type StoredRecord = { iteration: number; eval?: EvalResult; perAgent?: unknown };

/**
 * A run's stored records split into its iterations and the evaluations measured alongside (the lines of their
 * own; an iteration's record may carry its `eval` too). The session, the lab and its tabs all read a run so.
 * Example: splitRecords([{ iteration: 1, perAgent: {...} }, { iteration: 1, eval }]) -> { metrics: [the first], evals: [{ iteration: 1, result: eval }] }
 */
export function splitRecords(records: readonly StoredRecord[]): { metrics: IterationMetrics[]; evals: { iteration: number; result: EvalResult }[] } {
  return {
    metrics: records.filter((r) => r.perAgent) as IterationMetrics[],
    evals: records.filter((r) => r.eval && !r.perAgent).map((r) => ({ iteration: r.iteration, result: r.eval! })),
  };
}

/** What a pace is read from: an iteration's record (saved or live). */
export interface TimedIteration {
  iteration: number;
  trajectories?: number;
  seconds?: Partial<Record<Phase, number>>;
}

/** An iteration's training time: rollouts, coaching, update and checkpoint; null when it kept no times (or is an evaluation record). */
export function iterationSeconds(m: TimedIteration): number | null {
  const s = m.seconds;
  if (!s || m.iteration < 1) return null;
  const t = (s.rollout ?? 0) + (s.coach ?? 0) + (s.update ?? 0) + (s.checkpoint ?? 0);
  return t > 0 ? t : null;
}
