/**
 * An experiment: several stored runs trained in turn to answer one question, with a view the page draws
 * after every step, a stored result a reload reads back with no model loaded, and one way to start
 * (`run`, resumed where it stopped; `fresh` trains again), stop (its signal: it pauses at a checkpoint)
 * and fail (its promise rejects; the lab says why). The lesson (lesson.ts) and the credit comparison
 * (credit-methods-run.ts) are the two; a later one (team scaling, teaching a judge) is one more row of EXPERIMENTS.
 * The lab's own scaffold (lab.ts `experiment`) runs any of them alike: the state says "running" with the
 * experiment as its activity (lab-state.ts), Pause aborts it, and whatever ends it returns the lab to ready.
 *
 * For: lab.ts. Not for: an experiment's maths or words (lesson-maths.ts, credit-methods-maths.ts).
 *
 * Example: const e = EXPERIMENTS.lesson.open(host);
 *          await e.run(signal, { fresh: false });   // posts {kind: 'lesson', view} after every iteration
 *          (await e.readBack()).status              // 'done' | 'paused' | 'idle'
 */
import { CreditComparison } from './credit-methods/credit-methods-run.ts';
import { Lesson, type LessonHost } from './lesson/lesson-run.ts';
import type { WorkerEvent } from '../protocol.ts';
import { ScaleExperiment } from './scale/scale-run.ts';

export type ExperimentName = 'lesson' | 'creditMethods' | 'scale';

/** What every experiment is to the lab. */
export interface Experiment {
  /** Trains what is missing of it in turn; 'paused' when `signal` aborts. */
  run(signal: AbortSignal, opts: { fresh?: boolean }): Promise<'done' | 'paused'>;
  /** What the store holds of it (no model, no training); its status 'idle' when nothing is stored. */
  readBack(): Promise<{ status: string }>;
}

/** What an experiment needs of the lab: the lesson's host, with the lab's own event stream. */
export type ExperimentHost = Omit<LessonHost, 'post'> & { post(e: WorkerEvent): void };

export interface ExperimentKind {
  /** What the state line says while it runs. */
  words: string;
  open(host: ExperimentHost): Experiment;
  /** Experiments whose stored runs this one may train too: their views are read back when it ends. */
  shares: ExperimentName[];
}

export const EXPERIMENTS: Record<ExperimentName, ExperimentKind> = {
  lesson: {
    words: 'the lesson: relay teams of 2, 4 and 6 agents, process vs outcome reward',
    open: (host) => new Lesson({ ...host, post: (view) => host.post({ kind: 'lesson', view }) }),
    shares: [],
  },
  creditMethods: {
    words: 'comparing credit methods: process, outcome, counterfactual and groups at 4 agents',
    open: (host) => new CreditComparison({ ...host, post: (view) => host.post({ kind: 'creditMethods', view }) }),
    // It trains the lesson's two 4-agent runs when they are missing: the lesson then shows them.
    shares: ['lesson'],
  },
  scale: {
    words: 'scaling the team: relay teams of 8, 16, 32 and 64 agents, process (AI judge) vs outcome reward',
    open: (host) => new ScaleExperiment({ ...host, post: (view) => host.post({ kind: 'scale', view }) }),
    shares: [],
  },
};

/**
 * The stored view of each experiment, posted as its event (the page draws them at once after a reload);
 * `running`: whether an experiment runs now (its own views are the ones to show, not a read-back's).
 */
export async function readBackAll(host: ExperimentHost, running: () => boolean = () => false): Promise<void> {
  for (const name of Object.keys(EXPERIMENTS) as ExperimentName[]) {
    const view = await EXPERIMENTS[name].open(host).readBack();
    // The lesson's idle view names its coach; an idle comparison shows nothing until pressed.
    if (running() || (name !== 'lesson' && view.status === 'idle')) continue;
    host.post({ kind: name, view } as WorkerEvent);
  }
}
