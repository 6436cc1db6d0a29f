/**
 * Everything the page shows, as Svelte 5 state fed only by worker events (one-way data flow):
 * backend, run state, the config in force, metrics per iteration, the latest trajectories,
 * progress bars, errors. Components read it; they change the run only through `client` requests.
 *
 * For: src/ui components. Not for: training (the worker) or the URL (url-config.ts).
 * Example: const run = new RunState(client); run.metrics.length; run.progress.rollout?.done
 */
import type { BackendInfo } from '../core/engine/backend.ts';
import type { TrainConfig } from '../core/loop/config.ts';
import type { RunPlanSummary } from '../core/measure/run-plan.ts';
import type { EvalResult, IterationMetrics } from '../core/loop/records.ts';
import type { TrainerClient } from '../worker/client.ts';
import type { LessonView } from '../core/lab/experiments/lesson/lesson-maths.ts';
import type { CreditMethodsView } from '../core/lab/experiments/credit-methods/credit-methods-maths.ts';
import type { ScaleView } from '../core/lab/experiments/scale/scale-maths.ts';
import type { CoachQuality } from '../core/lab/coach-quality.ts';
import type { ProgressInfo, WorkerEvent } from '../core/lab/protocol.ts';
import type { TrajectoryView } from '../core/lab/views.ts';
import { refusal, type Activity, type GatedRequest, type LabState } from '../core/lab/lab-state.ts';

/** What a tab refuses while another tab of the browser trains: whatever would train, or delete what is stored. */
const ELSEWHERE_REFUSES = new Set<GatedRequest>(['start', 'step', 'compare', 'experiment', 'reset']);

export interface RunEval {
  iteration: number;
  result: EvalResult;
}

export class RunState {
  backend: BackendInfo | null = $state(null);
  backendSummary = $state('');
  backendError: string | null = $state(null);
  state: LabState = $state('booting');
  /** While running or pausing: what runs ('training', 'step', 'compare', 'lesson', 'creditMethods'). */
  activity: Activity | undefined = $state(undefined);
  stateMessage: string | undefined = $state(undefined);
  iteration = $state(0);
  config: TrainConfig | null = $state(null);
  runId = $state('');
  /** Lane workers helping the training worker (one per extra core on wasm; 0 on webgpu or one core). */
  lanes: number | undefined = $state(undefined);
  /** The coach that scores the open run, by name ("rule:relay", "model:models/relay-judge"). */
  coach: string | null = $state(null);
  metrics: IterationMetrics[] = $state([]);
  evals: RunEval[] = $state([]);
  trajectories: { iteration: number; trajectories: TrajectoryView[] } | null = $state(null);
  progress: Record<string, ProgressInfo & { since: number }> = $state({});
  /** The lab's errors, newest last: cleared when a run opens or starts training (an error never outlives what it was about). */
  errors: string[] = $state([]);
  /** What the lab says the user should know (a dataset opened a new run): shown as a banner until dismissed. */
  notices: string[] = $state([]);
  model: { name: string; parameters: number; bytes: number } | null = $state(null);
  /** The open run's memory plan on this backend; Start refuses a run whose plan does not fit. */
  plan: RunPlanSummary | null = $state(null);
  deviceLost: { reason: string; message: string; checkpointIteration: number } | null = $state(null);
  /** The lesson on the first screen (six relay runs, process vs outcome), as the lab last sent it; null before its first press. */
  lesson: LessonView | null = $state(null);
  /** "Compare credit methods" at 4 agents, as the lab last sent it; null before its first press (or a stored one read back). */
  creditMethods: CreditMethodsView | null = $state(null);
  /** "Scale the team" (relay of 8 to 32 agents, process vs outcome), as the lab last sent it; null before its first press or read-back. */
  scale: ScaleView | null = $state(null);
  /** The "process vs outcome" twin while it is open: its mode, its iterations so far, and its evaluations (running estimates too). */
  partner: { runId: string; mode: string; iteration: number; iterations: number; evals: RunEval[] } | null = $state(null);
  /** What the open run's coach is (what it reads, its measured ranking against the rater), from the lab. */
  coachQuality: CoachQuality | null = $state(null);
  /** The imported dataset the open run trains on, by file name (null: the team's generated problems). */
  dataset: string | null = $state(null);
  /** Training prompts the open run can pick from at its level (Infinity: unknown). */
  pool = $state(Infinity);
  /** Bumped on every metrics change so charts can redraw cheaply. */
  version = $state(0);
  /**
   * Pause was pressed and the lab has not answered yet: the page says "pausing" at once (the worker may
   * be in the middle of a decoding step; its own 'pausing' and then 'ready' follow).
   */
  pauseRequested = $state(false);
  /**
   * What another tab of this browser is training now, in words ("the lesson is running"), or null
   * (training-signal.ts): this tab then refuses what would train or delete (ELSEWHERE_REFUSES).
   */
  elsewhere: string | null = $state(null);

  /** The state the page shows: 'pausing' from the moment Pause is pressed. */
  get shownState(): LabState {
    return this.pauseRequested && this.state === 'running' ? 'pausing' : this.state;
  }

  /** Pause pressed: shown as 'pausing' now, before the lab has heard it. */
  requestPause(): void {
    if (this.state === 'running') this.pauseRequested = true;
  }

  constructor(client: TrainerClient) {
    client.on((e) => this.apply(e));
  }

  apply(e: WorkerEvent): void {
    switch (e.kind) {
      case 'backend':
        this.backend = e.info;
        this.backendSummary = e.summary;
        break;
      case 'run':
        this.config = e.config;
        this.runId = e.runId;
        this.lanes = e.lanes;
        this.plan = e.plan;
        this.coach = e.coach;
        this.coachQuality = e.coachQuality;
        this.pool = e.pool;
        this.dataset = e.dataset ?? null;
        this.partner = null; // a run (re)opened: its twin is opened again by "Process vs outcome"
        this.errors = []; // what went wrong before was about the run that was open then
        break;
      case 'partner': {
        const was = this.partner?.runId === e.runId ? this.partner : null;
        let evals = was?.evals ?? [];
        if (e.eval) {
          const ev = { iteration: e.eval.iteration, result: e.eval.result };
          evals = [...evals.filter((x) => x.iteration !== ev.iteration), ev].sort((a, b) => a.iteration - b.iteration);
        }
        this.partner = { runId: e.runId, mode: e.mode, iteration: e.iteration, iterations: e.iterations, evals };
        this.version++;
        break;
      }
      case 'state':
        this.state = e.state;
        this.activity = e.activity;
        this.iteration = e.iteration;
        this.stateMessage = e.message;
        if (e.state !== 'running') this.pauseRequested = false;
        if (e.state === 'running') this.errors = []; // it trains now: a refusal or failure before it is stale
        break;
      case 'progress': {
        const key = e.progress.task;
        if (e.progress.finished) {
          const { [key]: _, ...rest } = this.progress;
          this.progress = rest;
        } else {
          const since = this.progress[key]?.since ?? performance.now();
          this.progress = { ...this.progress, [key]: { ...e.progress, since } };
        }
        break;
      }
      case 'history':
        this.runId = e.runId;
        this.metrics = e.metrics;
        // Evaluations are their own records (measured alongside training); older runs kept them in the iteration's.
        this.evals = [...e.evals, ...e.metrics.filter((m) => m.eval).map((m) => ({ iteration: m.iteration, result: m.eval! }))]
          .sort((a, b) => a.iteration - b.iteration);
        this.trajectories = e.trajectories;
        this.iteration = e.metrics.length ? e.metrics[e.metrics.length - 1].iteration : 0;
        this.version++;
        break;
      case 'trajectories':
        this.trajectories = { iteration: e.iteration, trajectories: e.trajectories };
        break;
      case 'train': {
        const ev = e.event;
        if (ev.type === 'iteration') {
          this.metrics = [...this.metrics, ev.metrics];
          this.iteration = ev.metrics.iteration;
          this.version++;
        } else if (ev.type === 'eval') {
          this.evals = [...this.evals.filter((x) => x.iteration !== ev.iteration), { iteration: ev.iteration, result: ev.result }]
            .sort((a, b) => a.iteration - b.iteration);
          this.version++;
        } else if (ev.type === 'warning') {
          this.notices = [...this.notices.slice(-2), ev.message]; // e.g. an evaluation a take-over starts again, a lane that failed
        }
        break;
      }
      case 'model':
        this.model = { name: e.name, parameters: e.parameters, bytes: e.bytes };
        break;
      case 'experiment':
        if (e.name === 'lesson') this.lesson = e.view;
        else if (e.name === 'creditMethods') this.creditMethods = e.view;
        else this.scale = e.view;
        break;
      case 'error':
        this.errors = [...this.errors.slice(-4), e.message];
        break;
      case 'notice':
        this.notices = [...this.notices.slice(-2), e.message];
        break;
      case 'deviceLost':
        this.deviceLost = { reason: e.reason, message: e.message, checkpointIteration: e.checkpointIteration };
        break;
    }
  }

  /** Something runs or a run is being opened: the settings wait. */
  get busy(): boolean {
    return this.state === 'running' || this.state === 'pausing' || this.state === 'loading';
  }

  /**
   * Why the lab's state refuses `request` now (core/lab/lab-state.ts, the lab's own rule), or null: a
   * button is disabled with these words as its tooltip. A request while a run is being opened is allowed:
   * the lab waits for the opening (a setting typed, then Start clicked at once).
   */
  refused(request: GatedRequest): string | null {
    if (!this.config && request !== 'configure') return this.state === 'error' ? refusal({ state: 'error' }, request) : 'the page is still loading its model';
    const own = refusal({ state: this.shownState, activity: this.activity }, request);
    if (own || !this.elsewhere || !ELSEWHERE_REFUSES.has(request)) return own;
    return `another tab of this browser is training (${this.elsewhere}); what trains or deletes stored results waits until it stops there, `
      + 'so that two trainings never share this machine\'s cores (pause it in that tab, or close it)';
  }

  dismissNotice(i: number): void {
    this.notices = this.notices.filter((_, k) => k !== i);
  }

  dismissError(i: number): void {
    this.errors = this.errors.filter((_, k) => k !== i);
  }
}
