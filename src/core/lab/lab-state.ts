/**
 * What the page's lab is doing, in one place: one explicit state, and for each request whether that
 * state allows it, or why not, in words. The lab (lab.ts) holds one LabMode and asks `refusal` before
 * it acts; the page asks the same function, on the state it was last told, to disable a button and give
 * it the reason as its tooltip. Nothing else says whether the lab is busy, read-only or lost.
 *
 *   state      what the lab does                                         on the wire (LabState)
 *   booting    starting its backend                                      'booting'
 *   loading    opening a run (a configuration, a model, a dataset)       'loading'
 *   ready      a run is open and idle: never started, or paused          'ready' (the message says "paused")
 *   running    training the run (activity 'training' or 'step'), the run
 *              and its twin ('compare'), teaching a judge ('teach') or an
 *              experiment (its name: experiment-names.ts)                'running' + activity
 *   pausing    Pause was heard; the loop stops at its next safe point    'pausing' + activity
 *   readonly   another tab writes the open run; this one follows it      'readonly'
 *   lost       the WebGPU device was lost: only recover is possible      'lost'
 *   error      the run could not be opened (failed): a new configuration 'error'
 *
 * For: lab.ts (the transitions) and the page (disabling what a state refuses).
 * Not for: the training (core/loop) or the experiments' own progress (their views).
 *
 * Example: refusal({ state: 'readonly' }, 'start')
 *   -> 'this run is training in another tab, so this tab shows it read-only; press "Take over" to train it here'
 *          refusal({ state: 'ready' }, 'start') -> null
 */
import { EXPERIMENT_NAMES, EXPERIMENT_WORDS, type ExperimentName } from './experiments/experiment-names.ts';

/**
 * Where the lab is, as the page hears it: what its buttons may do now (`refusal`).
 * 'readonly': another tab trains this run; this one follows it and can take it over.
 */
export type LabState = 'booting' | 'loading' | 'ready' | 'running' | 'pausing' | 'readonly' | 'lost' | 'error';

/** What a running lab is doing: its run ('training', 'step'), the run and its twin ('compare'), teaching a judge, or an experiment. */
export type Activity = 'training' | 'step' | 'compare' | 'teach' | ExperimentName;

/** The lab's state with what each one holds (only the lab sees this; the page hears its name). */
export type LabMode =
  | { state: 'booting' }
  | { state: 'loading'; opening: Promise<unknown> }
  | { state: 'ready' }
  | { state: 'running'; activity: Activity; controller: AbortController; done: Promise<void> }
  | { state: 'pausing'; activity: Activity; controller: AbortController; done: Promise<void> }
  | { state: 'readonly'; runId: string; partial: unknown; iteration: number }
  | { state: 'lost'; checkpoint: number }
  | { state: 'error'; message: string };

/** The requests a state may refuse (the others, such as listing runs or exporting, read only). */
export type GatedRequest = 'configure' | 'start' | 'step' | 'compare' | 'experiment' | 'reset' | 'takeOver' | 'recover' | 'importAdapter'
  | 'importDataset' | 'loadModel' | 'pause';

/** What the page knows of the state: its name and, while running, its activity. */
export interface StateName {
  state: LabState;
  activity?: Activity;
}

const DOING: Record<Activity, string> = {
  training: 'the run is training',
  step: 'the run is training one iteration',
  compare: 'the run and its twin are training',
  teach: 'the judge is being taught',
  ...Object.fromEntries(EXPERIMENT_NAMES.map((name) => [name, EXPERIMENT_WORDS[name].doing])) as Record<ExperimentName, string>,
};

/** What a running lab does, in words ("the lesson is running"): what another tab of the page is told. */
export function doing(activity: Activity | undefined): string {
  return DOING[activity ?? 'training'];
}

/** What starts something new (a run's loop or an experiment): refused alike by the states that cannot train. */
const STARTS = new Set<GatedRequest>(['start', 'step', 'compare', 'experiment', 'reset']);

/**
 * Why state `s` refuses `request`, in words the page can show, or null when it allows it. Requests
 * made while a run is being opened are not refused: the lab waits for the opening, then asks again
 * (so a setting typed and then Start clicked at once trains the typed setting).
 */
export function refusal(s: StateName, request: GatedRequest): string | null {
  switch (s.state) {
    case 'booting': // the backend is up once the page asks anything: its first configuration opens the first run
      return request === 'configure' ? null : 'the page is still starting its backend; wait a moment';
    case 'loading':
      return null;
    case 'ready':
      return request === 'pause' ? 'nothing is running' : request === 'takeOver' ? 'this tab already trains its run' : null;
    case 'running':
      if (request === 'pause') return null;
      if (request === 'start' && (s.activity === 'training' || s.activity === 'compare')) return null; // already going: nothing to do
      return `${DOING[s.activity ?? 'training']}; pause it first`;
    case 'pausing':
      return `${DOING[s.activity ?? 'training']} and is pausing; wait until it has stopped`;
    case 'readonly':
      if (request === 'takeOver' || request === 'configure') return null;
      if (request === 'experiment') return 'another tab trains in this browser; experiments run in that tab (or press "Take over" first)';
      return 'this run is training in another tab, so this tab shows it read-only; press "Take over" to train it here';
    case 'lost':
      if (request === 'recover') return null;
      return 'the WebGPU device was lost; restart it or continue on wasm (the buttons in the banner), or reload the page';
    case 'error':
      // Reset is the way out of a stored run that cannot be read: it opens the refused run afresh.
      if ((STARTS.has(request) && request !== 'reset') || request === 'importAdapter') {
        return 'no run is open: its configuration was refused (see the banner); change the setting';
      }
      return request === 'pause' ? 'nothing is running' : request === 'takeOver' ? 'this tab shows no other tab\'s run' : null;
  }
  return null;
}

/** The state's name as the page hears it. */
export function nameOf(mode: LabMode): StateName {
  return mode.state === 'running' || mode.state === 'pausing' ? { state: mode.state, activity: mode.activity } : { state: mode.state };
}
