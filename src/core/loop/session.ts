/**
 * A run's whole life, the same for `mappa train` and the page: open it from its store (fresh, or
 * resumed from the checkpoint with the lost records after it dropped), measure the untrained team,
 * train iteration after iteration, keep every trajectory, evaluate every `evalEvery` iterations,
 * stop at a pause with nothing lost, and hand out the trained adapters as PEFT files.
 *
 * The loop is plain: each queued evaluation whole, then each iteration, whose own evaluation is
 * measured whole at its end. A caller that wants evaluations fitted around training instead (the
 * page: their running estimates arrive while the team learns) passes a `StepHook`
 * (compute/alongside.ts): it plays each iteration with evaluation chunks around it, and the
 * remaining evaluations come in its `finalChunk` sizes at the end.
 *
 * For: src/cli/train.ts and src/core/lab/lab.ts (the page's worker); each drives a run through this.
 * Not for: building the model, coach or Compute (the caller passes them) or drawing anything.
 *
 * Example: const s = await RunSession.open(config, { agentModel, coach, tools, compute }, { store, emit });
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
import { StepAborted, Trainer, type RunParts } from './train.ts';
import { splitRecords, type EvalResult, type IterationMetrics, type StoredRecord } from './records.ts';
import { parseUsed, usedChange, type RunUsed } from './models-used.ts';


export type SessionEvent =
  /** A running (result.of set) or final evaluation of the team as it was after `iteration`. */
  | { type: 'eval'; iteration: number; result: EvalResult }
  | { type: 'warning'; message: string }
  | { type: 'done'; iteration: number };

/**
 * Evaluation work fitted around each iteration (compute/alongside.ts has the page's). `around` plays
 * `step` (one iteration; null when a pause stopped it) with whatever it runs alongside or after it, and
 * records each evaluation chunk it runs with `record`; a pause (`signal`) stops that work at its next
 * decoding step too. The session's own loop stays the same.
 */
export interface StepHook {
  around(step: () => Promise<IterationMetrics | null>, session: RunSession, signal?: AbortSignal): Promise<IterationMetrics | null>;
  /** Problems per chunk for the evaluations left after the last iteration. */
  readonly finalChunk: number;
}

export interface SessionOptions {
  store?: RunStore | null;
  /** Evaluations fitted around training (the page); none: each evaluation whole, in its place. */
  hook?: StepHook;
  /** Measure the untrained team (default true; false: it is measured elsewhere, e.g. by the compared run). */
  baseline?: boolean;
  /** Delete what the store holds first: the run starts again from iteration 0. */
  fresh?: boolean;
  /**
   * The models and coach template this run uses (models-used.ts): written into every checkpoint as
   * used.json; a resumed run whose checkpoint names others is refused (ModelsChangedError) unless
   * `acceptChangedModels`.
   */
  used?: RunUsed;
  acceptChangedModels?: boolean;
  emit: (e: SessionEvent) => void;
}

/** What the store held for this run when it was opened. */
export interface RunHistory {
  resumed: boolean;
  metrics: IterationMetrics[];
  evals: { iteration: number; result: EvalResult }[];
}

export class RunSession {
  private lastCheckpoint: number;

  constructor(
    readonly trainer: Trainer,
    readonly queue: EvalQueue,
    private readonly opts: SessionOptions,
    readonly history: RunHistory = { resumed: false, metrics: [], evals: [] },
  ) {
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
    if (opts.fresh) await opts.store?.clear();
    const store = opts.store && opts.used ? recordingUsed(opts.store, opts.used) : opts.store;
    opts = { ...opts, store };
    const saved = store ? await store.load() : null;
    if (saved && opts.used && !opts.acceptChangedModels) {
      const change = usedChange(parseUsed(saved['used.json'], 'the checkpoint\'s used.json'), opts.used);
      if (change) throw new ModelsChangedError(change);
    }
    const trainer = await Trainer.create(config, parts, { store, resume: Boolean(saved) });
    parts.coach.resumeAt?.(trainer.iteration); // a coach in tiers numbers its person's questions by iteration
    const history: RunHistory = { resumed: Boolean(saved), metrics: [], evals: [] };
    let records: StoredRecord[] = [];
    if (store) {
      for (const message of await store.cutBack(trainer.iteration)) opts.emit({ type: 'warning', message });
      records = await store.metrics();
      Object.assign(history, splitRecords(records));
      if (!saved) await store.writeFile(TRAJECTORIES, '');
    }
    const session = new RunSession(trainer, new EvalQueue(config, parts.team, trainer.compute, { heldOut: parts.dataset?.eval }), opts, history);
    const measured = records.filter((r) => r.eval).map((r) => r.iteration);
    session.queueMissing(opts.baseline === false ? [0, ...measured] : measured);
    // A run keeps finished evaluations only: one that a stopped run (a pause, a closed tab, a take-over by
    // another tab, a kill) had begun is measured again from its first problem, and says so.
    if (saved) {
      for (const it of session.queue.pending) {
        const whose = it === 0 ? 'the untrained team' : `the team after iteration ${it}`;
        const message = `the held-out evaluation of ${whose} starts again from its first problem (a stopped run keeps finished evaluations only)`;
        opts.emit({ type: 'warning', message });
      }
    }
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

  /** Reports an evaluation chunk (a running estimate), and stores it once its evaluation is finished. */
  async record(chunk: EvalChunk | null): Promise<void> {
    if (!chunk) return;
    this.opts.emit({ type: 'eval', iteration: chunk.iteration, result: chunk.result });
    if (chunk.finished) await this.opts.store?.appendMetrics({ iteration: chunk.iteration, eval: chunk.result });
  }

  /** The queued evaluations, one after the other, in chunks of `size` problems; false when a pause stopped them. */
  private async evaluateQueued(size: number, signal?: AbortSignal): Promise<boolean> {
    while (this.queue.pending.length) {
      if (signal?.aborted) return false;
      let chunk;
      try {
        chunk = await this.queue.runChunk(size, undefined, signal);
      } catch (e) {
        if (signal?.aborted) return false; // stopped at its next decoding step; the chunk runs again on resuming
        throw e;
      }
      await this.record(chunk);
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
    const { hook } = this.opts;
    for (;;) {
      if (!hook && !(await this.evaluateQueued(Infinity, opts.signal))) return 'paused';
      if (opts.signal?.aborted) return 'paused';
      if (this.trainer.iteration >= this.trainer.config.iterations) return this.finish(opts.signal);
      const step = () => this.step(opts.signal);
      const metrics = hook ? await hook.around(step, this, opts.signal) : await step();
      if (!metrics) return 'paused';
      if (opts.single) return 'stepped';
    }
  }

  /**
   * One iteration, its trajectories written; null when a pause stopped it before its update. Without a
   * hook, its own evaluation (when due) is measured whole at its end.
   */
  private async step(signal?: AbortSignal): Promise<IterationMetrics | null> {
    try {
      const metrics = await this.trainer.step({ signal, evaluate: this.opts.hook ? undefined : this.evaluateNow });
      await this.flushed();
      return metrics;
    } catch (e) {
      if (e instanceof StepAborted) return null;
      throw e;
    }
  }

  /** After the last iteration: the evaluations still queued. */
  private async finish(signal?: AbortSignal): Promise<'paused' | 'done'> {
    if (!(await this.evaluateQueued(this.opts.hook?.finalChunk ?? Infinity, signal))) return 'paused';
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

/**
 * A resumed run whose checkpoint was made with other models (or another coach template) than it would use now.
 * Worded for the page (its Reset); `mappa train --resume` checks first and names its own flag (cli/run-setup.ts).
 */
class ModelsChangedError extends Error {
  constructor(readonly change: string) {
    super(`this run's checkpoint was made with other models: ${change}; put them back, or press Reset to start this run again`);
    this.name = 'ModelsChangedError';
  }
}

/** The store with `used` written into every checkpoint it saves (used.json beside state.json). */
function recordingUsed(store: RunStore, used: RunUsed): RunStore {
  const json = new TextEncoder().encode(JSON.stringify(used, null, 1));
  return {
    save: (files) => store.save({ ...files, 'used.json': json }),
    load: () => store.load(),
    appendMetrics: (r) => store.appendMetrics(r),
    writeFile: (n, d) => store.writeFile(n, d),
    readFile: (n) => store.readFile(n),
    appendText: (n, t) => store.appendText(n, t),
    metrics: <T>() => store.metrics<T>(),
    cutBack: (i) => store.cutBack(i),
    clear: () => store.clear(),
  };
}

