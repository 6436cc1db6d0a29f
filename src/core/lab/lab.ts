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
import { ConfigFileError, resolveTrainConfig, type TrainConfig } from '../loop/config.ts';
import { planForModel, type RunPlanSummary } from '../loop/run-plan.ts';
import type { RolloutTask } from '../loop/trajectory.ts';
import type { EvalResult, IterationMetrics } from '../loop/records.ts';
import { RunSession, TRAJECTORIES, type RunParts } from '../loop/session.ts';
import { hashString } from '../stats/rng.ts';
import { formatDatasetErrors, parseJsonlDataset } from '../tasks/dataset.ts';
import { adapterFiles, metricsCsv, trajectoryViews, zipAdapters } from './exports.ts';
import { idleLessonView, Lesson, type LessonHost } from './lesson.ts';
import { CreditComparison } from './comparison.ts';
import { ProgressBars } from './progress.ts';
import type { LabApi, LabState, Requests, WorkerEvent } from './protocol.ts';
import { Shelf, type LabPlatform, type LabStore, type RunWriter } from './shelf.ts';

export type { LabPlatform } from './shelf.ts';

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
  private state: LabState = 'booting';
  /** Measure the untrained team alongside training (off with ?baseline=0: slow software GPUs). */
  private baselineEval = true;
  /** The open run: its config, the patch it came from, what it trains with, its store, session and memory plan. */
  private run: {
    config: TrainConfig; partial: unknown; runId: string; parts: RunParts; store: LabStore; session: RunSession; plan: RunPlanSummary;
  } | null = null;
  private partialConfig: unknown = {};
  /** The same run under the other reward mode, stepped in turn with this one ("process vs outcome"). */
  private partner: { runId: string; session: RunSession; writer?: RunWriter } | null = null;
  /** Aborts the loop's current iteration (Pause): set while the loop runs. */
  private pauseController: AbortController | null = null;
  private lostDevice = false;
  /** An imported JSONL dataset the team trains on instead of generated problems (null: generated). */
  private dataset: { name: string; tasks: RolloutTask[] } | null = null;
  /** The right to write the open run (platforms with tabs); null where the platform has one writer only. */
  private writer: { runId: string; lock: RunWriter } | null = null;
  /** The run shown read-only because another tab trains it ("Take over" opens it here). */
  private readOnly: { runId: string; partial: unknown; iteration: number } | null = null;
  /** The training loop while it runs (a take-over waits for it to stop at a checkpoint). */
  private looping: Promise<void> | null = null;
  /** The lesson trains (its views are the ones to show, not a read-back's). */
  private lessonRunning = false;

  constructor(private readonly platform: LabPlatform, private readonly post: (e: WorkerEvent) => void) {
    this.bars = new ProgressBars((progress) => post({ kind: 'progress', progress }));
    this.shelf = new Shelf(platform, this.bars, post);
    onDeviceLost((info) => {
      this.lostDevice = true;
      this.pauseController?.abort();
      const at = this.run?.session.checkpointed ?? 0;
      this.setState('lost', `WebGPU device lost (${info.reason}); the run stopped at its last checkpoint (iteration ${at})`);
      post({ kind: 'deviceLost', reason: info.reason, message: info.message, checkpointIteration: at });
    });
  }

  /** A lane's failure (the run goes on in this worker alone), shown as the run's warning. */
  private readonly warn = (message: string): void => {
    this.post({ kind: 'train', event: { type: 'warning', iteration: this.run?.session.trainer.iteration ?? 0, message } });
  };

  private setState(s: LabState, message?: string): void {
    this.state = s;
    this.post({ kind: 'state', state: s, iteration: this.run?.session.trainer.iteration ?? this.readOnly?.iteration ?? 0, message });
  }

  private get busy(): boolean {
    return this.state === 'running' || this.state === 'stepping' || this.state === 'pausing';
  }

  private runIdOf(c: TrainConfig, withDataset = true): string {
    const d = withDataset ? this.dataset : null;
    const h = (hashString(JSON.stringify(c) + (d ? `|${d.name}:${d.tasks.length}` : '')) >>> 0).toString(36);
    return `${c.workflow.name}-${c.rewards.mode}-seed${c.seed}-${h}`;
  }

  /** Opens (or resumes) the run of this configuration; `fresh` deletes what the browser held of it first. */
  private async openRun(partial: unknown, opts: { fresh?: boolean; takeOver?: boolean } = {}): Promise<Requests['configure']['value']> {
    if (this.busy) throw new Error('pause the run before changing its configuration');
    const c = resolvePageConfig(partial);
    this.setState('loading');
    try {
      const parts = await this.shelf.parts(c);
      this.run?.session.dispose();
      this.run = null;
      this.partner?.session.dispose();
      this.partner?.writer?.release();
      this.partner = null;
      const runId = this.runIdOf(c);
      const store = this.platform.store(runId);
      if (!(await this.claimWriter(runId, store, opts.takeOver ? 'take-over' : 'if-free'))) return await this.openReadOnly(c, partial, runId, store, parts);
      const lanes = await this.shelf.lanes(c.agentModel);
      const compute = computeFor(parts, lanes, this.warn);
      const runParts: RunParts = { ...parts, dataset: this.dataset ? { train: this.dataset.tasks } : undefined, compute };
      const session = await RunSession.open(c, runParts, {
        store, hook: alongside(compute), baseline: this.baselineEval, fresh: opts.fresh,
        emit: (e) => {
          if (e.type === 'eval') this.bars.evaluation(e.iteration, e.result);
          this.post({ kind: 'train', event: e.type === 'warning' ? { type: 'warning', iteration: session.trainer.iteration, message: e.message } : e });
        },
      });
      session.trainer.on((e) => {
        if (e.type === 'trajectories') {
          void trajectoryViews(c.workflow, e.trajectories, parts.coach.name).then((trajectories) => {
            const views = { iteration: e.iteration, trajectories };
            this.post({ kind: 'trajectories', ...views });
            return store.writeFile('last-trajectories.json', JSON.stringify(views));
          }).catch((err) => this.reportError(err));
          return;
        }
        if (e.type === 'generation') return this.bars.generation(e.agentId, e.progress);
        if (e.type === 'phase') this.bars.phase(e.phase, e.status);
        this.post({ kind: 'train', event: e });
      });
      const { resumed, metrics, evals } = session.history;
      const last = resumed ? await store.readFile('last-trajectories.json') : null;
      await store.describe(`${c.rewards.mode}, seed ${c.seed}`, partial, session.trainer.iteration);
      this.post({ kind: 'history', runId, metrics, evals, trajectories: typeof last === 'string' ? JSON.parse(last) : null });
      const plan = planForModel(parts.agentModel, c, currentBackend()?.name ?? 'cpu', backendLimits());
      this.run = { config: c, partial, runId, parts: runParts, store, session, plan };
      this.partialConfig = partial;
      const iteration = session.trainer.iteration;
      const coachQuality = await this.shelf.coachQuality(c, parts.coach.name);
      const pool = this.dataset ? this.dataset.tasks.length : session.trainer.curriculum.source.pool(c.curriculum.startLevel).length;
      this.post({ kind: 'run', config: c, partial, runId, iteration, resumed, lanes: lanes?.count ?? 0, plan, coach: parts.coach.name, coachQuality, pool });
      this.setState('ready', resumed ? `resumed at iteration ${iteration}` : undefined);
      return { config: c, runId, iteration, resumed };
    } catch (e) {
      this.setState('error', (e as Error).message);
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
    this.readOnly = null;
    await store.claim?.();
    lock.onTakeOverRequest(async () => {
      if (this.writer?.lock !== lock) return;
      this.pauseController?.abort(); // the loop stops at a checkpoint (a pause loses nothing)
      await this.looping;
      this.toReadOnly(runId, 'another tab took this run over; this tab shows it read-only');
      lock.release();
    });
    void lock.lost.then((why) => {
      if (this.writer?.lock !== lock) return;
      this.pauseController?.abort();
      this.toReadOnly(runId, `${why}; this tab shows it read-only`);
    });
    return true;
  }

  /** This tab no longer writes run `runId`: the session closes, the page keeps its charts. */
  private toReadOnly(runId: string, message: string): void {
    this.readOnly = { runId, partial: this.run?.partial ?? this.partialConfig, iteration: this.run?.session.trainer.iteration ?? 0 };
    this.writer = null;
    this.run?.session.dispose();
    this.run = null;
    this.partner?.session.dispose();
    this.partner?.writer?.release();
    this.partner = null;
    this.setState('readonly', message);
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
    this.readOnly = { runId, partial, iteration };
    this.post({ kind: 'history', runId, metrics, evals, trajectories: null });
    const plan = planForModel(parts.agentModel, c, currentBackend()?.name ?? 'cpu', backendLimits());
    const coachQuality = await this.shelf.coachQuality(c, parts.coach.name);
    this.post({ kind: 'run', config: c, partial, runId, iteration, resumed: true, lanes: 0, plan, coach: parts.coach.name, coachQuality, pool: Infinity });
    this.setState('readonly', 'this run is training in another tab; this tab shows it read-only (Take over to train it here)');
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
    if (!run || this.state !== 'ready') throw new Error('open a run and let it settle (not running) before starting the comparison');
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

  /** Why the open run cannot train now (thrown to the request, so the page shows it), or the run. */
  private runnable(): NonNullable<Lab['run']> {
    const run = this.run;
    if (this.readOnly) throw new Error('this run is training in another tab, so this tab shows it read-only; press "Take over" to train it here');
    if (!run) throw new Error('no run is open yet; wait for the model to load');
    if (this.lostDevice) throw new Error('the WebGPU device was lost; restart it or continue on wasm (the buttons in the banner), or reload the page');
    if (!run.plan.fits) throw new Error(`this run does not fit the device (memory plan: ${run.plan.line}): ${run.plan.problems.join('; ')}`);
    return run;
  }

  /** Trains until paused, done or one iteration (`single`), the partner in turn when comparing; checkpoints whenever it stops. */
  private loop(single: boolean): Promise<void> {
    this.runnable();
    if (this.state === 'running' || this.state === 'stepping') return this.looping ?? Promise.resolve();
    const done = this.train(single).finally(() => {
      if (this.looping === done) this.looping = null;
    });
    this.looping = done;
    return done;
  }

  private async train(single: boolean): Promise<void> {
    const { session } = this.runnable();
    const controller = (this.pauseController = new AbortController());
    const pair = this.partner;
    this.setState(single ? 'stepping' : 'running', pair ? 'process vs outcome: this run and its twin train in turn, one iteration each' : undefined);
    try {
      if (!pair) {
        await session.run({ single, signal: controller.signal });
      } else {
        // The comparison: one iteration of each in turn, so both curves grow side by side.
        for (;;) {
          const a = await session.run({ single: true, signal: controller.signal });
          const b = await pair.session.run({ single: true, signal: controller.signal });
          if (single || a === 'paused' || b === 'paused' || (a === 'done' && b === 'done')) break;
        }
        await pair.session.trainer.checkpoint();
      }
      if (!this.lostDevice && !this.readOnly) await session.saveIfBehind(); // nothing is lost by pausing or stepping: a reload resumes here
      this.bars.clear();
      if (!this.readOnly) this.setState('ready');
    } catch (e) {
      this.bars.clear();
      if (this.lostDevice || this.readOnly) return; // the device-loss or take-over handler has said why
      this.reportError(e);
      this.setState('ready', (e as Error).message);
    } finally {
      this.pauseController = null;
    }
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
   * A lesson this browser finished (or began) before: drawn from storage at once, with no model loaded and
   * no click; the idle lesson names the coach of its process runs (read from the judge's report). Then the
   * credit comparison, likewise.
   */
  private async showStoredLesson(): Promise<void> {
    try {
      const view = await new Lesson(this.lessonHost()).readBack();
      if (!this.lessonRunning) this.post({ kind: 'lesson', view });
      const methods = await new CreditComparison(this.comparisonHost()).readBack();
      if (methods.status !== 'idle' && !this.lessonRunning) this.post({ kind: 'creditMethods', view: methods });
    } catch (e) {
      this.reportError(e);
    }
  }

  /** What the lesson needs of the lab. */
  private lessonHost(): LessonHost {
    const claimRun = this.platform.claimRun?.bind(this.platform);
    return {
      parts: (c) => this.shelf.parts(c),
      store: (runId) => this.platform.store(runId),
      runId: (c) => this.runIdOf(c, false),
      claim: claimRun ? (runId) => claimRun(runId, 'if-free') : undefined,
      post: (view) => this.post({ kind: 'lesson', view }),
      coachQuality: (c, coachName) => this.shelf.coachQuality(c, coachName ?? this.shelf.coachNameOf(c)),
    };
  }

  /** What the credit comparison needs of the lab: the lesson's host, posting its own view. */
  private comparisonHost(): ConstructorParameters<typeof CreditComparison>[0] {
    return { ...this.lessonHost(), post: (view) => this.post({ kind: 'creditMethods', view }) };
  }

  configure({ config }: Args<'configure'>): Value<'configure'> {
    return this.openRun(config);
  }

  async start(): Value<'start'> {
    this.runnable(); // refused here, where the page hears it; the loop itself runs on
    void this.loop(false);
    return null;
  }

  async compare(): Value<'compare'> {
    this.runnable();
    const opened = await this.openPartner();
    void this.loop(false);
    return opened;
  }

  async lesson({ fresh }: Args<'lesson'> = {}): Value<'lesson'> {
    if (this.busy || this.state === 'loading' || this.state === 'booting') {
      throw new Error('pause the run (and let the page finish loading) before starting the lesson');
    }
    const controller = (this.pauseController = new AbortController());
    this.setState('running', 'the lesson: relay teams of 2, 4 and 6 agents, process vs outcome reward');
    const lesson = new Lesson(this.lessonHost());
    this.lessonRunning = true;
    const done = lesson.run(controller.signal, { fresh }).then(() => undefined, (e) => this.reportError(e)).finally(() => {
      this.lessonRunning = false;
      if (this.looping === done) this.looping = null;
      this.pauseController = null;
      this.bars.clear();
      if (this.run) this.shelf.announce(this.run.config.agentModel); // the panel shows the open run's model again
      if (!this.readOnly) this.setState('ready');
    });
    this.looping = done;
    return null;
  }

  /** "Compare credit methods": trains what is missing of the comparison (comparison.ts); answered at once, its views come as events. */
  async creditMethods({ fresh }: Args<'creditMethods'> = {}): Value<'creditMethods'> {
    if (this.busy || this.state === 'loading' || this.state === 'booting') {
      throw new Error('pause the run (and let the page finish loading) before comparing the credit methods');
    }
    const controller = (this.pauseController = new AbortController());
    this.setState('running', 'comparing credit methods: process, outcome, counterfactual and groups at 4 agents');
    this.lessonRunning = true;
    const comparison = new CreditComparison(this.comparisonHost());
    const done = comparison.run(controller.signal, { fresh }).then(() => undefined, (e) => this.reportError(e)).finally(async () => {
      this.lessonRunning = false;
      // The lesson's 4-agent runs may have been trained here: the lesson shows them.
      await new Lesson(this.lessonHost()).readBack().then((view) => this.post({ kind: 'lesson', view }), (e) => this.reportError(e));
      if (this.looping === done) this.looping = null;
      this.pauseController = null;
      this.bars.clear();
      if (this.run) this.shelf.announce(this.run.config.agentModel);
      if (!this.readOnly) this.setState('ready');
    });
    this.looping = done;
    return null;
  }

  async pause(): Value<'pause'> {
    if (this.state === 'running' && this.pauseController) {
      this.pauseController.abort();
      this.setState('pausing', 'pausing: the iteration stops before its update, or finishes it if the update has begun');
    }
    return null;
  }

  async step(): Value<'step'> {
    await this.loop(true);
    return null;
  }

  async takeOver(): Value<'takeOver'> {
    const ro = this.readOnly;
    if (!ro) throw new Error('this tab already trains its run');
    const opened = await this.openRun(ro.partial, { takeOver: true });
    // "Take over" trains the run here (its button says so): it goes on at once, from the other tab's checkpoint.
    if (this.run && this.run.plan.fits && !this.lostDevice) void this.loop(false);
    return { iteration: opened.iteration };
  }

  async reset(): Value<'reset'> {
    if (this.busy) throw new Error('pause the run before resetting it');
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
    if (this.state !== 'ready') throw new Error('pause the run before importing an adapter');
    trainer.replaceAdapter(agentId, await importPeft(memorySource(adapterFiles(files), 'uploaded adapter'), trainer.parts.agentModel.config, agentId));
    await trainer.checkpoint();
    return { agentId };
  }

  async importDataset({ text, name }: Args<'importDataset'>): Value<'importDataset'> {
    const parsed = parseJsonlDataset(text, { source: name.replace(/\.jsonl$/, '') });
    const errors = parsed.errors.length ? formatDatasetErrors(parsed.errors, name).split('\n') : [];
    if (parsed.tasks.length) {
      // Train on it from now on: a new run (its id includes the dataset), resumable like any other.
      this.dataset = { name, tasks: parsed.tasks };
      await this.openRun(this.partialConfig);
    }
    return { tasks: parsed.tasks.length, errors };
  }

  async loadModel({ url, files }: Args<'loadModel'>): Value<'loadModel'> {
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
    const name = await this.shelf.useWebLlm(choice?.modelId ?? null);
    await this.openRun(this.partialConfig);
    return { name: name ?? this.run?.config.coach.kind ?? 'rule' };
  }

  async recover({ backend }: Args<'recover'>): Value<'recover'> {
    if (this.busy) throw new Error('pause the run before changing the backend');
    // After a loss, webgpu means a new device in this page (the GPU may not come back: then say so).
    const info = backend === 'webgpu' && this.lostDevice ? await restartWebGPU() : await initBackend({ force: backend });
    this.post({ kind: 'backend', info, summary: describeBackend(info) });
    this.shelf.forgetModels(); // their tensors lived on the lost device
    this.run = null;
    this.lostDevice = false;
    this.state = 'ready';
    await this.openRun(this.partialConfig);
    return info;
  }

  async runTool({ code, language }: Args<'runTool'>): Value<'runTool'> {
    const r = await this.shelf.sandbox().run(code, { language, timeoutMs: 30_000 });
    return { stdout: r.stdout, stderr: r.stderr, error: r.error?.message };
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
