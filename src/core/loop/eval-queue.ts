/**
 * Held-out evaluations, the one way every evaluation is played: each (the untrained team, then every
 * `evalEvery` iterations) is queued with a snapshot of the adapters and advanced a chunk of problems
 * at a time. Each chunk plays the greedy and the sampled pass (through the run's Compute, or another
 * player the caller gives), and gives a running estimate (`of` set), so a chart fills in problem by
 * problem with its interval.
 *   the page       chunks fitted around training (session.ts with compute/alongside.ts)
 *   mappa train    one chunk holding every problem, at the end of its iteration (session.ts)
 *   mappa eval, the model cards, the benchmarks   one chunk holding every problem (`evaluateTeam`)
 *
 * Each chunk is a deterministic pass (greedy, and sampled at the evaluation temperature with the seed
 * EVAL_SEED + its first problem's index), so a run's evaluations repeat exactly; chunks of different
 * sizes are different random draws of the sampled pass, not the same trajectories.
 * The tasks come in the team's held-out order (heldOutOf; math: levels interleaved), so each chunk's
 * running estimate is that of a level-balanced prefix, not of the easiest problems.
 *
 * Example: const q = new EvalQueue(config, team, compute, { heldOut });
 *          q.enqueue(0, new Map());                  // the untrained team
 *          const r = await q.runChunk(20);           // { iteration: 0, result: { greedy, sampled, tasks: 20, of: 200 }, ... }
 */
import type { AdapterValues } from '../engine/lora/adapter-values.ts';
import type { Compute } from './train.ts';
import type { TrainConfig } from './config.ts';
import { playedTeam, type Team } from './team.ts';
import type { RolloutTask, Trajectory } from './trajectory.ts';
import { EVAL_SEED, evalResultOf } from './evaluate.ts';
import type { EvalResult } from './records.ts';

/** What plays an evaluation's passes: the run's Compute, or a background player of it. */
export type Player = Pick<Compute, 'playTeam'>;

interface Pending {
  iteration: number;
  adapters: Map<string, AdapterValues | null>;
  greedy: Trajectory[];
  sampled: Trajectory[];
}

export interface EvalChunk {
  iteration: number;
  result: EvalResult;
  finished: boolean;
  /** Seconds this chunk took (both passes): for sizing the next chunk. */
  seconds: number;
  /** This chunk's trajectories, greedy and sampled. */
  greedy: Trajectory[];
  sampled: Trajectory[];
}

/**
 * The held-out tasks an evaluation of `config` runs, in order: the first `config.evalTasks` of a given
 * held-out dataset (the user's file, in its order), else the team's fixed set in its order. Every
 * evaluation (the page's chunks, `mappa train`, `mappa eval`, the model cards, the lesson) selects
 * through it: one order everywhere.
 * Example: heldOutOf(mathTeam, { evalTasks: 50 }) -> 50 level-balanced held-out problems, levels interleaved
 */
export function heldOutOf(team: Pick<Team, 'heldOut'>, config: { evalTasks: number }, given?: RolloutTask[]): RolloutTask[] {
  return given?.length ? given.slice(0, config.evalTasks) : team.heldOut(config.evalTasks);
}

export class EvalQueue {
  private readonly queue: Pending[] = [];
  readonly tasks: RolloutTask[];

  constructor(private readonly config: TrainConfig, private readonly team: Team, private readonly compute: Player,
    opts: { heldOut?: RolloutTask[] } = {}) {
    this.tasks = heldOutOf(team, config, opts.heldOut);
  }

  /** Evaluations waiting or under way, oldest first (their iterations). */
  get pending(): number[] {
    return this.queue.map((p) => p.iteration);
  }

  /** Queue an evaluation of these adapters (agent id -> values; a missing or null one is the base model). */
  enqueue(iteration: number, adapters: Map<string, AdapterValues | null>): void {
    if (this.queue.some((p) => p.iteration === iteration)) return;
    this.queue.push({ iteration, adapters, greedy: [], sampled: [] });
  }

  /**
   * Advances the oldest evaluation by up to `size` problems (Infinity: all that are left), played by
   * `on` (default: the queue's own). Resolves with the running result, or null when nothing is queued.
   * Once `signal` aborts (a pause), the chunk stops at its next decoding step and rejects: nothing of it is kept.
   */
  async runChunk(size: number, on: Player = this.compute, signal?: AbortSignal): Promise<EvalChunk | null> {
    const p = this.queue[0];
    if (!p) return null;
    const started = performance.now();
    const from = p.greedy.length;
    const tasks = this.tasks.slice(from, from + Math.max(1, Math.floor(Math.min(size, this.tasks.length))));
    const pass = (temperature: number) => ({ ...playedTeam(this.config), adapters: p.adapters, tasks, samplesPerTask: 1, temperature, seed: EVAL_SEED + from });
    // evalTemperature 0: greedy only, one pass (the sampled pass would be a second greedy one).
    const passes = this.config.evalTemperature > 0 ? [pass(0), pass(this.config.evalTemperature)] : [pass(0)];
    const [greedy, sampled = greedy] = await on.playTeam(passes, { signal }); // aborted: nothing kept, the chunk runs again
    p.greedy.push(...greedy);
    p.sampled.push(...sampled);
    const finished = p.greedy.length >= this.tasks.length;
    if (finished) this.queue.shift();
    const result = evalResultOf(this.team, this.config.workflow, p.greedy, p.sampled, finished ? undefined : this.tasks.length);
    return { iteration: p.iteration, result, finished, seconds: (performance.now() - started) / 1000, greedy, sampled };
  }
}

/**
 * A whole evaluation at once: the team with these adapters (none: the base model) on every held-out
 * problem, as one chunk. `mappa eval` and the benchmarks measure with it.
 * Example: const { result } = await evaluateTeam(config, team, compute);   // result.greedy 0.25, result.tasks 200
 */
export async function evaluateTeam(config: TrainConfig, team: Team, compute: Player,
  opts: { adapters?: Map<string, AdapterValues | null>; heldOut?: RolloutTask[] } = {}): Promise<EvalChunk> {
  const queue = new EvalQueue(config, team, compute, { heldOut: opts.heldOut });
  queue.enqueue(0, opts.adapters ?? new Map());
  return (await queue.runChunk(Infinity))!;
}
