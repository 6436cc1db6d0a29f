/**
 * Evaluations that run alongside training instead of before it: each held-out evaluation (the
 * untrained team, then every `evalEvery` iterations) is queued with a snapshot of the adapters, and
 * advanced a chunk of problems at a time — on a lane while the training thread does its rollouts,
 * or between iterations when there is no lane. Every chunk gives a running estimate (`of` set), so a
 * chart fills in problem by problem with its interval, and training starts at once.
 *
 * For: RunSession (session.ts): the page's evaluations alongside training, and the CLI's evaluation of
 * the untrained team (one chunk of every problem). The CLI's later evaluations run inside their
 * iteration (Trainer.evaluate).
 * Each chunk is a deterministic pass (greedy, and sampled at the evaluation temperature with the seed
 * EVAL_SEED + its first problem's index), so a run's evaluations repeat exactly; they are different
 * random draws from one whole-set chunk (the CLI's, which equals evaluateTeam), not the same trajectories.
 * The tasks come in the held-out order of domains/index.ts (heldOutTasks; math: levels interleaved),
 * so each chunk's running estimate is that of a level-balanced prefix, not of the easiest problems.
 *
 * Example: const q = new EvalQueue(config, parts, { heldOut });
 *          q.enqueue(0, new Map());                            // the untrained team
 *          const r = await q.runChunk(20, { sampled: lanes.rollouts });   // { iteration: 0, result: { greedy, sampled, tasks: 20, of: 200 } }
 */
import type { AdapterSpec } from '../rl/lanes.ts';
import type { TrainConfig } from './config.ts';
import { heldOutTasks } from '../domains/index.ts';
import { runRolloutJob, type ReplicaParts } from './remote-rollouts.ts';
import type { RolloutTask, Trajectory } from './rollout.ts';
import { EVAL_SEED, evalResultOf, type EvalOffload } from './evaluate.ts';
import type { EvalResult } from './records.ts';

interface Pending {
  iteration: number;
  adapters: Map<string, AdapterSpec | null>;
  greedy: Trajectory[];
  sampled: Trajectory[];
}

export interface EvalChunk {
  iteration: number;
  result: EvalResult;
  finished: boolean;
  /** Seconds this chunk took, and per problem (both passes): for sizing the next chunk. */
  seconds: number;
}

export class EvalQueue {
  private readonly queue: Pending[] = [];
  readonly tasks: RolloutTask[];

  constructor(private readonly config: TrainConfig, private readonly parts: ReplicaParts, opts: { heldOut?: RolloutTask[] } = {}) {
    this.tasks = heldOutTasks(config, opts.heldOut); // the same tasks, in the same order, as evaluateTeam (train.ts)
  }

  /** Evaluations waiting or under way, oldest first (their iterations). */
  get pending(): number[] {
    return this.queue.map((p) => p.iteration);
  }

  /** Queue an evaluation of these adapters (agent id -> values; a missing or null one is the base model). */
  enqueue(iteration: number, adapters: Map<string, AdapterSpec | null>): void {
    if (this.queue.some((p) => p.iteration === iteration)) return;
    this.queue.push({ iteration, adapters, greedy: [], sampled: [] });
  }

  /**
   * Advances the oldest evaluation by up to `size` problems. Each pass runs on its `where` offload (a
   * lane) or, without one, here; a failing offload is retried here and reported through `onRemoteError`.
   * Resolves with the running result, or null when nothing is queued.
   */
  async runChunk(size: number, where: { greedy?: EvalOffload | null; sampled?: EvalOffload | null },
    onRemoteError?: (e: Error) => void): Promise<EvalChunk | null> {
    const p = this.queue[0];
    if (!p) return null;
    const started = performance.now();
    const from = p.greedy.length;
    const tasks = this.tasks.slice(from, from + Math.max(1, Math.floor(size)));
    const seed = EVAL_SEED + from;
    const here = (temperature: number) =>
      runRolloutJob({ kind: 'rollouts', config: this.config, adapters: [...p.adapters], tasks, temperature, seed }, this.parts);
    const pass = (temperature: number, remote?: EvalOffload | null): Promise<Trajectory[]> => !remote ? here(temperature)
      : remote(this.config, p.adapters, tasks, temperature, seed).catch((e: Error) => {
        onRemoteError?.(e);
        return here(temperature);
      });
    // Offloaded passes are posted first, so they run while this thread does its own.
    const sampledRun = where.sampled ? pass(this.config.evalTemperature, where.sampled) : null;
    const greedy = await pass(0, where.greedy);
    const sampled = await (sampledRun ?? pass(this.config.evalTemperature));
    p.greedy.push(...greedy);
    p.sampled.push(...sampled);
    const finished = p.greedy.length >= this.tasks.length;
    if (finished) this.queue.shift();
    return { iteration: p.iteration, result: this.resultOf(p, finished), finished, seconds: (performance.now() - started) / 1000 };
  }

  private resultOf(p: Pending, finished: boolean): EvalResult {
    return evalResultOf(this.config, p.greedy, p.sampled, finished ? undefined : this.tasks.length);
  }
}
