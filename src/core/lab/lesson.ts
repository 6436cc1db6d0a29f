/**
 * The lesson on the first screen: the relay team (src/core/domains/relay/) of 2, 4 and 6 agents,
 * each trained under process reward (the coach scores every step) and under outcome reward (every
 * step gets the team's 0/1): six runs, the same seed and problems, so that the claim of MAPPA shows
 * in minutes: process reward teaches every agent, outcome reward falls further behind the longer
 * the chain (docs/credit.md: the prediction, its derivation and its limits).
 *
 * Two halves: the maths (lesson-summary.ts, pure: `lessonView` turns the runs' evaluations into what
 * the page draws) and, here, the runner (`Lesson`): it opens and trains each run with RunSession, as
 * the lab's own runs (stored in the platform's run store, so a reload resumes them), and posts the
 * view after every step. Each run stores the seconds it took to train (LESSON_TIME), so a finished
 * lesson is read back whole after a reload (`readBack`: no model, no training) with the date it
 * finished and its training time; `run(signal, { fresh: true })` trains all six again.
 * For: lab.ts (the `lesson` request); the page only draws the LessonView it is sent (Lesson.svelte).
 * Not for: drawing, or any training maths (core/loop, core/rl).
 *
 * Example: const view = lessonView(runs, LESSON_PLAN);  // rows[1].words ->
 *          "4 agents: process 73.5 % vs outcome 50.5 %, a gap of +23.0 pts [+14.2, +31.3] (paired, the same 200 problems). ..."
 */
import type { RunStore } from '../loop/checkpoint.ts';
import { type TrainConfig } from '../loop/config.ts';
import { resolveTrainConfig } from '../domains/index.ts';
import { RunSession, type RunParts } from '../loop/session.ts';
import type { EvalResult, IterationMetrics } from '../loop/records.ts';
import type { CoachQuality } from './coach-quality.ts';
import { LAST_TRAJECTORIES, trajectoryViews } from './exports.ts';
import {
  agentStepsOfEval, evaluationUnits, iterationUnits, LESSON_MODES, LESSON_PLAN, lessonPatch, lessonView, remainingSeconds, runUnits, trainedTime,
  type LessonMode, type LessonPlan, type LessonRunData, type LessonView,
} from './lesson-summary.ts';

export * from './lesson-summary.ts';

/** A lesson run's stored training time: seconds spent training and evaluating it (summed over every time it ran), and when it finished. */
export const LESSON_TIME = 'lesson-time.json';
interface LessonTime {
  seconds: number;
  finishedAt?: number;
}

/** What the lesson needs of the lab: the parts a config trains with, its store, its run id, and a writer's lock. */
export interface LessonHost {
  parts(c: TrainConfig): Promise<RunParts>;
  store(runId: string): RunStore & { describe(label: string, config: unknown, iteration: number): Promise<void>; claim?(): Promise<void> };
  runId(c: TrainConfig): string;
  /** The right to write a run (platforms with tabs); null: another tab trains it. */
  claim?(runId: string): Promise<{ release(): void } | null>;
  post(view: LessonView): void;
  /** What the coach of a run of `c` is (coach-quality.ts): `coachName` the one that scores it, else the one its config names (no model loaded). */
  coachQuality?(c: TrainConfig, coachName?: string): Promise<CoachQuality>;
}

/** What trainStoredRun reports as a run trains: its finished evaluations and its iterations. */
export interface RunListener {
  /** The session is open, with what the store held of the run. */
  opened(session: RunSession): void;
  evaluated(iteration: number, result: EvalResult): void;
  iterated(metrics: IterationMetrics): void;
}

/** A stored run's training time (LESSON_TIME), or nothing for runs trained before it was recorded. */
export async function storedTime(store: RunStore): Promise<{ seconds?: number; finishedAt?: number }> {
  const text = await store.readFile(LESSON_TIME);
  if (typeof text !== 'string') return {};
  try {
    const t = JSON.parse(text) as LessonTime;
    return { seconds: t.seconds, ...(t.finishedAt === undefined ? {} : { finishedAt: t.finishedAt }) };
  } catch {
    return {};
  }
}

/**
 * Opens one stored run (resumed when stored, claimed while it trains) and trains it to its end: the
 * lesson's runs and the credit comparison's. The seconds it trained here are added to its stored time
 * (LESSON_TIME), with the moment it finished. 'paused' when `signal` aborts.
 */
export async function trainStoredRun(host: Omit<LessonHost, 'post'>, patch: Record<string, unknown>, label: string, signal: AbortSignal,
  listen: RunListener, opts: { baseline?: boolean } = {}): Promise<{ how: 'done' | 'paused'; seconds?: number; finishedAt?: number; coach: string }> {
  const c = resolveTrainConfig(patch);
  const runId = host.runId(c);
  const lock = host.claim ? await host.claim(runId) : null;
  if (host.claim && !lock) throw new Error(`the run "${runId}" (${label}) is training in another tab; close that tab or pause it there`);
  try {
    const store = host.store(runId);
    await store.claim?.();
    const parts = await host.parts(c);
    const session = await RunSession.open(c, parts, {
      store, baseline: opts.baseline ?? true,
      emit: (e) => (e.type === 'eval' && e.result.of === undefined ? listen.evaluated(e.iteration, e.result) : undefined),
    });
    const stored = await storedTime(store);
    const { metrics, evals } = session.history;
    const finished = session.trainer.iteration >= c.iterations
      && [...evals, ...metrics.filter((m) => m.eval).map((m) => ({ iteration: m.iteration }))].some((e) => e.iteration === c.iterations);
    listen.opened(session);
    session.trainer.on((e) => {
      if (e.type === 'eval' && e.result.of === undefined) listen.evaluated(e.iteration, e.result);
      if (e.type === 'iteration') listen.iterated(e.metrics);
      // Its last batch, as the page's own runs keep it: "Open in the inspector" then shows its rollouts.
      if (e.type === 'trajectories') {
        void trajectoryViews(c.workflow, e.trajectories, parts.coach.name)
          .then((trajectories) => store.writeFile(LAST_TRAJECTORIES, JSON.stringify({ iteration: e.iteration, trajectories })))
          .catch(() => undefined); // a view not kept only leaves the inspector empty when the run is opened again
      }
    });
    const began = performance.now();
    let how: 'done' | 'paused' | 'stepped' = 'paused';
    let time: LessonTime | null = null;
    try {
      await store.describe(label, patch, session.trainer.iteration);
      how = await session.run({ signal });
      await session.saveIfBehind();
    } finally {
      // The time it trained here is stored with it (a finished run read back adds none).
      if (!finished) {
        time = { seconds: (stored.seconds ?? 0) + (performance.now() - began) / 1000, ...(how === 'done' ? { finishedAt: Date.now() } : {}) };
        await store.writeFile(LESSON_TIME, JSON.stringify(time)).catch(() => undefined);
      }
      session.dispose();
    }
    return { how: how === 'done' ? 'done' : 'paused', ...(time ?? stored), coach: parts.coach.name };
  } finally {
    lock?.release();
  }
}

export class Lesson {
  private readonly runs: LessonRunData[] = [];
  private readonly started = performance.now();
  private unitsDone = 0;
  /** When the first piece of work finished (after the models loaded) and the units done then: the pace is measured from there. */
  private paceFrom: { at: number; units: number } | null = null;
  private current: number | null = null;
  private readonly rolloutsPerIteration: number;
  /** A measured length for the estimate before the first run's pace is known: the last whole lesson's training time. */
  private previous: number | null = null;
  /** What scores the process runs (coach-quality.ts), once known. */
  private coach: CoachQuality | null = null;

  constructor(private readonly host: LessonHost, private readonly plan: LessonPlan = LESSON_PLAN) {
    const c = resolveTrainConfig(lessonPatch(plan.sizes[0], 'process', plan));
    this.rolloutsPerIteration = c.promptsPerIteration * c.samplesPerPrompt;
  }

  private unitsLeft(): number {
    let left = 0;
    for (const n of this.plan.sizes) for (const mode of LESSON_MODES) {
      const r = this.runs.find((x) => x.n === n && x.mode === mode);
      if (!r?.done) left += runUnits(n, this.plan) * (1 - (r?.iteration ?? 0) / (this.plan.iterations + 1));
    }
    return left;
  }

  /** Posts the view as it stands. */
  private show(status: LessonView['status'], message?: string): void {
    const now = performance.now();
    const elapsed = (now - this.started) / 1000;
    if (!this.paceFrom && this.unitsDone > 0) this.paceFrom = { at: now, units: this.unitsDone };
    const pace = this.paceFrom ? remainingSeconds((now - this.paceFrom.at) / 1000, this.unitsDone - this.paceFrom.units, this.unitsLeft()) : null;
    this.host.post(lessonView(this.runs, this.plan, this.rolloutsPerIteration, {
      status, current: this.current, elapsed, remaining: status === 'running' ? pace ?? this.previous : 0, message, coach: this.coach,
    }));
  }

  /**
   * What the store holds of the lesson, without loading a model or training: its runs' evaluations,
   * iterations and stored training times. 'done' when all six are finished, 'paused' when some work is
   * stored, else the idle view.
   */
  async readBack(): Promise<LessonView> {
    for (const n of this.plan.sizes) {
      for (const mode of LESSON_MODES) {
        const c = resolveTrainConfig(lessonPatch(n, mode, this.plan));
        const runId = this.host.runId(c);
        const store = this.host.store(runId);
        const records = await store.metrics<{ iteration: number; eval?: EvalResult; perAgent?: unknown }>();
        if (!records.length) continue;
        const metrics = records.filter((r) => r.perAgent) as IterationMetrics[];
        const evals = [...records.filter((r) => r.eval && !r.perAgent), ...metrics.filter((m) => m.eval)]
          .map((r) => ({ iteration: r.iteration, result: r.eval! }));
        const data = this.record(n, mode, runId);
        data.evals = evals;
        data.iteration = metrics.at(-1)?.iteration ?? 0;
        data.done = data.iteration >= c.iterations && evals.some((e) => e.iteration === c.iterations && e.result.of === undefined);
        this.agentsOf(data, c.iterations);
        Object.assign(data, await storedTime(store));
      }
    }
    await this.coachOf();
    const done = this.runs.filter((r) => r.done).length;
    const all = this.plan.sizes.length * LESSON_MODES.length;
    const status = done === all ? 'done' : this.runs.length ? 'paused' : 'idle';
    const view = lessonView(this.runs, this.plan, this.rolloutsPerIteration, {
      status, current: null, elapsed: 0, remaining: status === 'done' ? 0 : null, coach: this.coach,
      message: status === 'paused' ? `stopped after ${done} of ${all} runs: press "Go on with the lesson" to train the rest` : undefined,
    });
    return { ...view, readBack: true };
  }

  /** The process runs' coach (what it is and its measured ranking): the one that scored them, else the one their config names. */
  private async coachOf(coachName?: string): Promise<void> {
    if (!this.host.coachQuality || (this.coach && !coachName)) return;
    this.coach = await this.host.coachQuality(resolveTrainConfig(lessonPatch(this.plan.sizes[0], 'process', this.plan)), coachName).catch(() => this.coach);
  }

  /**
   * Trains the six runs in turn (finished ones are read back); 'paused' when `signal` aborts.
   * `fresh`: delete the stored runs first and train all six again (the last whole lesson's training
   * time is the estimate until the first run's pace is known).
   */
  async run(signal: AbortSignal, opts: { fresh?: boolean } = {}): Promise<'done' | 'paused'> {
    const prepare = async () => {
      if (opts.fresh) await this.clearAll();
      await this.coachOf();
      return 'done' as const;
    };
    const runs = this.plan.sizes.flatMap((n) => LESSON_MODES.map((mode) => () => this.one(n, mode, signal)));
    return inTurn([prepare, ...runs], signal, 'Run the lesson', (status, message) => {
      this.current = null;
      this.show(status, message);
    });
  }

  /** Deletes the six stored runs (each claimed while it is deleted), keeping the last whole lesson's training time as the first estimate. */
  private async clearAll(): Promise<void> {
    if (!this.runs.length) await this.readBack();
    this.previous = trainedTime(this.runs, this.plan)?.seconds ?? null;
    this.runs.length = 0;
    for (const n of this.plan.sizes) {
      for (const mode of LESSON_MODES) {
        await clearStoredRun(this.host, this.host.runId(resolveTrainConfig(lessonPatch(n, mode, this.plan))), 'the lesson\'s run');
      }
    }
    this.show('running');
  }

  /** Opens one run (resumed when stored) and trains it to the end (its evaluations measure its agents). */
  private async one(n: number, mode: LessonMode, signal: AbortSignal): Promise<'done' | 'paused'> {
    const patch = lessonPatch(n, mode, this.plan);
    const c = resolveTrainConfig(patch);
    const data = this.record(n, mode, this.host.runId(c));
    this.current = this.runs.indexOf(data);
    const agentsOf = () => this.agentsOf(data, c.iterations);
    const ran = await trainStoredRun(this.host, patch, `lesson: relay of ${n}, ${mode}, seed ${c.seed}`, signal, {
      opened: (session) => {
        const { metrics, evals } = session.history;
        data.evals = [...evals, ...metrics.filter((m) => m.eval).map((m) => ({ iteration: m.iteration, result: m.eval! }))];
        agentsOf();
        data.iteration = session.trainer.iteration;
        this.show('running');
      },
      evaluated: (iteration, result) => {
        data.evals = [...data.evals.filter((e) => e.iteration !== iteration), { iteration, result }];
        agentsOf();
        this.unitsDone += evaluationUnits(c.workflow.agents.length, this.plan);
        this.show('running');
      },
      iterated: (m) => {
        data.iteration = m.iteration;
        this.unitsDone += iterationUnits(c.workflow.agents.length);
        this.show('running');
      },
    });
    Object.assign(data, { seconds: ran.seconds, finishedAt: ran.finishedAt });
    if (mode === 'process') await this.coachOf(ran.coach);
    if (ran.how !== 'done') return 'paused';
    data.done = true;
    this.show('running');
    return 'done';
  }

  private record(n: number, mode: LessonMode, runId: string): LessonRunData {
    let data = this.runs.find((r) => r.n === n && r.mode === mode);
    if (!data) {
      data = { n, mode, runId, iteration: 0, done: false, evals: [], agents: {} };
      this.runs.push(data);
    }
    return data;
  }

  /** Each agent's step accuracy before and after: the greedy pass of the untrained team's evaluation and of the last one. */
  private agentsOf(data: LessonRunData, iterations: number): void {
    const at = (it: number) => data.evals.find((e) => e.iteration === it)?.result;
    const base = at(0);
    const final = at(iterations);
    data.agents = { base: base && agentStepsOfEval(base), final: final && agentStepsOfEval(final) };
  }
}

/**
 * Runs `steps` in turn (each 'paused' when the signal aborted it), and ends the view once: 'done', 'paused'
 * with the button that goes on, or 'failed' with the error (rethrown). The lesson and the credit comparison
 * both train their runs this way.
 * Example: await inTurn([() => train(a), () => train(b)], signal, 'Run the lesson', (status, m) => show(status, m))
 */
export async function inTurn(steps: (() => Promise<'done' | 'paused'>)[], signal: AbortSignal, button: string,
  end: (status: 'done' | 'paused' | 'failed', message?: string) => void): Promise<'done' | 'paused'> {
  try {
    for (const step of steps) {
      if (signal.aborted || (await step()) === 'paused') {
        end('paused', `paused: press "${button}" to go on where it stopped`);
        return 'paused';
      }
    }
    end('done');
    return 'done';
  } catch (e) {
    end('failed', (e as Error).message);
    throw e;
  }
}

/** Deletes a stored run, holding its writer's right meanwhile (another tab training it is an error naming `what`). */
export async function clearStoredRun(host: Pick<LessonHost, 'claim' | 'store'>, runId: string, what: string): Promise<void> {
  const lock = host.claim ? await host.claim(runId) : null;
  if (host.claim && !lock) throw new Error(`${what} "${runId}" is training in another tab; close that tab or pause it there`);
  try {
    const store = host.store(runId);
    await store.claim?.();
    await store.clear();
  } finally {
    lock?.release();
  }
}
