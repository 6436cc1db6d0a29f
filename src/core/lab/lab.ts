/**
 * The lab: the host of everything the page can ask of the sandbox, headless. It holds the one state
 * (lab-state.ts) that every request asks first, runs whatever trains as one activity Pause can stop,
 * starts the backend and recovers from a lost device, and hands each request to its room:
 *
 *   runs.ts          the open run and its twin, the loop          open, start
 *   tabs.ts          which tab writes a run                       (inside open)
 *   experiments/     the lesson, credit methods, scale, ...       experiment
 *   desk/            correcting and teaching the run's judge      desk
 *   shelf.ts         models, coaches (WebLLM), lanes, sandboxes   coaches, tool
 *   transfer.ts      downloads and uploads                        export, import
 *   (the platform)   the runs this browser holds                  saved
 *   (here)           the backend, a lost device                   init, device
 *
 * Each method answers one request of protocol.ts, and what happens streams as events.
 * For: the training worker (src/worker/trainer-worker.ts), which only passes messages to it; the
 * page's client proxies the same interface. What differs by platform (the run store, where models
 * and lanes come from, the tool sandbox) comes in as a LabPlatform (shelf.ts).
 * Not for: drawing (src/ui) or any training maths (core/loop, core/rl).
 *
 * Example: const lab = new Lab(platform, (event) => postMessage({ type: 'event', event }));
 *          await lab.init({ baseUrl });                 // the backend: webgpu, else wasm
 *          await lab.open({ config: {} });              // opens (or resumes) the embedded default run
 *          await lab.start({ single: true });           // one iteration; events: phases, metrics, trajectories
 */
import { currentBackend, describeBackend, initBackend, onDeviceLost, restartWebGPU, webgpuDevice } from '../engine/backend.ts';
import { resolveTrainConfig } from '../domains/index.ts';
import { DESK_STORE } from './desk/desk-requests.ts';
import { JudgeDesk } from './desk/judge-desk.ts';
import { taughtSource } from './desk/taught-judges.ts';
import { EXPERIMENTS, openExperiment, readBackAll } from './experiments/experiments.ts';
import { EXPERIMENT_WORDS } from './experiments/experiment-names.ts';
import type { ExperimentHost } from './experiments/stored-runs.ts';
import { idleLessonView } from './experiments/lesson/lesson-maths.ts';
import { nameOf, refusal, type Activity, type GatedRequest, type LabMode } from './lab-state.ts';
import { ProgressBars } from './progress.ts';
import type { ExperimentEvent, LabApi, OpenArgs, OpenedRun, Requests, WorkerEvent } from './protocol.ts';
import { Runs } from './runs.ts';
import { Shelf, type LabPlatform } from './shelf.ts';
import { CardPerson } from './person-cards.ts';
import type { LabHooks } from './tabs.ts';
import { exportFile, importAdapter } from './transfer.ts';

type Args<K extends keyof Requests> = Requests[K]['args'];
type Value<K extends keyof Requests> = Promise<Requests[K]['value']>;

export class Lab implements LabApi {
  private readonly bars: ProgressBars;
  private readonly shelf: Shelf;
  private readonly runs: Runs;
  /** What the lab is doing, the one place that says it (lab-state.ts): every request asks it first. */
  private mode: LabMode = { state: 'booting' };
  /** Measure the untrained team alongside training (off with ?baseline=0: slow software GPUs). */
  private baselineEval = true;
  /** The platform, with the judges taught in the page loadable by their spec ("taught:<name>-<hash>", desk/judge-desk.ts). */
  private readonly platform: LabPlatform;
  /** Corrections of the open run's judge, and teaching it (desk/judge-desk.ts). */
  private readonly judges: JudgeDesk;
  /** Tier 3 of a coach in tiers: the person at the page, answering cards during a run (person-cards.ts). */
  private readonly cards: CardPerson;

  constructor(given: LabPlatform, private readonly post: (e: WorkerEvent) => void) {
    const deskStore = given.store(DESK_STORE);
    const plain = (spec: string, base: string) => given.modelSource(spec, base);
    const platform = this.platform = Object.assign(Object.create(given) as LabPlatform, {
      modelSource: (spec: string, base: string) => (spec.startsWith('taught:') ? taughtSource(spec, deskStore, (p) => plain(p, base)) : plain(spec, base)),
    });
    this.bars = new ProgressBars((progress) => post({ kind: 'progress', progress }));
    this.cards = new CardPerson(post);
    this.shelf = new Shelf(platform, this.bars, post, this.cards);
    this.judges = new JudgeDesk(deskStore, (spec) => platform.modelSource(spec, this.shelf.baseUrl), (spec) => this.shelf.model(spec));
    const hooks: LabHooks = {
      post, mode: () => this.mode, setMode: (m, message) => this.setMode(m, message), stopLoop: () => this.stopLoop(),
      launch: (activity, message, work, after) => this.launch(activity, message, work, after), reportError: (e) => this.reportError(e),
    };
    this.runs = new Runs(platform, this.shelf, this.bars, hooks, () => this.baselineEval);
    onDeviceLost((info) => {
      this.stopLoop();
      const at = this.runs.run?.session.checkpointed ?? 0;
      this.setMode({ state: 'lost', checkpoint: at }, `WebGPU device lost (${info.reason}); the run stopped at its last checkpoint (iteration ${at})`);
      post({ kind: 'deviceLost', reason: info.reason, message: info.message, checkpointIteration: at });
    });
  }

  /** The one transition: the lab is now in `mode`, and the page hears its name, the iteration and why. */
  private setMode(mode: LabMode, message?: string): void {
    this.mode = mode;
    const iteration = this.runs.run?.session.trainer.iteration ?? (mode.state === 'readonly' ? mode.iteration : 0);
    this.post({ kind: 'state', ...nameOf(mode), iteration, message });
  }

  /** Throws why the state refuses `request` (the page shows it), after any opening in flight has ended. */
  private async allow(request: GatedRequest): Promise<void> {
    // A run being opened (a setting just changed): what comes next acts on the run it opens.
    while (this.mode.state === 'loading') await this.mode.opening.catch(() => undefined);
    const why = refusal(nameOf(this.mode), request);
    if (why) throw new Error(why);
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
    const s = this.runs.run?.session;
    if (e?.name !== 'StorageQuotaError' || !s) return e?.message ?? String(e);
    return `paused at iteration ${s.trainer.iteration}: ${e.message}; the last whole checkpoint (iteration ${s.checkpointed}) is kept`;
  }

  /** The ready state's words: paused where the open run has begun and not ended. */
  private pausedWords(): string | undefined {
    const t = this.runs.run?.session.trainer;
    return t && t.iteration > 0 && t.iteration < (this.runs.run?.config.iterations ?? 0) ? `paused at iteration ${t.iteration}` : undefined;
  }

  private reportError(e: unknown): void {
    const err = e as Error;
    this.post({ kind: 'error', message: err?.message ?? String(e) });
  }

  /** The open run, or why there is none. */
  private openRun() {
    const run = this.runs.run;
    if (!run) throw new Error('no run is open yet');
    return run;
  }

  /** What an experiment needs of the lab. */
  private experimentHost(): ExperimentHost<ExperimentEvent> {
    const claimRun = this.platform.claimRun?.bind(this.platform);
    return {
      parts: (c) => this.shelf.parts(c),
      store: (runId) => this.platform.store(runId),
      runId: (c) => this.runs.runIdOf(c, false),
      claim: claimRun ? (runId) => claimRun(runId, 'if-free') : undefined,
      coachQuality: (c, coachName) => this.shelf.coachQuality(c, coachName ?? this.shelf.coachNameOf(c)),
      post: this.post,
    };
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
    this.post({ kind: 'experiment', name: 'lesson', view: idleLessonView() });
    // The experiments this browser finished (or began) before: drawn from storage at once, with no model loaded and no click.
    const running = () => (this.mode.state === 'running' || this.mode.state === 'pausing') && this.mode.activity in EXPERIMENTS;
    void readBackAll(this.experimentHost(), running).catch((e) => this.reportError(e));
    return info;
  }

  async open(args: OpenArgs): Promise<OpenedRun> {
    if ('again' in args) {
      await this.allow('reset');
      return this.runs.open(this.runs.partial, { fresh: true });
    }
    if ('takeOver' in args) {
      await this.allow('takeOver');
      const ro = this.mode as Extract<LabMode, { state: 'readonly' }>;
      const opened = await this.runs.open(ro.partial, { takeOver: true });
      // "Take over" trains the run here (its button says so): it goes on at once, from the other tab's checkpoint.
      if (this.runs.run?.plan.fits && this.mode.state === 'ready') void this.runs.loop(false);
      return opened;
    }
    if ('model' in args) {
      await this.allow('loadModel');
      const spec = this.shelf.modelSpec(args.model.url, args.model.files);
      const m = await this.shelf.model(spec);
      const opened = await this.runs.open({ ...(this.runs.partial as Record<string, unknown>), agentModel: spec });
      return { ...opened, model: { name: m.source.name, parameters: m.model.parameterCount() } };
    }
    await this.allow('configure');
    if ('config' in args) return this.runs.open(args.config);
    if ('runId' in args) return this.runs.openSaved(args.runId);
    await this.shelf.useWebLlm(args.webllm?.modelId ?? null);
    return this.runs.open(this.runs.partial);
  }

  async start({ single, twin }: Args<'start'> = {}): Value<'start'> {
    await this.allow(single ? 'step' : twin ? 'compare' : 'start'); // refused here, where the page hears it; the loop itself runs on
    this.runs.runnable();
    if (twin) await this.runs.openTwin();
    const going = this.runs.loop(Boolean(single));
    if (single) await going;
    return null;
  }

  async pause(): Value<'pause'> {
    const m = this.mode;
    this.cards.release(); // a coach waiting for the person's cards stops waiting (open cards: unanswered)
    if (m.state === 'running') {
      m.controller.abort();
      this.setMode({ ...m, state: 'pausing' }, 'pausing: the iteration stops before its update, or finishes it if the update has begun');
    }
    return null;
  }

  /**
   * Starts experiment `name` (experiments/), answered at once: its views come as events. The one scaffold
   * (launch) stops it on Pause and says its failure; when it ends, the experiments it shares runs with are
   * read back, and the panel shows the open run's model again.
   */
  async experiment({ name, fresh }: Args<'experiment'>): Value<'experiment'> {
    if (!(name in EXPERIMENTS)) throw new Error(`no experiment "${String(name)}" (there are ${Object.keys(EXPERIMENTS).join(', ')})`);
    await this.allow('experiment');
    const host = this.experimentHost();
    void this.launch(name, EXPERIMENT_WORDS[name].running, (signal) => openExperiment(name, host).run(signal, { fresh }), async () => {
      for (const other of EXPERIMENTS[name].shares) this.post({ kind: 'experiment', name: other, view: await openExperiment(other, host).readBack() } as WorkerEvent);
      if (this.runs.run) this.shelf.announce(this.runs.run.config.agentModel);
    });
    return null;
  }

  /** The judge desk: read-only requests answer at once; teaching runs as an activity (Pause stops it, the old judge kept). */
  async desk(args: Args<'desk'>): Value<'desk'> {
    const run = this.openRun();
    if (args.op !== 'teach' && args.op !== 'ask') return this.judges.handle(run.config, args);
    await this.allow('experiment');
    let view: Awaited<Value<'desk'>> | null = null;
    let failed: Error | null = null;
    const words = args.op === 'teach' ? 'teaching the judge on your corrections' : undefined;
    await this.launch('teach', words, async (signal) => {
      try {
        view = await this.judges.handle(run.config, args, signal, (progress) => this.post({ kind: 'teach', progress }));
      } catch (e) {
        failed = e as Error;
      }
    });
    if (failed) throw failed;
    if (!view) throw new Error('stopped before the end; the old judge is unchanged');
    return view;
  }

  /** Tier 3's answer to a card shown during the run (person-cards.ts); any state: a card waits only while a run does. */
  async person(args: Args<'person'>): Value<'person'> {
    return this.cards.answer(args);
  }

  async tool({ code, language }: Args<'tool'>): Value<'tool'> {
    const r = await this.shelf.sandbox().run(code, { language, timeoutMs: 30_000 });
    return { stdout: r.stdout, stderr: r.stderr, error: r.error?.message };
  }

  async export({ what }: Args<'export'>): Value<'export'> {
    return exportFile(this.openRun(), what);
  }

  async import(args: Args<'import'>): Value<'import'> {
    if ('dataset' in args) return this.runs.openDataset(args.dataset.text, args.dataset.name, () => this.allow('importDataset'));
    return importAdapter(this.openRun().session, args.adapter.agentId, args.adapter.files, () => this.allow('importAdapter'));
  }

  async saved(): Value<'saved'> {
    const runs = await this.platform.listRuns();
    return Promise.all(runs.map(async (r) => ({ ...r, team: teamOf(r.config), metrics: await this.platform.store(r.runId).metrics<never>() })));
  }

  async coaches(): Value<'coaches'> {
    const { webLlmModels } = await import('../coach/webllm-coach.ts');
    return webLlmModels();
  }

  async device(args: Args<'device'>): Value<'device'> {
    if ('lose' in args) {
      const device = webgpuDevice();
      if (!device) throw new Error(`the backend is ${currentBackend()?.name ?? 'not started'}, not webgpu: there is no device to lose`);
      device.destroy();
      return null;
    }
    await this.allow('recover');
    const backend = args.recover;
    // After a loss, webgpu means a new device in this page (the GPU may not come back: then say so).
    const info = backend === 'webgpu' && this.mode.state === 'lost' ? await restartWebGPU() : await initBackend({ force: backend });
    this.post({ kind: 'backend', info, summary: describeBackend(info) });
    this.shelf.forgetModels(); // their tensors lived on the lost device
    this.runs.run = null; // its session's too: forgotten, not disposed
    await this.runs.open(this.runs.partial);
    return info;
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
