/**
 * The lab: everything the page can ask of the sandbox, headless. It keeps one open run (a
 * RunSession, core/loop/session.ts, the same one `mappa train` drives) and, for "process vs
 * outcome", its twin; it loads models, builds the coach and the tools, trains until paused, and
 * streams what happens as events. Each of its methods answers one request of protocol.ts.
 *
 * For: the training worker (src/worker/trainer-worker.ts), which only passes messages to it; the
 * page's client proxies the same interface. What differs by platform (the run store, where models
 * and lanes come from, the tool sandbox) comes in as a LabPlatform.
 * Not for: drawing (src/ui) or any training maths (core/loop, core/rl).
 *
 * Example: const lab = new Lab(platform, (event) => postMessage({ type: 'event', event }));
 *          await lab.init({ baseUrl });                 // the backend: webgpu, else wasm
 *          await lab.configure({ config: {} });         // opens (or resumes) the embedded default run
 *          await lab.step({});                          // one iteration; events: phases, metrics, trajectories
 */
import { backendLimits, currentBackend, describeBackend, initBackend, onDeviceLost, restartWebGPU, webgpuDevice } from '../engine/backend.ts';
import { importPeft } from '../engine/lora/peft.ts';
import { memorySource } from '../engine/model/sources.ts';
import { alongside } from '../compute/alongside.ts';
import { computeFor } from '../compute/lanes.ts';
import { ConfigFileError, type TrainConfig } from '../loop/config.ts';
import { planForModel, type RunPlanSummary } from '../loop/run-plan.ts';
import type { RolloutTask } from '../loop/trajectory.ts';
import type { EvalResult, IterationMetrics } from '../loop/records.ts';
import { RunSession, TRAJECTORIES, type RunParts } from '../loop/session.ts';
import { usedBy } from '../loop/models-used.ts';
import { resolveTrainConfig } from '../domains/index.ts';
import { hashString } from '../stats/rng.ts';
import { formatDatasetErrors, parseJsonlDataset } from '../tasks/dataset.ts';
import { adapterFiles, LAST_TRAJECTORIES, metricsCsv, trajectoryViews, zipAdapters } from './exports.ts';
import { idleLessonView, type LessonHost } from './lesson.ts';
import { EXPERIMENTS, readBackAll, type ExperimentHost, type ExperimentName } from './experiment.ts';
import { nameOf, refusal, type Activity, type GatedRequest, type LabMode } from './lab-state.ts';
import { ProgressBars } from './progress.ts';
import type { LabApi, Requests, WorkerEvent } from './protocol.ts';
import { Shelf, type LabPlatform, type LabStore, type RunWriter } from './shelf.ts';
import { DESK_STORE, JudgeDesk, taughtSource } from './judge-desk.ts';

export type { LabPlatform } from './shelf.ts';

/** The file a dataset run keeps its imported JSONL in. */
const DATASET_FILE = 'dataset.jsonl';

type Args<K extends keyof Requests> = Requests[K]['args'];

/**
 * resolveTrainConfig as the CLI's, with the message in the page's words: the setting's label
 * where the CLI names its config path ("KL coefficient: must be ..." for "update.klCoef (KL coefficient): ...").
 */
function resolvePageConfig(partial: unknown): TrainConfig {
  try {
    return resolveTrainConfig(partial);
  } catch (e) {
    if (e instanceof ConfigFileError && e.path && e.label) throw new Error(e.message.replace(`${e.path} (${e.label})`, e.label));
    throw e;
  }
}
type Value<K extends keyof Requests> = Promise<Requests[K]['value']>;

export class Lab implements LabApi {
  private readonly bars: ProgressBars;
  private readonly shelf: Shelf;
  /** What the lab is doing, the one place that says it (lab-state.ts): every request asks it first. */
  private mode: LabMode = { state: 'booting' };
  /** Counts the openings of runs: only the latest one sets the state it ends in. */
  private openings = 0;
  /** Measure the untrained team alongside training (off with ?baseline=0: slow software GPUs). */
  private baselineEval = true;
  /** The open run: its config, the patch it came from, what it trains with, its store, session and memory plan. */
  private run: {
    config: TrainConfig; partial: unknown; runId: string; parts: RunParts; store: LabStore; session: RunSession; plan: RunPlanSummary;
  } | null = null;
  private partialConfig: unknown = {};
  /** The same run under the other reward mode, stepped in turn with this one ("process vs outcome"). */
  private partner: { runId: string; session: RunSession; writer?: RunWriter } | null = null;
  /** An imported JSONL dataset the team trains on instead of generated problems (null: generated). */
  private dataset: { name: string; tasks: RolloutTask[]; text: string } | null = null;
  /** The right to write the open run (platforms with tabs); null where the platform has one writer only. */
  private writer: { runId: string; lock: RunWriter } | null = null;
  /** The platform, with the judges taught in the page loadable by their spec ("taught:<name>-<hash>", judge-desk.ts). */
  private readonly platform: LabPlatform;
  /** Corrections of the open run's judge, and teaching it (judge-desk.ts). */
  private readonly desk: JudgeDesk;

  constructor(platform: LabPlatform, private readonly post: (e: WorkerEvent) => void) {
    const given = platform;
    const deskStore = given.store(DESK_STORE);
    const plain = (spec: string, base: string) => given.modelSource(spec, base);
    this.platform = Object.assign(Object.create(given) as LabPlatform, {
      modelSource: (spec: string, base: string) => (spec.startsWith('taught:') ? taughtSource(spec, deskStore, (p) => plain(p, base)) : plain(spec, base)),
    });
    platform = this.platform;
    this.bars = new ProgressBars((progress) => post({ kind: 'progress', progress }));
    this.shelf = new Shelf(platform, this.bars, post);
    this.desk = new JudgeDesk(deskStore, (spec) => this.platform.modelSource(spec, this.shelf.baseUrl), (spec) => this.shelf.model(spec));
    onDeviceLost((info) => {
      this.stopLoop();
      const at = this.run?.session.checkpointed ?? 0;
      this.setMode({ state: 'lost', checkpoint: at }, `WebGPU device lost (${info.reason}); the run stopped at its last checkpoint (iteration ${at})`);
      post({ kind: 'deviceLost', reason: info.reason, message: info.message, checkpointIteration: at });
    });
  }

  /** A lane's failure (the run goes on in this worker alone), shown as the run's warning. */
  private readonly warn = (message: string): void => {
    this.post({ kind: 'train', event: { type: 'warning', iteration: this.run?.session.trainer.iteration ?? 0, message } });
  };

  /** The one transition: the lab is now in `mode`, and the page hears its name, the iteration and why. */
  private setMode(mode: LabMode, message?: string): void {
    this.mode = mode;
    const iteration = this.run?.session.trainer.iteration ?? (mode.state === 'readonly' ? mode.iteration : 0);
    this.post({ kind: 'state', ...nameOf(mode), iteration, message });
  }

  /** Throws why the state refuses `request` (the page shows it), after any opening in flight has ended. */
  private async allow(request: GatedRequest): Promise<void> {
    await this.settle();
    const why = refusal(nameOf(this.mode), request);
    if (why) throw new Error(why);
  }

  /** Waits while a run is being opened (a setting just changed): what comes next acts on the run it opens. */
  private async settle(): Promise<void> {
    while (this.mode.state === 'loading') await this.mode.opening.catch(() => undefined);
  }

  /** Aborts what runs (the loop or an experiment: it stops at its next safe point); the promise it ends with, if any. */
  private stopLoop(): Promise<void> | null {
    const m = this.mode;
    if (m.state !== 'running' && m.state !== 'pausing') return null;
    m.controller.abort();
    return m.done;
  }

  /**
   * The one scaffold of whatever runs (the run's loop, the comparison with its twin, an experiment): the
   * state says `activity`, Pause aborts the signal `work` gets, an error is said once, and whatever ends
   * it returns the lab to ready, unless a device loss or another tab's take-over moved it on meanwhile.
   */
  private launch(activity: Activity, message: string | undefined, work: (signal: AbortSignal) => Promise<unknown>,
    after?: () => Promise<void>): Promise<void> {
    const controller = new AbortController();
    const mode: Extract<LabMode, { state: 'running' }> = { state: 'running', activity, controller, done: Promise.resolve() };
    const ours = () => (this.mode.state === 'running' || this.mode.state === 'pausing') && this.mode.controller === controller;
    this.setMode(mode, message);
    mode.done = (async () => {
      let failed: string | undefined;
      try {
        await work(controller.signal);
      } catch (e) {
        if (ours()) {
          this.reportError(e);
          failed = this.failedWords(e as Error);
        }
      } finally {
        this.bars.clear();
        await after?.().catch((e) => this.reportError(e));
      }
      if (ours()) this.setMode({ state: 'ready' }, failed ?? this.pausedWords());
    })();
    return mode.done;
  }

  /**
   * The ready state's words after a failure. Storage full (the page's StorageQuotaError) pauses the run: a write that
   * failed left the stored run whole, so they say where it paused and where a reload opens it, e.g. "paused at
   * iteration 2: browser storage is full while saving ...; the last whole checkpoint (iteration 1) is kept".
   */
  private failedWords(e: Error): string {
    const s = this.run?.session;
    if (e?.name !== 'StorageQuotaError' || !s) return e?.message ?? String(e);
    return `paused at iteration ${s.trainer.iteration}: ${e.message}; the last whole checkpoint (iteration ${s.checkpointed}) is kept`;
  }

  /** The ready state's words: paused where the open run has begun and not ended. */
  private pausedWords(): string | undefined {
    const t = this.run?.session.trainer;
    return t && t.iteration > 0 && t.iteration < (this.run?.config.iterations ?? 0) ? `paused at iteration ${t.iteration}` : undefined;
  }

  private runIdOf(c: TrainConfig, withDataset = true): string {
    const d = withDataset ? this.dataset : null;
    const h = (hashString(JSON.stringify(c) + (d ? `|${d.name}:${d.tasks.length}` : '')) >>> 0).toString(36);
    return `${c.workflow.name}-${c.rewards.mode}-seed${c.seed}-${h}`;
  }

  /** Opens (or resumes) the run of this configuration; `fresh` deletes what the browser held of it first. */
  private openRun(partial: unknown, opts: { fresh?: boolean; takeOver?: boolean } = {}): Promise<Requests['configure']['value']> {
    const c = resolvePageConfig(partial); // a refused setting leaves the open run as it was
    const token = ++this.openings;
    const before = this.mode.state === 'loading' ? this.mode.opening.catch(() => undefined) : null;
    const opening = (async () => {
      await before; // one opening at a time, in the order asked
      return this.open(c, partial, opts, token);
    })();
    this.setMode({ state: 'loading', opening });
    return opening;
  }

  /** Opens run `c` (see openRun); the state it ends in is set only by the latest opening. */
  private async open(c: TrainConfig, partial: unknown, opts: { fresh?: boolean; takeOver?: boolean }, token: number):
    Promise<Requests['configure']['value']> {
    const settle = (mode: LabMode, message?: string) => (token === this.openings ? this.setMode(mode, message) : undefined);
    try {
      const parts = await this.shelf.parts(c);
      this.run?.session.dispose();
      this.run = null;
      this.partner?.session.dispose();
      this.partner?.writer?.release();
      this.partner = null;
      const runId = this.runIdOf(c);
      const store = this.platform.store(runId);
      if (!(await this.claimWriter(runId, store, opts.takeOver ? 'take-over' : 'if-free'))) {
        const value = await this.openReadOnly(c, partial, runId, store, parts);
        settle({ state: 'readonly', runId, partial, iteration: value.iteration },
          'this run is training in another tab; this tab shows it read-only (Take over to train it here)');
        this.follow(runId);
        return value;
      }
      const lanes = await this.shelf.lanes(c.agentModel);
      const compute = computeFor(parts, lanes, this.warn);
      const runParts: RunParts = { ...parts, dataset: this.dataset ? { train: this.dataset.tasks } : undefined, compute };
      // Warnings come while the session opens (records cut back to the checkpoint, an evaluation begun again), before
      // `session` is assigned (reading it there threw, and the page refused the run's link): those carry iteration 0.
      let opened: RunSession | null = null;
      const session = await RunSession.open(c, runParts, {
        store, hook: alongside(compute), baseline: this.baselineEval, fresh: opts.fresh,
        // The models it uses by content, in every checkpoint; a stored run checkpointed with others is refused, naming which.
        used: await usedBy(c, parts.team, parts.agentModel.source,
          (spec) => (parts.coach.name.startsWith('model:') ? this.platform.modelSource(spec, this.shelf.baseUrl) : null)),
        emit: (e) => {
          if (e.type === 'eval') this.bars.evaluation(e.iteration, e.result);
          this.post({ kind: 'train', event: e.type === 'warning' ? { type: 'warning', iteration: opened?.trainer.iteration ?? 0, message: e.message } : e });
        },
      });
      opened = session;
      session.trainer.on((e) => {
        if (e.type === 'trajectories') {
          void trajectoryViews(c.workflow, e.trajectories, parts.coach.name).then((trajectories) => {
            const views = { iteration: e.iteration, trajectories };
            this.post({ kind: 'trajectories', ...views });
            return store.writeFile(LAST_TRAJECTORIES, JSON.stringify(views));
          }).catch((err) => this.reportError(err));
          return;
        }
        if (e.type === 'generation') return this.bars.generation(e.agentId, e.progress);
        if (e.type === 'phase') this.bars.phase(e.phase, e.status);
        this.post({ kind: 'train', event: e });
      });
      const { resumed, metrics, evals } = session.history;
      const last = resumed ? await store.readFile(LAST_TRAJECTORIES) : null;
      const dataset = this.dataset;
      // A dataset run keeps its dataset beside its records: a reload (?run=) trains on the same problems.
      if (dataset && !resumed) await store.writeFile(DATASET_FILE, dataset.text);
      await store.describe(`${dataset ? `dataset ${dataset.name}: ` : ''}${c.rewards.mode}, seed ${c.seed}`, partial, session.trainer.iteration);
      this.post({ kind: 'history', runId, metrics, evals, trajectories: typeof last === 'string' ? JSON.parse(last) : null });
      const plan = planForModel(parts.agentModel, c, parts.team, currentBackend()?.name ?? 'cpu', backendLimits());
      this.run = { config: c, partial, runId, parts: runParts, store, session, plan };
      this.partialConfig = partial;
      const iteration = session.trainer.iteration;
      const coachQuality = await this.shelf.coachQuality(c, parts.coach.name);
      const pool = this.dataset ? this.dataset.tasks.length : session.trainer.curriculum.source.pool(c.curriculum.startLevel).length;
      this.post({
        kind: 'run', config: c, partial, runId, iteration, resumed, lanes: lanes?.count ?? 0, plan, coach: parts.coach.name, coachQuality, pool,
        dataset: dataset?.name ?? null,
      });
      settle({ state: 'ready' }, resumed ? `resumed at iteration ${iteration}` : undefined);
      return { config: c, runId, iteration, resumed };
    } catch (e) {
      if (token === this.openings) this.partialConfig = partial; // Reset opens this run afresh (its stored files may be what failed)
      settle({ state: 'error', message: (e as Error).message }, (e as Error).message);
      throw e;
    }
  }

  /**
   * Takes the right to write run `runId` (kept when this tab already holds it): false when another
   * tab trains it. A run this tab held before is let go. The store is claimed, so that the tab that
   * had the run cannot write to it any more, whatever it has in flight.
   */
  private async claimWriter(runId: string, store: LabStore, how: 'if-free' | 'take-over'): Promise<boolean> {
    if (!this.platform.claimRun) return true;
    if (this.writer?.runId === runId) return true;
    const lock = await this.platform.claimRun(runId, how);
    if (!lock) return false;
    this.writer?.lock.release();
    this.writer = { runId, lock };
    await store.claim?.();
    lock.onTakeOverRequest(async () => {
      if (this.writer?.lock !== lock) return;
      await this.stopLoop(); // the loop stops at a checkpoint (a pause loses nothing)
      this.toReadOnly(runId, 'another tab took this run over; this tab shows it read-only');
      lock.release();
    });
    void lock.lost.then((why) => {
      if (this.writer?.lock !== lock) return;
      this.stopLoop();
      this.toReadOnly(runId, `${why}; this tab shows it read-only`);
    });
    return true;
  }

  /** This tab no longer writes run `runId`: the session closes, the page keeps its charts. */
  private toReadOnly(runId: string, message: string): void {
    const partial = this.run?.partial ?? this.partialConfig;
    const iteration = this.run?.session.trainer.iteration ?? 0;
    this.writer = null;
    this.run?.session.dispose();
    this.run = null;
    this.partner?.session.dispose();
    this.partner?.writer?.release();
    this.partner = null;
    this.setMode({ state: 'readonly', runId, partial, iteration }, message);
    this.follow(runId);
  }

  /**
   * While this tab shows run `runId` read-only, it follows the tab that writes it: every 2 s it reads the
   * run's records and, when they grew, redraws them and says the iteration, and how long ago it last moved.
   */
  private follow(runId: string): void {
    const store = this.platform.store(runId);
    let seen = -1;
    let movedAt = Date.now();
    const timer = setInterval(() => {
      const m = this.mode;
      if (m.state !== 'readonly' || m.runId !== runId) return clearInterval(timer);
      void store.metrics<{ iteration: number; eval?: EvalResult; perAgent?: unknown }>().then((records) => {
        if (this.mode !== m) return;
        const metrics = records.filter((r) => r.perAgent) as IterationMetrics[];
        const evals = records.filter((r) => r.eval && !r.perAgent).map((r) => ({ iteration: r.iteration, result: r.eval! }));
        const iteration = metrics.at(-1)?.iteration ?? 0;
        const count = records.length;
        if (count !== seen) {
          if (seen >= 0) movedAt = Date.now();
          if (seen >= 0) this.post({ kind: 'history', runId, metrics, evals, trajectories: null });
          seen = count;
        }
        const still = Math.round((Date.now() - movedAt) / 1000);
        const words = still < 20
          ? `this run is training in another tab; this tab shows it read-only and follows it: iteration ${iteration}`
          : `this run is open in another tab, which has not trained it for ${still} s (iteration ${iteration}); this tab shows it read-only`;
        if (iteration !== m.iteration || still >= 20) this.setMode({ ...m, iteration }, `${words} (Take over to train it here)`);
      }, () => undefined);
    }, 2000);
  }

  /** Shows a run another tab trains: its records so far, no session, nothing written. */
  private async openReadOnly(c: TrainConfig, partial: unknown, runId: string, store: LabStore,
    parts: Omit<RunParts, 'dataset'>): Promise<Requests['configure']['value']> {
    this.run?.session.dispose();
    this.run = null;
    this.writer?.lock.release();
    this.writer = null;
    this.partialConfig = partial;
    const records = await store.metrics<{ iteration: number; eval?: EvalResult; perAgent?: unknown }>();
    const metrics = records.filter((r) => r.perAgent) as IterationMetrics[];
    const evals = records.filter((r) => r.eval && !r.perAgent).map((r) => ({ iteration: r.iteration, result: r.eval! }));
    const iteration = metrics.at(-1)?.iteration ?? 0;
    this.post({ kind: 'history', runId, metrics, evals, trajectories: null });
    const plan = planForModel(parts.agentModel, c, parts.team, currentBackend()?.name ?? 'cpu', backendLimits());
    const coachQuality = await this.shelf.coachQuality(c, parts.coach.name);
    this.post({ kind: 'run', config: c, partial, runId, iteration, resumed: true, lanes: 0, plan, coach: parts.coach.name, coachQuality, pool: Infinity });
    return { config: c, runId, iteration, resumed: true };
  }

  /**
   * Opens the partner of the current run: the same configuration and seed with the other reward mode
   * (process <-> outcome; mixed pairs with outcome), resumed when the browser holds it. Each of its
   * iterations and finished evaluations is announced so the page redraws its overlay. The untrained
   * team is the same in both runs (base model, same problems and seeds): measured once, in the run.
   */
  private async openPartner(): Promise<{ runId: string; mode: string }> {
    const run = this.run;
    if (!run || this.mode.state !== 'ready') throw new Error('open a run and let it settle (not running) before starting the comparison');
    const mode = run.config.rewards.mode === 'outcome' ? 'process' : 'outcome';
    const base = (run.partial ?? {}) as Record<string, unknown>;
    const partial = { ...base, rewards: { ...(base.rewards as object | undefined), mode } };
    const c = resolveTrainConfig(partial);
    const runId = this.runIdOf(c);
    const store = this.platform.store(runId);
    const writer = this.partner?.runId === runId ? this.partner.writer : await this.platform.claimRun?.(runId, 'if-free');
    if (writer === null) throw new Error(`the ${mode} twin of this run is training in another tab; pause it there (or close that tab) to compare here`);
    if (writer !== this.partner?.writer) await store.claim?.();
    let session: RunSession | null = null;
    const announce = (ev?: { iteration: number; result: EvalResult }) =>
      this.post({ kind: 'partner', runId, mode, iteration: session?.trainer.iteration ?? 0, iterations: c.iterations, ...(ev ? { eval: ev } : {}) });
    const compute = computeFor(run.parts, this.shelf.openLanes(), this.warn);
    session = await RunSession.open(c, { ...run.parts, compute }, {
      store, hook: alongside(compute), baseline: false,
      // Every estimate goes to the page (running ones too), so the twin's held-out line grows as the run's own does.
      emit: (e) => (e.type === 'eval' ? announce({ iteration: e.iteration, result: e.result }) : undefined),
    });
    session.trainer.on((e) => (e.type === 'iteration' ? announce() : undefined));
    await store.describe(`${mode}, seed ${c.seed}`, partial, session.trainer.iteration);
    this.partner?.session.dispose();
    if (this.partner?.writer !== writer) this.partner?.writer?.release();
    this.partner = { runId, session, writer };
    announce();
    // What the twin holds already (a comparison resumed after a reload): its finished evaluations.
    for (const ev of session.history.evals) announce(ev);
    for (const m of session.history.metrics) if (m.eval) announce({ iteration: m.iteration, result: m.eval });
    return { runId, mode };
  }

  /** The open run, when the state lets it train (else why not, thrown to the request so the page shows it). */
  private async runnable(request: GatedRequest): Promise<NonNullable<Lab['run']>> {
    await this.allow(request);
    const run = this.run;
    if (!run) throw new Error('no run is open: its configuration was refused (see the banner); change the setting');
    if (!run.plan.fits) throw new Error(`this run does not fit the device (memory plan: ${run.plan.line}): ${run.plan.problems.join('; ')}`);
    return run;
  }

  /** Trains until paused, done or one iteration (`single`), the partner in turn when comparing; checkpoints whenever it stops. */
  private loop(single: boolean): Promise<void> {
    const m = this.mode;
    if (m.state === 'running' && (m.activity === 'training' || m.activity === 'compare')) return m.done; // already going
    const run = this.run!;
    const pair = this.partner;
    const words = pair ? 'process vs outcome: this run and its twin train in turn, one iteration each' : undefined;
    return this.launch(single ? 'step' : pair ? 'compare' : 'training', words, async (signal) => {
      if (!pair) {
        await run.session.run({ single, signal });
      } else {
        // The comparison: one iteration of each in turn, so both curves grow side by side.
        for (;;) {
          const a = await run.session.run({ single: true, signal });
          const b = await pair.session.run({ single: true, signal });
          if (single || a === 'paused' || b === 'paused' || (a === 'done' && b === 'done')) break;
        }
        await pair.session.trainer.checkpoint();
      }
      // Nothing is lost by pausing or stepping: a reload resumes here (unless the device or the run went meanwhile).
      if (this.run === run && this.mode.state !== 'lost') await run.session.saveIfBehind();
    });
  }

  private reportError(e: unknown): void {
    const err = e as Error;
    this.post({ kind: 'error', message: err?.message ?? String(e) });
  }

  // ---- requests (protocol.ts) -------------------------------------------------------------------
  async init({ backend, webgpuLimits, baseUrl, baseline }: Args<'init'>): Value<'init'> {
    this.shelf.baseUrl = baseUrl;
    this.baselineEval = baseline ?? true;
    let info;
    try {
      info = await initBackend(backend ? { force: backend, webgpuLimits } : { webgpuLimits });
    } catch (e) {
      if (!backend) throw e;
      // A link that asks for a backend this browser lacks still opens, on the best one it has.
      info = await initBackend({});
      info = { ...info, notice: `The link asked for ${backend}, which is unavailable here (${(e as Error).message}); using ${info.name} instead.` };
    }
    this.post({ kind: 'backend', info, summary: describeBackend(info) });
    this.post({ kind: 'lesson', view: idleLessonView() });
    void this.showStoredLesson();
    return info;
  }

  /**
   * The experiments this browser finished (or began) before: drawn from storage at once, with no model
   * loaded and no click; the idle lesson names the coach of its process runs (read from the judge's report).
   */
  private async showStoredLesson(): Promise<void> {
    try {
      await readBackAll(this.experimentHost(), () => this.experimentRuns());
    } catch (e) {
      this.reportError(e);
    }
  }

  /** Whether an experiment runs (or is pausing) now. */
  private experimentRuns(): boolean {
    const m = this.mode;
    return (m.state === 'running' || m.state === 'pausing') && m.activity in EXPERIMENTS;
  }

  /** What an experiment needs of the lab. */
  private experimentHost(): ExperimentHost {
    const claimRun = this.platform.claimRun?.bind(this.platform);
    const host: Omit<LessonHost, 'post'> = {
      parts: (c) => this.shelf.parts(c),
      store: (runId) => this.platform.store(runId),
      runId: (c) => this.runIdOf(c, false),
      claim: claimRun ? (runId) => claimRun(runId, 'if-free') : undefined,
      coachQuality: (c, coachName) => this.shelf.coachQuality(c, coachName ?? this.shelf.coachNameOf(c)),
    };
    return { ...host, post: this.post };
  }

  /**
   * Starts experiment `name` (experiment.ts), answered at once: its views come as events. The one scaffold
   * (launch) stops it on Pause and says its failure; when it ends, the experiments it shares runs with are
   * read back, and the panel shows the open run's model again.
   */
  private async experiment(name: ExperimentName, fresh?: boolean): Promise<null> {
    await this.allow('experiment');
    const kind = EXPERIMENTS[name];
    const host = this.experimentHost();
    void this.launch(name, kind.words, (signal) => kind.open(host).run(signal, { fresh }), async () => {
      for (const other of kind.shares) this.post({ kind: other, view: await EXPERIMENTS[other].open(host).readBack() } as WorkerEvent);
      if (this.run) this.shelf.announce(this.run.config.agentModel);
    });
    return null;
  }

  async configure({ config }: Args<'configure'>): Value<'configure'> {
    await this.allow('configure');
    return this.openRun(config);
  }

  async start(): Value<'start'> {
    await this.runnable('start'); // refused here, where the page hears it; the loop itself runs on
    void this.loop(false);
    return null;
  }

  async compare(): Value<'compare'> {
    await this.runnable('compare');
    const opened = await this.openPartner();
    void this.loop(false);
    return opened;
  }

  lesson({ fresh }: Args<'lesson'> = {}): Value<'lesson'> {
    return this.experiment('lesson', fresh);
  }

  /** "Compare credit methods": trains what is missing of the comparison (comparison.ts). */
  creditMethods({ fresh }: Args<'creditMethods'> = {}): Value<'creditMethods'> {
    return this.experiment('creditMethods', fresh);
  }

  /** "Scale the team": trains what is missing of the relay of 8 to 64 agents, process vs outcome (scale-run.ts). */
  scale({ fresh }: Args<'scale'> = {}): Value<'scale'> {
    return this.experiment('scale', fresh);
  }

  async pause(): Value<'pause'> {
    const m = this.mode;
    if (m.state === 'running') {
      m.controller.abort();
      this.setMode({ ...m, state: 'pausing' }, 'pausing: the iteration stops before its update, or finishes it if the update has begun');
    }
    return null;
  }

  async step(): Value<'step'> {
    await this.runnable('step');
    await this.loop(true);
    return null;
  }

  async takeOver(): Value<'takeOver'> {
    await this.allow('takeOver');
    const ro = this.mode as Extract<LabMode, { state: 'readonly' }>;
    const opened = await this.openRun(ro.partial, { takeOver: true });
    // "Take over" trains the run here (its button says so): it goes on at once, from the other tab's checkpoint.
    if (this.run && this.run.plan.fits && this.mode.state === 'ready') void this.loop(false);
    return { iteration: opened.iteration };
  }

  async reset(): Value<'reset'> {
    await this.allow('reset');
    await this.openRun(this.partialConfig, { fresh: true });
    return null;
  }

  async export({ what }: Args<'export'>): Value<'export'> {
    const run = this.run;
    if (!run) throw new Error('no run is open yet');
    const { store } = run;
    if (what === 'adapters') return { name: `${run.runId}-adapters.zip`, mime: 'application/zip', bytes: zipAdapters(await run.session.adapterFiles()) };
    if (what === 'trajectories') {
      const text = (await store.readFile(TRAJECTORIES)) ?? '';
      return { name: `${run.runId}-trajectories.jsonl`, mime: 'application/x-ndjson', bytes: new TextEncoder().encode(String(text)) };
    }
    return { name: `${run.runId}-metrics.csv`, mime: 'text/csv', bytes: new TextEncoder().encode(metricsCsv(await store.metrics())) };
  }

  async importAdapter({ agentId, files }: Args<'importAdapter'>): Value<'importAdapter'> {
    const run = this.run;
    if (!run) throw new Error('no run is open yet');
    const trainer = run.session.trainer;
    const policy = trainer.policies.get(agentId);
    if (!policy) throw new Error(`no trainable agent "${agentId}" in this team (${[...trainer.policies.keys()].join(', ')})`);
    await this.allow('importAdapter');
    trainer.replaceAdapter(agentId, await importPeft(memorySource(adapterFiles(files), 'uploaded adapter'), trainer.parts.agentModel.config, agentId));
    await trainer.checkpoint();
    return { agentId };
  }

  async importDataset({ text, name }: Args<'importDataset'>): Value<'importDataset'> {
    const parsed = parseJsonlDataset(text, { source: name.replace(/\.jsonl$/, '') });
    const errors = parsed.errors.length ? formatDatasetErrors(parsed.errors, name).split('\n') : [];
    if (parsed.tasks.length) {
      await this.allow('importDataset');
      // Train on it from now on: a new run (its id includes the dataset), resumable like any other. The run
      // that was open is kept as it was, and the page says so (an import never replaces a run in silence).
      const was = this.run ? { runId: this.run.runId, iteration: this.run.session.trainer.iteration } : null;
      this.dataset = { name, tasks: parsed.tasks, text };
      const opened = await this.openRun(this.partialConfig);
      this.post({
        kind: 'notice',
        message: `The dataset ${name} (${parsed.tasks.length} problems) opened a new run, ${opened.runId}, at iteration ${opened.iteration}`
          + `${was ? `; the run that was open (${was.runId}, iteration ${was.iteration}) is kept as it was` : ''}. `
          + 'This page\'s link now opens the dataset run (?run=); a link without it opens generated problems.',
      });
    }
    return { tasks: parsed.tasks.length, errors };
  }

  /** Opens a run this browser holds by its id (a link's ?run=): its stored settings, and its dataset when it has one. */
  async openSaved({ runId }: Args<'openSaved'>): Value<'openSaved'> {
    await this.allow('configure');
    const rec = (await this.platform.listRuns()).find((r) => r.runId === runId);
    if (!rec || rec.config === null) throw new Error(`this browser holds no run ${runId} (it may have been deleted, or trained in another browser)`);
    const text = await this.platform.store(runId).readFile(DATASET_FILE);
    if (typeof text === 'string') {
      const name = /^dataset (.+?): /.exec(rec.label)?.[1] ?? 'dataset.jsonl';
      this.dataset = { name, tasks: parseJsonlDataset(text, { source: name.replace(/\.jsonl$/, '') }).tasks, text };
    } else {
      this.dataset = null;
    }
    const opened = await this.openRun(rec.config);
    if (opened.runId !== runId) throw new Error(`run ${runId}'s stored settings now open ${opened.runId} (the settings' defaults changed since)`);
    return opened;
  }

  async loadModel({ url, files }: Args<'loadModel'>): Value<'loadModel'> {
    await this.allow('loadModel');
    const spec = this.shelf.modelSpec(url, files);
    const m = await this.shelf.model(spec);
    await this.openRun({ ...(this.partialConfig as Record<string, unknown>), agentModel: spec });
    return { name: m.source.name, parameters: m.model.parameterCount() };
  }

  async listRuns(): Value<'listRuns'> {
    const runs = await this.platform.listRuns();
    return Promise.all(runs.map(async (r) => ({ ...r, team: teamOf(r.config), metrics: await this.platform.store(r.runId).metrics<never>() })));
  }

  async webllmModels(): Value<'webllmModels'> {
    const { webLlmModels } = await import('../coach/webllm-coach.ts');
    return webLlmModels();
  }

  async webllmCoach({ choice }: Args<'webllmCoach'>): Value<'webllmCoach'> {
    await this.allow('configure');
    const name = await this.shelf.useWebLlm(choice?.modelId ?? null);
    await this.openRun(this.partialConfig);
    return { name: name ?? this.run?.config.coach.kind ?? 'rule' };
  }

  async recover({ backend }: Args<'recover'>): Value<'recover'> {
    await this.allow('recover');
    // After a loss, webgpu means a new device in this page (the GPU may not come back: then say so).
    const info = backend === 'webgpu' && this.mode.state === 'lost' ? await restartWebGPU() : await initBackend({ force: backend });
    this.post({ kind: 'backend', info, summary: describeBackend(info) });
    this.shelf.forgetModels(); // their tensors lived on the lost device
    this.run = null;
    await this.openRun(this.partialConfig);
    return info;
  }

  async runTool({ code, language }: Args<'runTool'>): Value<'runTool'> {
    const r = await this.shelf.sandbox().run(code, { language, timeoutMs: 30_000 });
    return { stdout: r.stdout, stderr: r.stderr, error: r.error?.message };
  }

  /** The judge desk: read-only requests answer at once; teaching runs as an activity (Pause stops it, the old judge kept). */
  async judgeDesk(args: Args<'judgeDesk'>): Value<'judgeDesk'> {
    const run = this.run;
    if (!run) throw new Error('no run is open yet');
    if (args.op !== 'teach' && args.op !== 'ask') return this.desk.handle(run.config, args);
    await this.allow('experiment');
    let view: Awaited<Value<'judgeDesk'>> | null = null;
    let failed: Error | null = null;
    const words = args.op === 'teach' ? 'teaching the judge on your corrections' : undefined;
    await this.launch('teach', words, async (signal) => {
      try {
        view = await this.desk.handle(run.config, args, signal, (progress) => this.post({ kind: 'teach', progress }));
      } catch (e) {
        failed = e as Error;
      }
    });
    if (failed) throw failed;
    if (!view) throw new Error('stopped before the end; the old judge is unchanged');
    return view;
  }

  async loseDevice(): Value<'loseDevice'> {
    const device = webgpuDevice();
    if (!device) throw new Error(`the backend is ${currentBackend()?.name ?? 'not started'}, not webgpu: there is no device to lose`);
    device.destroy();
    return null;
  }
}

/** The team a saved run's settings resolve to (null when they no longer resolve). */
function teamOf(partial: unknown): { name: string; domain: string } | null {
  try {
    const w = resolveTrainConfig(partial as Parameters<typeof resolveTrainConfig>[0]).workflow;
    return { name: w.name, domain: w.domain };
  } catch {
    return null;
  }
}
