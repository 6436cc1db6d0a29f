/**
 * A run as the page lives it: training starts at once, and the held-out evaluations (the untrained
 * team first, then every `evalEvery` iterations) are measured alongside, a chunk of problems at a
 * time, so their running estimates arrive while the team learns.
 *
 *   each turn:  [lane]  next evaluation chunk (greedy + sampled)   } at the same time: the lane
 *               [here]  trainer.step() (rollouts, coach, update)   } is idle during rollouts
 *               then: queue this iteration's evaluation if due; report the chunk
 *   no lane:    the chunk runs here after the step
 *   all iterations done: the remaining evaluations, greedy here and sampled on a lane
 *
 * For: src/worker/trainer-worker.ts (the CLI keeps its inline evaluations: Trainer.run).
 * Not for: building the trainer, coach or lanes (the shell does) or drawing anything.
 *
 * Example: const s = new RunSession(trainer, new EvalQueue(config, parts), { lanes, store, emit });
 *          s.queueMissing(savedEvalIterations);
 *          await s.run({ signal });    // -> 'paused' | 'done' | 'stepped'
 */
import type { CheckpointStore } from './checkpoint.ts';
import type { EvalChunk, EvalQueue } from './eval-queue.ts';
import type { TeamLanes } from './remote-rollouts.ts';
import { StepAborted, type EvalOffload, type EvalResult, type IterationMetrics, type Trainer } from './train.ts';

export type SessionEvent =
  /** A running (result.of set) or final evaluation of the team as it was after `iteration`. */
  | { type: 'eval'; iteration: number; result: EvalResult }
  | { type: 'warning'; message: string }
  | { type: 'done'; iteration: number };

export interface SessionOptions {
  lanes?: TeamLanes | null;
  store?: CheckpointStore | null;
  emit: (e: SessionEvent) => void;
}

/** Problems per evaluation chunk: the first guess, and the bounds of the adaptive size. */
const FIRST_CHUNK = 8;
const MIN_CHUNK = 4;
const MAX_CHUNK = 64;
/** Without a lane, evaluation chunks take about this share of the time between iterations. */
const LOCAL_SHARE = 0.25;

export class RunSession {
  private chunkSize = FIRST_CHUNK;
  private lanesUsable = true;

  constructor(readonly trainer: Trainer, readonly queue: EvalQueue, private readonly opts: SessionOptions) {}

  /**
   * Queues the evaluations a resumed run still lacks: the untrained team's (base model) and, when
   * the run stopped on an evaluation iteration, that one (its adapters are the checkpoint's).
   */
  queueMissing(saved: number[]): void {
    if (!saved.includes(0)) this.queue.enqueue(0, new Map());
    const it = this.trainer.iteration;
    if (it > 0 && this.trainer.evalDue(it) && !saved.includes(it)) this.queue.enqueue(it, this.trainer.adapterValues());
  }

  private get lanes(): TeamLanes | null {
    return this.lanesUsable ? this.opts.lanes ?? null : null;
  }

  /** A lane's EvalOffload: greedy on the second-to-last lane where there are two, sampled on the last. */
  private remote(pass: 'greedy' | 'sampled'): EvalOffload | null {
    const lanes = this.lanes;
    if (!lanes) return null;
    const lane = pass === 'greedy' && lanes.count > 1 ? lanes.count - 1 : lanes.count;
    return (config, adapters, tasks, temperature, seed) => lanes.rollouts(config, adapters, tasks, temperature, seed, lane);
  }

  private laneFailed = (e: Error) => {
    this.lanesUsable = false;
    this.opts.emit({ type: 'warning', message: `a lane worker failed (${e.message}); its evaluation chunk ran on the training worker, and the rest of the run evaluates there` });
  };

  private async record(chunk: EvalChunk | null): Promise<void> {
    if (!chunk) return;
    this.opts.emit({ type: 'eval', iteration: chunk.iteration, result: chunk.result });
    if (chunk.finished) await this.opts.store?.appendMetrics({ iteration: chunk.iteration, eval: chunk.result });
  }

  /** Size the next chunk so that it takes about `seconds`. */
  private resize(chunk: EvalChunk | null, seconds: number): void {
    if (!chunk || chunk.result.tasks === 0) return;
    const perTask = chunk.seconds / Math.max(1, Math.min(this.chunkSize, chunk.result.tasks));
    if (perTask > 0) this.chunkSize = Math.max(MIN_CHUNK, Math.min(MAX_CHUNK, Math.round(seconds / perTask)));
  }

  /**
   * Trains until the last iteration (then finishes the evaluations), one iteration with `single`,
   * or until `signal` aborts: a pause stops the current iteration before its update (it runs again
   * from its start, identically), or lets it finish once the update has begun.
   */
  async run(opts: { single?: boolean; signal?: AbortSignal } = {}): Promise<'paused' | 'done' | 'stepped'> {
    const t = this.trainer;
    const { iterations } = t.config;
    for (;;) {
      if (opts.signal?.aborted) return 'paused';
      if (t.iteration >= iterations) return this.finish(opts.signal);
      const lanes = this.lanes;
      const alongside = lanes && this.queue.pending.length
        ? this.queue.runChunk(this.chunkSize, { greedy: this.remote('greedy'), sampled: this.remote('sampled') }, this.laneFailed)
        : null;
      let metrics: IterationMetrics | null = null;
      try {
        metrics = await t.step({ signal: opts.signal });
      } catch (e) {
        if (!(e instanceof StepAborted)) {
          await alongside?.catch(() => null);
          throw e;
        }
      }
      const chunk = alongside ? await alongside : null;
      await this.record(chunk);
      if (!metrics) return 'paused';
      if (t.evalDue(metrics.iteration)) this.queue.enqueue(metrics.iteration, t.adapterValues());
      if (alongside) {
        this.resize(chunk, metrics.seconds.rollout + metrics.seconds.coach);
      } else if (this.queue.pending.length && !lanes) {
        const local = await this.queue.runChunk(this.chunkSize, {});
        await this.record(local);
        const between = metrics.seconds.rollout + metrics.seconds.coach + metrics.seconds.update;
        this.resize(local, LOCAL_SHARE * between);
      }
      if (opts.single) return 'stepped';
    }
  }

  /** After the last iteration: the evaluations still queued, at full size, greedy here and sampled on a lane. */
  private async finish(signal?: AbortSignal): Promise<'paused' | 'done'> {
    while (this.queue.pending.length) {
      if (signal?.aborted) return 'paused';
      await this.record(await this.queue.runChunk(MAX_CHUNK, { sampled: this.remote('sampled') }, this.laneFailed));
    }
    this.opts.emit({ type: 'done', iteration: this.trainer.iteration });
    return 'done';
  }
}
