/**
 * An experiment: several stored runs trained in turn to answer one question, with a view the page draws
 * after every step, a stored result a reload reads back with no model loaded, and one way to start
 * (`run`, resumed where it stopped; `fresh` trains again), stop (its signal: it pauses at a checkpoint)
 * and fail (its promise rejects; the lab says why). Each lives in its folder here, its runner
 * (<name>-run.ts) beside its maths (<name>-maths.ts); they share stored-runs.ts. A new one (the coming
 * coaches in tiers) is a folder, a row of EXPERIMENTS and one of experiment-names.ts: the lab's one
 * `experiment` request and its scaffold (lab.ts) run any of them alike: the state says "running" with
 * the experiment as its activity (lab-state.ts), Pause aborts it, and whatever ends it returns the lab to ready.
 *
 * For: lab.ts. Not for: an experiment's maths or words (<name>-maths.ts).
 *
 * Example: const e = EXPERIMENTS.lesson.open(host);
 *          await e.run(signal, { fresh: false });   // posts {kind: 'experiment', name: 'lesson', view} after every iteration
 *          (await e.readBack()).status              // 'done' | 'paused' | 'idle'
 */
import type { ExperimentEvent, ExperimentViews } from '../protocol.ts';
import { CreditComparison } from './credit-methods/credit-methods-run.ts';
import { EXPERIMENT_NAMES, type ExperimentName } from './experiment-names.ts';
import { Lesson } from './lesson/lesson-run.ts';
import { ScaleExperiment } from './scale/scale-run.ts';
import type { ExperimentHost } from './stored-runs.ts';

/** What every experiment is to the lab. */
export interface Experiment<View> {
  /** Trains what is missing of it in turn; 'paused' when `signal` aborts. */
  run(signal: AbortSignal, opts: { fresh?: boolean }): Promise<'done' | 'paused'>;
  /** What the store holds of it (no model, no training); its status 'idle' when nothing is stored. */
  readBack(): Promise<View>;
}

export interface ExperimentKind<View> {
  open(host: ExperimentHost<View>): Experiment<View>;
  /** Experiments whose stored runs this one may train too: their views are read back when it ends. */
  shares: ExperimentName[];
}

export const EXPERIMENTS: { [K in ExperimentName]: ExperimentKind<ExperimentViews[K]> } = {
  lesson: { open: (host) => new Lesson(host), shares: [] },
  // It trains the lesson's two 4-agent runs when they are missing: the lesson then shows them.
  creditMethods: { open: (host) => new CreditComparison(host), shares: ['lesson'] },
  scale: { open: (host) => new ScaleExperiment(host), shares: [] },
};

/** The lab's host for experiment `name`: its views go out as that experiment's event. */
function hostFor<K extends ExperimentName>(name: K, host: ExperimentHost<ExperimentEvent>): ExperimentHost<ExperimentViews[K]> {
  return { ...host, post: (view) => host.post({ kind: 'experiment', name, view } as ExperimentEvent) };
}

/** Opens experiment `name` on the lab's host. */
export function openExperiment<K extends ExperimentName>(name: K, host: ExperimentHost<ExperimentEvent>): Experiment<ExperimentViews[K]> {
  return (EXPERIMENTS[name] as ExperimentKind<ExperimentViews[K]>).open(hostFor(name, host));
}

/**
 * The stored view of each experiment, posted as its event (the page draws them at once after a reload);
 * `running`: whether an experiment runs now (its own views are the ones to show, not a read-back's).
 */
export async function readBackAll(host: ExperimentHost<ExperimentEvent>, running: () => boolean = () => false): Promise<void> {
  for (const name of EXPERIMENT_NAMES) {
    const view = await openExperiment(name, host).readBack();
    // The lesson's idle view names its coach; an idle comparison shows nothing until pressed.
    if (running() || (name !== 'lesson' && view.status === 'idle')) continue;
    host.post({ kind: 'experiment', name, view } as ExperimentEvent);
  }
}
