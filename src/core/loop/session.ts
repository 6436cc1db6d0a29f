/**
 * A run's whole life, the same for `mappa train` and the page: open it from its store (fresh, or
 * resumed from the checkpoint with the lost records after it dropped), measure the untrained team,
 * train iteration after iteration, keep every trajectory, evaluate every `evalEvery` iterations,
 * stop at a pause with nothing lost, and hand out the trained adapters as PEFT files.
 *
 * Evaluations, two ways, both through the one evaluation queue (eval-queue.ts):
 *   'inline'    (CLI)   the untrained team whole before the first iteration, each later evaluation
 *                       whole at the end of its iteration (one chunk of every problem)
 *   'alongside' (page)  training starts at once; the evaluations are queued and measured a chunk at
 *                       a time, so their running estimates arrive while the team learns:
 *     each turn:  [beside]  next evaluation chunk (greedy + sampled)   } at the same time, where the
 *                 [here]    trainer.step() (rollouts, coach, update)   } Compute has room (`spare`)
 *                 then: queue this iteration's evaluation if due; report the chunk
 *     no room:    the chunk runs here after the step
 *     all iterations done: the remaining evaluations, whole
 *
 * For: src/cli/train.ts and src/core/lab/lab.ts (the page's worker); each drives a run through this.
 * Not for: building the model, coach or Compute (the caller passes them) or drawing anything.
 *
 * Example: const s = await RunSession.open(config, { agentModel, coach, tools }, { store, evaluations: 'inline', emit });
 *          s.trainer.on((e) => ...);                 // phases, iterations, trajectories
 *          await s.run({ signal });                  // -> 'paused' | 'done' | 'stepped'
 *          await s.saveIfBehind();                   // a checkpoint at the iteration it stopped on
 *          const peft = await s.adapterFiles();      // { solver: { 'adapter_config.json': …, … }, … }
 */
import { exportPeft } from '../engine/lora/peft.ts';
import { TRAJECTORIES, type RunStore } from './checkpoint.ts';
import type { TrainConfig } from './config.ts';
import { EvalQueue, type EvalChunk } from './eval-queue.ts';
import { trajectoryLines } from './rollout.ts';
import { StepAborted, Trainer, type TrainerDeps } from './train.ts';
import type { EvalResult, IterationMetrics } from './records.ts';

export type SessionEvent =
  /** A running (result.of set) or final evaluation of the team as it was after `iteration`. */
  | { type: 'eval'; iteration: number; result: EvalResult }
  | { type: 'warning'; message: string }
  | { type: 'done'; iteration: number };

/** What a run trains with: TrainerDeps without the store, which the session sets itself. */
export type RunParts = Omit<TrainerDeps, 'store'>;

export interface SessionOptions {
  store?: RunStore | null;
  evaluations: 'inline' | 'alongside';
  /** Measure the untrained team (default true; false: it is measured elsewhere, e.g. by the compared run). */
  baseline?: boolean;
  /** Delete what the store holds first: the run starts again from iteration 0. */
  fresh?: boolean;
  emit: (e: SessionEvent) => void;
}

/** What the store held for this run when it was opened. */
export interface RunHistory {
  resumed: boolean;
  metrics: IterationMetrics[];
  evals: { iteration: number; result: EvalResult }[];
}

/** Problems per evaluation chunk: the first guess, and the bounds of the adaptive size. */
const FIRST_CHUNK = 8;
const MIN_CHUNK = 4;
const MAX_CHUNK = 64;
/** Without a lane, evaluation chunks take about this share of the time between iterations. */
const LOCAL_SHARE = 0.25;

export class RunSession {
  private chunkSize = FIRST_CHUNK;
  private lastCheckpoint: number;

  constructor(readonly trainer: Trainer, readonly queue: EvalQueue, private readonly opts: SessionOptions, readonly history: RunHistory = { resumed: false, metrics: [], evals: [] }) {
    this.lastCheckpoint = trainer.iteration;
    trainer.on((e) => {
      if (e.type === 'checkpoint') this.lastCheckpoint = e.iteration;
      // Every trajectory is kept, one JSON line each (the CLI's trajectories.jsonl, the page's export).
      // The writes are chained in order; one that fails fails the run at the end of its step (flushed()).
      if (e.type === 'trajectories' && opts.store) {
        const lines = trajectoryLines(e.iteration, e.trajectories);
        this.writes = this.writes.then(() => this.writeError ? undefined : opts.store!.appendText(TRAJECTORIES, lines)).catch((err: Error) => {
          this.writeError ??= err;
        });
      }
    });
  }

  private writes: Promise<void> = Promise.resolve();
  private writeError: Error | null = null;

  /** Waits for the trajectory writes so far; rethrows the first that failed (a full disk ends the run, never silently). */
  async flushed(): Promise<void> {
    await this.writes;
    if (this.writeError) throw this.writeError;
  }

  /**
   * Opens a run: resumed when the store holds its checkpoint (records after it were lost work and
   * are dropped), fresh otherwise; queues the evaluations it still lacks.
   */
  static async open(config: TrainConfig, parts: RunParts, opts: SessionOptions): Promise<RunSession> {
    const { store } = opts;
    if (opts.fresh) await store?.clear();
    const saved = store ? await store.load() : null;
    const trainer = await Trainer.create(config, { ...parts, store }, { resume: Boolean(saved) });
    const history: RunHistory = { resumed: Boolean(saved), metrics: [], evals: [] };
    let records: { iteration: number; eval?: EvalResult; perAgent?: unknown }[] = [];
    if (store) {
      for (const message of await store.cutBack(trainer.iteration)) opts.emit({ type: 'warning', message });
      records = await store.metrics();
      history.metrics = records.filter((r) => r.perAgent) as IterationMetrics[];
      history.evals = records.filter((r) => r.eval && !r.perAgent).map((r) => ({ iteration: r.iteration, result: r.eval! }));
      if (!saved) await store.writeFile(TRAJECTORIES, '');
    }
    const session = new RunSession(trainer, new EvalQueue(config, trainer.compute, { heldOut: parts.dataset?.eval }), opts, history);
    const measured = records.filter((r) => r.eval).map((r) => r.iteration);
    session.queueMissing(opts.baseline === false ? [0, ...measured] : measured);
    return session;
  }

  /**
   * Queues the evaluations a resumed run still lacks: the untrained team's (base model) and, when
   * the run stopped on an evaluation iteration, that one (its adapters are the checkpoint's).
   */
  queueMissing(saved: number[]): void {
    if (!saved.includes(0)) this.queue.enqueue(0, new Map());
    const it = this.trainer.iteration;
    if (it > 0 && this.trainer.evalDue(it) && !saved.includes(it)) this.queue.enqueue(it, this.trainer.adapterValues());
  }

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

  /** The queued evaluations, one after the other (inline: each whole; alongside: in the largest chunks). */
  private async evaluateQueued(signal?: AbortSignal): Promise<boolean> {
    while (this.queue.pending.length) {
      if (signal?.aborted) return false;
      await this.record(await this.queue.runChunk(this.opts.evaluations === 'inline' ? Infinity : MAX_CHUNK));
    }
    return true;
  }

  /** Inline: the team as it is after iteration `it`, measured whole now (the iteration's own evaluation). */
  private evaluateNow = async (it: number): Promise<EvalResult> => {
    this.queue.enqueue(it, this.trainer.adapterValues());
    return (await this.queue.runChunk(Infinity))!.result;
  };

  /**
   * Trains until the last iteration (then finishes the evaluations), one iteration with `single`,
   * or until `signal` aborts: a pause stops the current iteration before its update (it runs again
   * from its start, identically), or lets it finish once the update has begun.
   */
  async run(opts: { single?: boolean; signal?: AbortSignal } = {}): Promise<'paused' | 'done' | 'stepped'> {
    const t = this.trainer;
    const { iterations } = t.config;
    const inline = this.opts.evaluations === 'inline';
    for (;;) {
      if (inline && !(await this.evaluateQueued(opts.signal))) return 'paused';
      if (opts.signal?.aborted) return 'paused';
      if (t.iteration >= iterations) return this.finish(opts.signal);
      const alongside = !inline && t.compute.spare && this.queue.pending.length ? this.queue.runChunk(this.chunkSize, { beside: true }) : null;
      let metrics: IterationMetrics | null = null;
      try {
        metrics = await t.step({ signal: opts.signal, evaluate: inline ? this.evaluateNow : undefined });
        await this.flushed();
      } catch (e) {
        if (!(e instanceof StepAborted)) {
          await alongside?.catch(() => null);
          throw e;
        }
      }
      const chunk = alongside ? await alongside : null;
      await this.record(chunk);
      if (!metrics) return 'paused';
      if (!inline) await this.afterStep(metrics, chunk, Boolean(alongside));
      if (opts.single) return 'stepped';
    }
  }

  /** Alongside: queue this iteration's evaluation if due; without room beside this thread, advance the queue here. */
  private async afterStep(metrics: IterationMetrics, chunk: EvalChunk | null, alongside: boolean): Promise<void> {
    if (this.trainer.evalDue(metrics.iteration)) this.queue.enqueue(metrics.iteration, this.trainer.adapterValues());
    if (alongside) {
      this.resize(chunk, metrics.seconds.rollout + metrics.seconds.coach);
    } else if (this.queue.pending.length && !this.trainer.compute.spare) {
      const local = await this.queue.runChunk(this.chunkSize);
      await this.record(local);
      const between = metrics.seconds.rollout + metrics.seconds.coach + metrics.seconds.update;
      this.resize(local, LOCAL_SHARE * between);
    }
  }

  /** After the last iteration: the evaluations still queued, at full size. */
  private async finish(signal?: AbortSignal): Promise<'paused' | 'done'> {
    if (!(await this.evaluateQueued(signal))) return 'paused';
    this.opts.emit({ type: 'done', iteration: this.trainer.iteration });
    return 'done';
  }

  /** The iteration of the last checkpoint (a reload resumes there). */
  get checkpointed(): number {
    return this.lastCheckpoint;
  }

  /** A checkpoint at the iteration the run stopped on, unless one is there already (nothing is lost by pausing). */
  async saveIfBehind(): Promise<void> {
    await this.flushed();
    if (this.trainer.iteration > this.lastCheckpoint) await this.trainer.checkpoint();
  }

  /** Every trained agent's adapter as PEFT files (agent id -> file name -> bytes). */
  async adapterFiles(): Promise<Record<string, Record<string, Uint8Array>>> {
    const out: Record<string, Record<string, Uint8Array>> = {};
    for (const [id, p] of this.trainer.policies) out[id] = await exportPeft(p.adapter, this.trainer.config.agentModel);
    return out;
  }

  dispose(): void {
    this.trainer.dispose();
  }
}

export { TRAJECTORIES } from './checkpoint.ts';
