/**
 * The lab's interface: the requests the page makes (each answered once by a reply with the same id)
 * and the stream of events it hears. Plain, structured-clone-able data only. `LabApi` is the whole
 * interface as methods: lab.ts implements it in the training worker, and the page's client
 * (src/worker/client.ts) is a proxy of the same interface over messages.
 *
 * For: src/core/lab/lab.ts, src/worker/ (both sides of the message channel) and src/ui.
 * Not for: the training itself (core/loop) — the loop never sees these types.
 *
 * Example (page):  post {id: 3, type: 'start', args: {single: true}}  ->  reply {type: 'reply', id: 3, ok: true, value: null}
 *                  meanwhile events: {type: 'event', event: {kind: 'train', event: {type: 'phase', ...}}}
 */
import type { RunPlanSummary } from '../measure/run-plan.ts';
import type { WebLlmModelInfo } from '../coach/webllm-coach.ts';
import type { BackendInfo, BackendName, WebGPULimits } from '../engine/backend.ts';
import type { EvalResult, IterationMetrics, TrainEvent } from '../loop/records.ts';
import type { TrainConfig } from '../loop/config.ts';
import type { LessonView } from './experiments/lesson/lesson-maths.ts';
import type { CreditMethodsView } from './experiments/credit-methods/credit-methods-maths.ts';
import type { ScaleView } from './experiments/scale/scale-maths.ts';
import type { CoachQuality } from './coach-quality.ts';
import type { Activity, LabState } from './lab-state.ts';
import type { ExperimentName } from './experiments/experiment-names.ts';
import type { DeskRequest, DeskView, TeachProgress } from './desk/desk-requests.ts';
import type { TrajectoryView } from './views.ts';
import type { PersonQuestion } from '../coach/person-tier.ts';

export interface RunRecord {
  runId: string;
  /** Short human label, e.g. "process, seed 0". */
  label: string;
  config: unknown;
  iteration: number;
  updatedAt: number;
  /** The writer token: bumped by each tab that claims the run; a store with an older one may not write. */
  writer?: number;
}

/** Coach engines beyond the config's own ('model' | 'rule'): a WebLLM prebuilt model. */
export interface WebLlmChoice {
  /** web-llm prebuilt model id, e.g. "Qwen2.5-0.5B-Instruct-q4f32_1-MLC". */
  modelId: string;
}

export type ExportKind = 'adapters' | 'trajectories' | 'metrics';

/** The page's answer to one card of a coach in tiers (score null: skipped), or "skip every open card" (person-cards.ts). */
export type PersonReply = { id: string; score: number | null } | { skipAll: true };

/** What `open` opens: each opens (or resumes) one run, and the lab's state says 'loading' until it is open. */
export type OpenArgs =
  /** A configuration (a partial config, validated as the CLI does): the settings, a link. */
  | { config: unknown }
  /** A run this browser holds, by its id (?run=), with its dataset when it has one. */
  | { runId: string }
  /** The open run afresh from iteration 0: its saved state is deleted (Reset). */
  | { again: true }
  /** The run another tab trains: that tab is asked to pause and let go (or it is taken), then it trains here at once. */
  | { takeOver: true }
  /** The open settings with another agent base model: a hub-layout URL or hub id, or picked files. */
  | { model: { url?: string; files?: File[] } }
  /** The open settings coached by a WebLLM model (null: back to the config's own coach). */
  | { webllm: WebLlmChoice | null };

export interface OpenedRun {
  config: TrainConfig;
  runId: string;
  iteration: number;
  resumed: boolean;
  /** With `model`: the model loaded. */
  model?: { name: string; parameters: number };
}

/** What each experiment's event carries (experiment-names.ts lists them; the registry is experiments.ts). */
export interface ExperimentViews {
  lesson: LessonView;
  creditMethods: CreditMethodsView;
  scale: ScaleView;
}

/**
 * The requests: a few generic ones, as web-llm's engine has, so that a new experiment or a new way to open
 * a run adds no request. Each is answered once; what takes long (training, an experiment) answers when it
 * has begun and speaks through events.
 */
export interface Requests {
  /** Start the backend (forced or automatic) and remember where the site lives. */
  init: { args: { backend?: BackendName; webgpuLimits?: WebGPULimits; baseUrl: string; baseline?: boolean }; value: BackendInfo };
  /** Open a run (OpenArgs says which); resumed when the browser holds it. */
  open: { args: OpenArgs; value: OpenedRun };
  /**
   * Train the open run until paused or done; `single`: one iteration, answered when it ends; `twin`: "process vs
   * outcome", this run and its twin under the other reward mode (same seed) in turn, one iteration each.
   */
  start: { args: { single?: boolean; twin?: boolean }; value: null };
  /** Stop what runs at its next safe point (a checkpoint): the loop, an experiment, a judge's teaching. */
  pause: { args: Record<string, never>; value: null };
  /**
   * Run experiment `name` (experiment-names.ts), resumed where it stopped; answered at once, its views come as
   * 'experiment' events. `fresh`: delete its stored runs and train them again.
   */
  experiment: { args: { name: ExperimentName; fresh?: boolean }; value: null };
  /** The judge desk (desk/judge-desk.ts): correct the open run's judge, list, undo, export, import, ask, teach ('teach' events while it teaches). */
  desk: { args: DeskRequest; value: DeskView };
  /** Tier 3 of a coach in tiers (person-cards.ts): the person's answer to one card (score null: skipped), or skip them all; the cards still open. */
  person: { args: PersonReply; value: { open: number } };
  /** Run code in the agents' tool sandbox (Pyodide / QuickJS), as an agent's code block would. */
  tool: { args: { code: string; language: 'python' | 'javascript' }; value: { stdout: string; stderr: string; error?: string } };
  /** A file of the open run to download. */
  export: { args: { what: ExportKind }; value: { name: string; mime: string; bytes: Uint8Array } };
  /**
   * An upload: an agent's PEFT adapter into the open run, or a JSONL dataset to train on (it opens a new run,
   * the open one is kept, and a 'notice' says so).
   */
  import: {
    args: { adapter: { agentId: string; files: Record<string, Uint8Array> } } | { dataset: { text: string; name: string } };
    value: { agentId: string } | { tasks: number; errors: string[] };
  };
  /** The saved runs with their records, and each run's team (workflow name and domain) as its settings resolve. */
  saved: { args: Record<string, never>; value: (RunRecord & { team: { name: string; domain: string } | null; metrics: IterationMetrics[] })[] };
  /** web-llm's prebuilt chat models a WebLLM coach can be, smallest first. */
  coaches: { args: Record<string, never>; value: WebLlmModelInfo[] };
  /**
   * The device: after a loss, `recover` rebuilds on that backend from the last checkpoint; `lose` (a test
   * hook) destroys the WebGPU device to exercise the loss.
   */
  device: { args: { recover: BackendName } | { lose: true }; value: BackendInfo | null };
}

export type RequestType = keyof Requests;

/** The lab as methods, one per request: lab.ts implements it, the page's client proxies it. */
export type LabApi = { [K in RequestType]: (args: Requests[K]['args']) => Promise<Requests[K]['value']> };

/** Every request, at run time (the worker refuses any other; the client makes one method each): a request missing here fails to compile. */
export const REQUEST_TYPES = Object.keys({
  init: 0, open: 0, start: 0, pause: 0, experiment: 0, desk: 0, person: 0, tool: 0, export: 0, import: 0, saved: 0, coaches: 0, device: 0,
} satisfies Record<RequestType, 0>) as RequestType[];

export type RequestMessage = { [K in RequestType]: { id: number; type: K; args: Requests[K]['args'] } }[RequestType];

export type ReplyMessage =
  | { type: 'reply'; id: number; ok: true; value: unknown }
  | { type: 'reply'; id: number; ok: false; error: string };


/** Long steps the page shows a bar for; `eta` is seconds left when it can be estimated. */
export interface ProgressInfo {
  task: 'download' | 'prefill' | 'decode' | 'rollout' | 'coach' | 'update' | 'eval' | 'checkpoint' | 'baseline' | 'webllm';
  label: string;
  done: number;
  total: number;
  /** Seconds this step is expected to take in all (from the last time it ran), for a timed bar. */
  expected?: number;
  /** Seconds left, when it can be estimated from a rate (downloads). */
  eta?: number;
  /** 'done' removes the bar. */
  finished?: boolean;
}

export type WorkerEvent =
  /** `summary` is describeBackend(info), one line for logs and the page. */
  | { kind: 'backend'; info: BackendInfo; summary: string }
  /** A run was opened (configure, reset, model or coach change): its config and the patch it came from. */
  | { kind: 'run'; config: TrainConfig; partial: unknown; runId: string; iteration: number; resumed: boolean;
      /** Lane workers helping this one (0: it works alone). */ lanes: number;
      /** The coach that scores this run, by name ("rule:relay", "model:models/relay-judge", "webllm:..."). */ coach: string;
      /** What that coach is in one line: what it reads and its measured ranking against the rater (coach-quality.ts). */ coachQuality: CoachQuality;
      /** Training prompts there are to pick from at the run's level (an iteration asking for more picks each one once). */ pool: number;
      /** The imported dataset the run trains on, by file name (null: the team's generated problems). */ dataset?: string | null;
      /** The run's memory plan on this backend (src/core/measure/run-plan.ts); Start refuses a run that does not fit. */ plan: RunPlanSummary }
  /** The lab's state (lab-state.ts); while running or pausing, what runs: 'training', 'step', 'compare' or an experiment. */
  | { kind: 'state'; state: LabState; activity?: Activity; iteration: number; message?: string }
  | { kind: 'progress'; progress: ProgressInfo }
  /** Trainer events except 'trajectories', which arrive as the lighter 'trajectories' kind. */
  | { kind: 'train'; event: Exclude<TrainEvent, { type: 'trajectories' }> }
  | { kind: 'trajectories'; iteration: number; trajectories: TrajectoryView[] }
  /** Everything saved for a run, sent after configure (resume) so charts are whole after a reload. */
  | {
      kind: 'history'; runId: string; metrics: IterationMetrics[]; evals: { iteration: number; result: EvalResult }[];
      trajectories: { iteration: number; trajectories: TrajectoryView[] } | null;
    }
  | { kind: 'model'; name: string; parameters: number; bytes: number }
  /**
   * The comparison's other run moved on: an iteration (`iteration` of `iterations`), or an evaluation
   * (`eval`: a running estimate while `result.of` is set, then the finished one), drawn beside the run's own.
   */
  | { kind: 'partner'; runId: string; mode: string; iteration: number; iterations: number; eval?: { iteration: number; result: EvalResult } }
  /** An experiment's view after each of its steps: every curve, interval and sentence the page draws (its <name>-maths.ts). */
  | ExperimentEvent
  | { kind: 'error'; message: string }
  /** Teaching a judge (judge-desk.ts): its phase and how far it is. */
  | { kind: 'teach'; progress: TeachProgress }
  /**
   * Tier 3 (person-cards.ts): the coach asks the person about `questions` and waits at most `waitSeconds` (until `until`, ms
   * since the epoch); no questions: the wait is over, and `outcome` says what came of it.
   */
  | { kind: 'person'; questions: PersonQuestion[]; waitSeconds: number; until: number; outcome?: { answered: number; skipped: number; unanswered: number } }
  /** Something the user should know that is not an error (an imported dataset opened a new run): a banner until dismissed. */
  | { kind: 'notice'; message: string }
  | { kind: 'deviceLost'; reason: string; message: string; checkpointIteration: number };

/** The 'experiment' event of each experiment, with its own view. */
export type ExperimentEvent = { [K in ExperimentName]: { kind: 'experiment'; name: K; view: ExperimentViews[K] } }[ExperimentName];

export type EventMessage = { type: 'event'; event: WorkerEvent };
