/**
 * Curriculum rollout filtering (the brief's sample-efficiency knobs), with every decision counted.
 *
 * For: choosing each iteration's prompts (skip the ones the team recently always or never solves,
 * raise the difficulty as accuracy rises) and dropping trajectories whose coach failed.
 * Not for: making the tasks (each domain's `trainPool`, handed in as a TaskSource).
 *
 * State is a plain value (history per task id, level, generator RNG state): `pick` and `record`
 * return the next state and never change the one they were given, so an iteration that stops
 * half-way leaves its start state as it was, a checkpoint saves it, and a resumed run makes the
 * same choices.
 * Example: with history [1, 1, 1] (solved three times running) a task is skipped as "always solved":
 *          const c = new Curriculum(settings, seed, fixedTasks(tasks)); let s = c.start();
 *          const picked = c.pick(s, 8); s = c.record(picked.state, trajectories);
 */
import type { RngState } from '../stats/rng.ts';
import { Rng } from '../stats/rng.ts';
import type { CoachedTrajectory } from './rewards.ts';
import type { RolloutTask, Trajectory } from './trajectory.ts';

export interface CurriculumSettings {
  /** Skip tasks whose last `history` results were all solved or all failed. */
  skipDecided: boolean;
  history: number;
  /** Drop trajectories in which any coach call failed (neutral score 5 stands in). */
  dropCoachFailures: boolean;
  /** Raise the level when the rolling training accuracy reaches `raiseAt` (and lower below `lowerAt`). */
  adaptLevel: boolean;
  /** 1..5, or 0: every level mixed (as the held-out set is), with no level adaptation. */
  startLevel: number;
  raiseAt: number;
  lowerAt: number;
  /** Training problems are reused from a pool of this size per level, so "recently" is meaningful. */
  poolSize: number;
}

export const DEFAULT_CURRICULUM: CurriculumSettings = {
  skipDecided: true, history: 3, dropCoachFailures: true, adaptLevel: true, startLevel: 1, raiseAt: 0.75, lowerAt: 0.15, poolSize: 400,
};

export interface CurriculumState {
  level: number;
  rng: RngState;
  /** Task id -> recent results (1 solved, 0 failed), newest last. */
  history: Record<string, number[]>;
  /** Rolling accuracy of training trajectories at the current level. */
  recent: number[];
}

export interface FilterCounts {
  skippedAlwaysSolved: number;
  skippedNeverSolved: number;
  droppedCoachFailures: number;
  /** Update samples (prompt + action) longer than the agent model's context or MAX_TRAIN_TOKENS (what one
   *  backward pass takes on the wasm heap), left out of the update. */
  droppedOverContext?: number;
  level: number;
}

/** A training task as the curriculum hands it out (a domain's, or an imported dataset row). */
export type CurriculumTask = RolloutTask & { level?: number };

/**
 * Where training tasks come from: a pool per difficulty level (`leveled`: levels 1..5, 0 = all mixed;
 * the level adapts to the team's accuracy), or one fixed pool whatever the level.
 */
export interface TaskSource {
  pool(level: number): CurriculumTask[];
  leveled: boolean;
}

/** One fixed pool (an imported dataset, or a domain without levels). */
export function fixedTasks(tasks: CurriculumTask[]): TaskSource {
  return { pool: () => tasks, leveled: false };
}

/** An iteration's prompts, what was skipped, and the state after picking them. */
export interface Picked {
  tasks: CurriculumTask[];
  skippedAlwaysSolved: number;
  skippedNeverSolved: number;
  state: CurriculumState;
}

/** A deep copy of a state (it is plain data). */
const copy = (s: CurriculumState): CurriculumState => structuredClone(s);

export class Curriculum {
  /** `source`: the tasks; when it has no levels, the level stays as it is (the pool sets the difficulty). */
  constructor(readonly settings: CurriculumSettings, readonly seed: number, readonly source: TaskSource) {}

  /** The state of a run that has not trained yet. */
  start(): CurriculumState {
    return { level: this.settings.startLevel, rng: new Rng(`curriculum:${this.seed}`).getState(), history: {}, recent: [] };
  }

  private pools = new Map<number, CurriculumTask[]>();
  private pool(level: number): CurriculumTask[] {
    let p = this.pools.get(level);
    if (!p) this.pools.set(level, (p = this.source.pool(level)));
    return p;
  }

  /** Pick `count` prompts for this iteration, skipping decided ones; counts what it skipped. */
  pick(state: CurriculumState, count: number): Picked {
    const rng = Rng.fromState(state.rng);
    const pool = this.pool(state.level);
    let skippedAlwaysSolved = 0;
    let skippedNeverSolved = 0;
    const tasks: CurriculumTask[] = [];
    const tried = new Set<number>();
    while (tasks.length < count && tried.size < pool.length) {
      const i = rng.int(0, pool.length - 1);
      if (tried.has(i)) continue;
      tried.add(i);
      const h = state.history[pool[i].id] ?? [];
      if (this.settings.skipDecided && h.length >= this.settings.history) {
        const last = h.slice(-this.settings.history);
        if (last.every((x) => x === 1)) { skippedAlwaysSolved++; continue; }
        if (last.every((x) => x === 0)) { skippedNeverSolved++; continue; }
      }
      tasks.push(pool[i]);
    }
    return { tasks, skippedAlwaysSolved, skippedNeverSolved, state: { ...copy(state), rng: rng.getState() } };
  }

  /** The trajectories the update learns from (indices): all, or without those whose coach failed (when enabled). */
  keep(coached: CoachedTrajectory[]): number[] {
    return coached.flatMap((c, i) => (!this.settings.dropCoachFailures || [...c.agentScores.values()].every((r) => r.ok) ? [i] : []));
  }

  /** The state after these results: each task's history, and the level adapted from the rolling accuracy. */
  record(state: CurriculumState, trajs: Trajectory[]): CurriculumState {
    const next = copy(state);
    for (const t of trajs) {
      const h = (next.history[t.task.id] ??= []);
      h.push(t.correct ? 1 : 0);
      if (h.length > this.settings.history) h.shift();
      next.recent.push(t.correct ? 1 : 0);
    }
    const window = 64;
    if (next.recent.length > window) next.recent = next.recent.slice(-window);
    if (!this.settings.adaptLevel || !this.source.leveled || next.level === 0 || next.recent.length < window / 2) return next;
    const acc = next.recent.reduce((a, b) => a + b, 0) / next.recent.length;
    if (acc >= this.settings.raiseAt && next.level < 5) return { ...next, level: next.level + 1, recent: [] };
    if (acc <= this.settings.lowerAt && next.level > 1) return { ...next, level: next.level - 1, recent: [] };
    return next;
  }
}
