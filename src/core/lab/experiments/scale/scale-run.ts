/**
 * "Scale the team", the runner: the relay of 8, 16 and 32 agents under process reward (the AI judge)
 * and outcome reward, six stored runs trained in turn (smallest team first, process before outcome), with
 * the view (scale-maths.ts `scaleView`) posted after every iteration and evaluation. Each run is trained as the
 * lesson's are (stored-runs.ts `trainStoredRun`: stored, resumed after a reload, its training time kept with it),
 * so a finished experiment is read back whole with no model loaded (`readBack`). The process run measures the
 * untrained team; the outcome run of the same size (same seed, same problems, same base model) reads it from
 * there and measures only its end.
 *
 * For: experiments.ts (the lab's `experiment` request). Not for: the maths and words (scale-maths.ts) or drawing (Scale.svelte).
 *
 * Example: const s = new ScaleExperiment(host);
 *          await s.run(signal);           // posts a ScaleView after every step; rows[2] is the relay of 32
 *          (await s.readBack()).status    // 'done' after a reload
 */
import { resolveTrainConfig } from '../../../domains/index.ts';
import { remainingSeconds } from '../run-maths.ts';
import { allEvals, clearStoredRun, inTurn, readStoredRun, trainStoredRun, type ExperimentHost } from '../stored-runs.ts';
import { EXPERIMENT_WORDS } from '../experiment-names.ts';
import {
  runGenerations, SCALE_MODES, SCALE_PLAN, scalePatch, scaleView, type ScaleMode, type ScalePlan, type ScaleRunData, type ScaleView,
} from './scale-maths.ts';

/** What the experiment needs of the lab (stored-runs.ts), posting its own view. */
export type ScaleHost = ExperimentHost<ScaleView>;

/** The button as a paused experiment shows it (Scale.svelte), named in the words a paused experiment ends in. */
const SCALE_BUTTON = EXPERIMENT_WORDS.scale.goOn;

export class ScaleExperiment {
  private readonly runs: ScaleRunData[] = [];
  private readonly started = performance.now();
  private current: ScaleView['current'] = null;
  /** Generations done in this page, and when the first piece of work ended (after the models loaded): the pace. */
  private done = 0;
  private paceFrom: { at: number; done: number } | null = null;
  private readonly perIteration: number;

  constructor(private readonly host: ScaleHost, private readonly plan: ScalePlan = SCALE_PLAN) {
    const c = resolveTrainConfig(scalePatch(plan.sizes[0], 'process', plan));
    this.perIteration = c.promptsPerIteration * c.samplesPerPrompt;
  }

  private total(): number {
    return this.plan.sizes.reduce((t, n) => t + SCALE_MODES.reduce((u, m) => u + runGenerations(n, m, this.plan, this.perIteration), 0), 0);
  }

  /** Generations done: finished runs whole, the others by their iterations and evaluations so far. */
  private progress(): { done: number; total: number } {
    let done = 0;
    for (const r of this.runs) {
      const all = runGenerations(r.n, r.mode, this.plan, this.perIteration);
      if (r.done) done += all;
      else done += Math.min(all, r.n * (r.iteration * this.perIteration + r.evals.filter((e) => e.result.of === undefined).length * 2 * this.plan.evalTasks));
    }
    return { done, total: this.total() };
  }

  private view(status: ScaleView['status'], message?: string): ScaleView {
    const now = performance.now();
    if (!this.paceFrom && this.done > 0) this.paceFrom = { at: now, done: this.done };
    const progress = this.progress();
    const pace = this.paceFrom
      ? remainingSeconds((now - this.paceFrom.at) / 1000, this.done - this.paceFrom.done, Math.max(0, progress.total - progress.done)) : null;
    return scaleView(this.runs, this.plan, this.perIteration, {
      status, current: this.current, elapsed: (now - this.started) / 1000, remaining: status === 'running' ? pace : 0, progress,
      ...(message ? { message } : {}),
    });
  }

  private show(status: ScaleView['status'], message?: string): void {
    this.host.post(this.view(status, message));
  }

  private record(n: number, mode: ScaleMode, runId: string): ScaleRunData {
    let data = this.runs.find((r) => r.n === n && r.mode === mode);
    if (!data) {
      data = { n, mode, runId, iteration: 0, done: false, evals: [] };
      this.runs.push(data);
    }
    return data;
  }

  /** What the store holds (no model, no training): 'done' when all its runs are finished, 'paused' when some work is stored, else idle. */
  async readBack(): Promise<ScaleView> {
    for (const n of this.plan.sizes) {
      for (const mode of SCALE_MODES) {
        const stored = await readStoredRun(this.host, resolveTrainConfig(scalePatch(n, mode, this.plan)));
        if (!stored) continue;
        const { runId, ...read } = stored;
        Object.assign(this.record(n, mode, runId), read);
      }
    }
    const finished = this.runs.filter((r) => r.done).length;
    const all = this.plan.sizes.length * SCALE_MODES.length;
    const status = finished === all ? 'done' : this.runs.length ? 'paused' : 'idle';
    const message = status === 'paused' ? `stopped after ${finished} of ${all} runs: press "${SCALE_BUTTON}" to train the rest` : undefined;
    return { ...this.view(status, message), remaining: status === 'done' ? 0 : null, readBack: true };
  }

  /** Trains the runs in turn (finished ones are read back); `fresh`: delete them first and train all again. */
  async run(signal: AbortSignal, opts: { fresh?: boolean } = {}): Promise<'done' | 'paused'> {
    const prepare = async () => {
      if (opts.fresh) await this.clearAll();
      await this.readBack();
      this.show('running');
      return 'done' as const;
    };
    const steps = this.plan.sizes.flatMap((n) => SCALE_MODES.map((mode) => () => this.one(n, mode, signal)));
    return inTurn([prepare, ...steps], signal, SCALE_BUTTON, (status, message) => {
      this.current = null;
      this.show(status, message);
    });
  }

  private async clearAll(): Promise<void> {
    this.runs.length = 0;
    for (const n of this.plan.sizes) {
      for (const mode of SCALE_MODES) {
        await clearStoredRun(this.host, this.host.runId(resolveTrainConfig(scalePatch(n, mode, this.plan))), 'the team-scaling run');
      }
    }
  }

  /** One run, trained to its end here (finished runs are left as stored). */
  private async one(n: number, mode: ScaleMode, signal: AbortSignal): Promise<'done' | 'paused'> {
    const patch = scalePatch(n, mode, this.plan);
    const c = resolveTrainConfig(patch);
    const data = this.record(n, mode, this.host.runId(c));
    if (data.done) return 'done';
    this.current = { n, mode, iteration: data.iteration, iterations: c.iterations };
    const ran = await trainStoredRun(this.host, patch, `scale: relay of ${n}, ${mode}, seed ${c.seed}`, signal, {
      opened: (session) => {
        data.evals = allEvals(session.history);
        data.iteration = session.trainer.iteration;
        this.current = { n, mode, iteration: data.iteration, iterations: c.iterations };
        this.show('running');
      },
      evaluated: (iteration, result) => {
        data.evals = [...data.evals.filter((e) => e.iteration !== iteration), { iteration, result }];
        this.done += 2 * result.tasks * n;
        this.show('running');
      },
      iterated: (m) => {
        data.iteration = m.iteration;
        this.done += m.generations ?? n * this.perIteration;
        this.current = { n, mode, iteration: m.iteration, iterations: c.iterations };
        this.show('running');
      },
    }, { baseline: mode === 'process' });
    Object.assign(data, { seconds: ran.seconds, finishedAt: ran.finishedAt });
    if (ran.how !== 'done') return 'paused';
    data.done = true;
    this.show('running');
    return 'done';
  }
}
