/**
 * The lesson on the first screen: the relay team (src/core/domains/relay/) of 2, 4 and 6 agents,
 * each trained under process reward (the coach scores every step) and under outcome reward (every
 * step gets the team's 0/1): six runs, the same seed and problems, so that the claim of MAPPA shows
 * in minutes: process reward teaches every agent, outcome reward falls further behind the longer
 * the chain (docs/credit.md: the prediction, its derivation and its limits).
 *
 * Two halves: the maths (lesson-maths.ts, pure: `lessonView` turns the runs' evaluations into what
 * the page draws) and, here, the runner (`Lesson`): it opens and trains each run with RunSession, as
 * the lab's own runs (stored in the platform's run store, so a reload resumes them), and posts the
 * view after every step. Each run stores the seconds it took to train (stored-runs.ts RUN_TIME), so a finished
 * lesson is read back whole after a reload (`readBack`: no model, no training) with the date it
 * finished and its training time; `run(signal, { fresh: true })` trains all six again.
 * For: experiments.ts (the lab's `experiment` request); the page only draws the LessonView it is sent (Lesson.svelte).
 * Not for: drawing, or any training maths (core/loop, core/rl).
 *
 * Example: const view = lessonView(runs, LESSON_PLAN);  // rows[1].words ->
 *          "4 agents: process 73.5 % vs outcome 50.5 %, a gap of +23.0 pts [+14.2, +31.3] (paired, the same 200 problems). ..."
 */
import { resolveTrainConfig } from '../../../domains/index.ts';
import type { CoachQuality } from '../../coach-quality.ts';
import { allEvals, clearStoredRun, inTurn, readStoredRun, trainStoredRun, type ExperimentHost } from '../stored-runs.ts';
import { EXPERIMENT_WORDS } from '../experiment-names.ts';
import { evaluationUnits, iterationUnits, LESSON_PLAN, lessonPatch, lessonView, runUnits, trainedTime, type LessonPlan, type LessonRunData, type LessonView } from './lesson-maths.ts';
import { agentStepsOfEval, PAIR_MODES, remainingSeconds, type PairMode } from '../run-maths.ts';

/** What the lesson needs of the lab (stored-runs.ts), posting its own view. */
export type LessonHost = ExperimentHost<LessonView>;

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
    for (const n of this.plan.sizes) for (const mode of PAIR_MODES) {
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
      for (const mode of PAIR_MODES) {
        const c = resolveTrainConfig(lessonPatch(n, mode, this.plan));
        const stored = await readStoredRun(this.host, c);
        if (!stored) continue;
        const { runId, ...read } = stored;
        const data = Object.assign(this.record(n, mode, runId), read);
        this.agentsOf(data, c.iterations);
      }
    }
    await this.coachOf();
    const done = this.runs.filter((r) => r.done).length;
    const all = this.plan.sizes.length * PAIR_MODES.length;
    const status = done === all ? 'done' : this.runs.length ? 'paused' : 'idle';
    const view = lessonView(this.runs, this.plan, this.rolloutsPerIteration, {
      status, current: null, elapsed: 0, remaining: status === 'done' ? 0 : null, coach: this.coach,
      message: status === 'paused' ? `stopped after ${done} of ${all} runs: press "${EXPERIMENT_WORDS.lesson.goOn}" to train the rest` : undefined,
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
    const runs = this.plan.sizes.flatMap((n) => PAIR_MODES.map((mode) => () => this.one(n, mode, signal)));
    return inTurn([prepare, ...runs], signal, EXPERIMENT_WORDS.lesson.goOn, (status, message) => {
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
      for (const mode of PAIR_MODES) {
        await clearStoredRun(this.host, this.host.runId(resolveTrainConfig(lessonPatch(n, mode, this.plan))), 'the lesson\'s run');
      }
    }
    this.show('running');
  }

  /** Opens one run (resumed when stored) and trains it to the end (its evaluations measure its agents). */
  private async one(n: number, mode: PairMode, signal: AbortSignal): Promise<'done' | 'paused'> {
    const patch = lessonPatch(n, mode, this.plan);
    const c = resolveTrainConfig(patch);
    const data = this.record(n, mode, this.host.runId(c));
    this.current = this.runs.indexOf(data);
    const agentsOf = () => this.agentsOf(data, c.iterations);
    const ran = await trainStoredRun(this.host, patch, `lesson: relay of ${n}, ${mode}, seed ${c.seed}`, signal, {
      opened: (session) => {
        data.evals = allEvals(session.history);
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

  private record(n: number, mode: PairMode, runId: string): LessonRunData {
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

