/**
 * The lesson on the first screen: the relay team (src/core/domains/relay/) of 2, 4 and 6 agents,
 * each trained under process reward (the coach scores every step) and under outcome reward (every
 * step gets the team's 0/1): six runs, the same seed and problems, so that the claim of MAPPA shows
 * in minutes: process reward teaches every agent, outcome reward falls further behind the longer
 * the chain (../../../../shared/CREDIT.md, README "The relay team").
 *
 * Two halves: the maths (lesson-summary.ts, pure: `lessonView` turns the runs' evaluations into what
 * the page draws) and, here, the runner (`Lesson`): it opens and trains each run with RunSession, as
 * the lab's own runs (stored in the platform's run store, so a reload resumes them), and posts the
 * view after every step.
 * For: lab.ts (the `lesson` request); the page only draws the LessonView it is sent (Lesson.svelte).
 * Not for: drawing, or any training maths (core/loop, core/rl).
 *
 * Example: const view = lessonView(runs, LESSON_PLAN);  // rows[1].words ->
 *          "4 agents: process 73.5 % [67.0, 79.1], outcome 50.5 % [43.6, 57.4], +23.0 pts [+14.2, +31.3] ..."
 */
import type { RunStore } from '../loop/checkpoint.ts';
import { resolveTrainConfig, type TrainConfig } from '../loop/config.ts';
import { RunSession, type RunParts } from '../loop/session.ts';
import type { EvalResult } from '../loop/records.ts';
import { agentStepsOfEval, evaluationUnits, iterationUnits, LESSON_MODES, LESSON_PLAN, lessonPatch, lessonView, remainingSeconds, runUnits, type LessonMode, type LessonPlan, type LessonRunData, type LessonView } from './lesson-summary.ts';

export * from './lesson-summary.ts';

/** What the lesson needs of the lab: the parts a config trains with, its store, its run id, and a writer's lock. */
export interface LessonHost {
  parts(c: TrainConfig): Promise<RunParts>;
  store(runId: string): RunStore & { describe(label: string, config: unknown, iteration: number): Promise<void>; claim?(): Promise<void> };
  runId(c: TrainConfig): string;
  /** The right to write a run (platforms with tabs); null: another tab trains it. */
  claim?(runId: string): Promise<{ release(): void } | null>;
  post(view: LessonView): void;
}

export class Lesson {
  private readonly runs: LessonRunData[] = [];
  private readonly started = performance.now();
  private unitsDone = 0;
  /** When the first piece of work finished (after the models loaded) and the units done then: the pace is measured from there. */
  private paceFrom: { at: number; units: number } | null = null;
  private current: number | null = null;
  private readonly rolloutsPerIteration: number;

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
      status, current: this.current, elapsed, remaining: status === 'running' ? pace : 0, message,
    }));
  }

  /** Trains the six runs in turn (finished ones are read back); 'paused' when `signal` aborts. */
  async run(signal: AbortSignal): Promise<'done' | 'paused'> {
    try {
      for (const n of this.plan.sizes) {
        for (const mode of LESSON_MODES) {
          if (signal.aborted || (await this.one(n, mode, signal)) === 'paused') {
            this.current = null;
            this.show('paused', 'paused: press "Run the lesson" to go on where it stopped');
            return 'paused';
          }
        }
      }
      this.current = null;
      this.show('done');
      return 'done';
    } catch (e) {
      this.current = null;
      this.show('failed', (e as Error).message);
      throw e;
    }
  }

  /** Opens one run (resumed when stored) and trains it to the end (its evaluations measure its agents). */
  private async one(n: number, mode: LessonMode, signal: AbortSignal): Promise<'done' | 'paused'> {
    const patch = lessonPatch(n, mode, this.plan);
    const c = resolveTrainConfig(patch);
    const runId = this.host.runId(c);
    const lock = this.host.claim ? await this.host.claim(runId) : null;
    if (this.host.claim && !lock) throw new Error(`the lesson's run "${runId}" is training in another tab; close that tab or pause it there`);
    try {
      const store = this.host.store(runId);
      await store.claim?.();
      const parts = await this.host.parts(c);
      const data = this.record(n, mode, runId);
      this.current = this.runs.indexOf(data);
      const began = performance.now();
      const session = await this.open(c, parts, store, data);
      try {
        await store.describe(`lesson: relay of ${n}, ${mode}, seed ${c.seed}`, patch, session.trainer.iteration);
        this.show('running');
        const how = await session.run({ signal });
        await session.saveIfBehind();
        if (how !== 'done') return 'paused';
        data.done = true;
        this.show('running');
        return 'done';
      } finally {
        data.seconds = (data.seconds ?? 0) + (performance.now() - began) / 1000;
        session.dispose();
      }
    } finally {
      lock?.release();
    }
  }

  private record(n: number, mode: LessonMode, runId: string): LessonRunData {
    let data = this.runs.find((r) => r.n === n && r.mode === mode);
    if (!data) {
      data = { n, mode, runId, iteration: 0, done: false, evals: [], agents: {} };
      this.runs.push(data);
    }
    return data;
  }

  /** The run's session, with its history read back and its evaluations and iterations fed into `data`. */
  private async open(c: TrainConfig, parts: RunParts, store: RunStore, data: LessonRunData): Promise<RunSession> {
    // Each agent's step accuracy before and after: the greedy pass of the untrained team's evaluation and of the last one.
    const agentsOf = () => {
      const at = (it: number) => data.evals.find((e) => e.iteration === it)?.result;
      const base = at(0);
      const final = at(c.iterations);
      data.agents = { base: base && agentStepsOfEval(base), final: final && agentStepsOfEval(final) };
    };
    const addEval = (iteration: number, result: EvalResult) => {
      if (result.of !== undefined) return;
      data.evals = [...data.evals.filter((e) => e.iteration !== iteration), { iteration, result }];
      agentsOf();
      this.unitsDone += evaluationUnits(c.workflow.agents.length, this.plan);
      this.show('running');
    };
    const session = await RunSession.open(c, parts, { store, baseline: true, emit: (e) => (e.type === 'eval' ? addEval(e.iteration, e.result) : undefined) });
    const { metrics, evals } = session.history;
    data.evals = [...evals, ...metrics.filter((m) => m.eval).map((m) => ({ iteration: m.iteration, result: m.eval! }))];
    agentsOf();
    data.iteration = session.trainer.iteration;
    session.trainer.on((e) => {
      if (e.type === 'eval') addEval(e.iteration, e.result);
      if (e.type !== 'iteration') return;
      data.iteration = e.metrics.iteration;
      this.unitsDone += iterationUnits(c.workflow.agents.length);
      this.show('running');
    });
    return session;
  }
}
