/**
 * The lab's interface: the requests the page makes (each answered once by a reply with the same id)
 * and the stream of events it hears. Plain, structured-clone-able data only. `LabApi` is the whole
 * interface as methods: lab.ts implements it in the training worker, and the page's client
 * (src/worker/client.ts) is a proxy of the same interface over messages.
 *
 * For: src/core/lab/lab.ts, src/worker/ (both sides of the message channel) and src/ui.
 * Not for: the training itself (core/loop) — the loop never sees these types.
 *
 * Example (page):  post {id: 3, type: 'step'}  ->  reply {type: 'reply', id: 3, ok: true, value: null}
 *                  meanwhile events: {type: 'event', event: {kind: 'train', event: {type: 'phase', ...}}}
 */
import type { RunPlanSummary } from '../loop/run-plan.ts';
import type { WebLlmModelInfo } from '../coach/webllm-coach.ts';
import type { BackendInfo, BackendName, WebGPULimits } from '../engine/backend.ts';
import type { EvalResult, IterationMetrics, TrainEvent } from '../loop/records.ts';
import type { TrainConfig } from '../loop/config.ts';
import type { LessonView } from './experiments/lesson/lesson-run.ts';
import type { CreditMethodsView } from './experiments/credit-methods/credit-methods-maths.ts';
import type { ScaleView } from './experiments/scale/scale-maths.ts';
import type { CoachQuality } from './coach-quality.ts';
import type { Activity, LabState } from './lab-state.ts';
import type { DeskRequest, DeskView, TeachProgress } from './desk/judge-desk.ts';
import type { TrajectoryView } from './views.ts';

export type { LabState } from './lab-state.ts';

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

export interface Requests {
  /** Start the backend (forced or automatic) and remember where the site lives. */
  init: { args: { backend?: BackendName; webgpuLimits?: WebGPULimits; baseUrl: string; baseline?: boolean }; value: BackendInfo };
  /** Validate a partial config (as the CLI does) and open its run: resumes when the browser holds it. */
  configure: { args: { config: unknown }; value: { config: TrainConfig; runId: string; iteration: number; resumed: boolean } };
  start: { args: Record<string, never>; value: null };
  /** "Process vs outcome": open this run's twin under the other reward mode (same seed) and train both in turn. */
  compare: { args: Record<string, never>; value: { runId: string; mode: string } };
  pause: { args: Record<string, never>; value: null };
  /**
   * "Run the lesson": the relay team of 2, 4 and 6 agents under process and outcome reward, six runs in
   * turn (lesson.ts), resumed where they stopped; answered at once, its progress comes as 'lesson' events.
   * `fresh`: delete the stored lesson and train all six runs again ("Run the lesson again").
   */
  lesson: { args: { fresh?: boolean }; value: null };
  /**
   * "Compare credit methods": at the lesson's 4 agents, seed and budget of generations, the counterfactual and
   * state-group runs beside the lesson's own process and outcome runs (read back when stored, else trained);
   * answered at once, its progress comes as 'creditMethods' events. `fresh`: train its two new runs again.
   */
  creditMethods: { args: { fresh?: boolean }; value: null };
  /**
   * "Scale the team": the relay of 8, 16, 32 and 64 agents under process (AI judge) and outcome reward, eight runs
   * in turn (scale-run.ts), resumed where they stopped; answered at once, its progress comes as 'scale' events.
   * `fresh`: delete the stored runs and train all eight again.
   */
  scale: { args: { fresh?: boolean }; value: null };
  step: { args: Record<string, never>; value: null };
  /** This run trains in another tab: ask that tab to pause and let go (or take it if it does not answer), then open it here. */
  takeOver: { args: Record<string, never>; value: { iteration: number } };
  /** Delete the current run's saved state and start it afresh from iteration 0. */
  reset: { args: Record<string, never>; value: null };
  export: { args: { what: ExportKind }; value: { name: string; mime: string; bytes: Uint8Array } };
  importAdapter: { args: { agentId: string; files: Record<string, Uint8Array> }; value: { agentId: string } };
  /** Train on a JSONL dataset: opens a new run (the open one is kept) and says so in a 'notice'. */
  importDataset: { args: { text: string; name: string }; value: { tasks: number; errors: string[] } };
  /** Open a run this browser holds by its id (?run=), with its dataset when it has one. */
  openSaved: { args: { runId: string }; value: { config: TrainConfig; runId: string; iteration: number; resumed: boolean } };
  /** Load another agent base model: hub-layout URL / hub id, or picked files. Replaces the run. */
  loadModel: { args: { url?: string; files?: File[] }; value: { name: string; parameters: number } };
  /** The saved runs with their records, and each run's team (workflow name and domain) as its settings resolve. */
  listRuns: { args: Record<string, never>; value: (RunRecord & { team: { name: string; domain: string } | null; metrics: IterationMetrics[] })[] };
  /** web-llm's prebuilt chat models a WebLLM coach can be, smallest first. */
  webllmModels: { args: Record<string, never>; value: WebLlmModelInfo[] };
  /** Choose the WebLLM coach (null: back to the config's coach). */
  webllmCoach: { args: { choice: WebLlmChoice | null }; value: { name: string } };
  /** After a device loss: rebuild on another backend from the last checkpoint. */
  recover: { args: { backend: BackendName }; value: BackendInfo };
  /** Diagnostic: run code in the agents' tool sandbox (Pyodide / QuickJS), as an agent's code block would. */
  runTool: { args: { code: string; language: 'python' | 'javascript' }; value: { stdout: string; stderr: string; error?: string } };
  /** Test hook: destroy the WebGPU device to exercise the device-loss path. */
  loseDevice: { args: Record<string, never>; value: null };
  /** The judge desk (judge-desk.ts): correct the open run's judge, list, undo, export, import, ask, teach ('teach' events while it teaches). */
  judgeDesk: { args: DeskRequest; value: DeskView };
}

export type RequestType = keyof Requests;

/** The lab as methods, one per request: lab.ts implements it, the page's client proxies it. */
export type LabApi = { [K in RequestType]: (args: Requests[K]['args']) => Promise<Requests[K]['value']> };

/** Every request, at run time (the worker refuses any other; the client makes one method each). */
export const REQUEST_TYPES = ['init', 'configure', 'start', 'compare', 'pause', 'lesson', 'creditMethods', 'scale', 'step', 'takeOver', 'reset', 'export',
  'importAdapter', 'importDataset', 'openSaved', 'loadModel', 'listRuns', 'webllmModels', 'webllmCoach', 'recover', 'runTool', 'loseDevice',
  'judgeDesk',
] as const satisfies readonly RequestType[];
// A request missing from the list fails to compile here.
type Missing = Exclude<RequestType, (typeof REQUEST_TYPES)[number]>;
export const REQUEST_TYPES_COMPLETE: Missing extends never ? true : Missing = true;

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
      /** The run's memory plan on this backend (src/core/loop/run-plan.ts); Start refuses a run that does not fit. */ plan: RunPlanSummary }
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
  /** The lesson's state after each of its steps: every curve, interval and sentence the page draws (lesson.ts). */
  | { kind: 'lesson'; view: LessonView }
  /** "Compare credit methods": its table as it stands (credit-methods-maths.ts). */
  | { kind: 'creditMethods'; view: CreditMethodsView }
  /** "Scale the team": its rows, words and progress as they stand (scale-maths.ts). */
  | { kind: 'scale'; view: ScaleView }
  | { kind: 'error'; message: string }
  /** Teaching a judge (judge-desk.ts): its phase and how far it is. */
  | { kind: 'teach'; progress: TeachProgress }
  /** Something the user should know that is not an error (an imported dataset opened a new run): a banner until dismissed. */
  | { kind: 'notice'; message: string }
  | { kind: 'deviceLost'; reason: string; message: string; checkpointIteration: number };

export type EventMessage = { type: 'event'; event: WorkerEvent };
