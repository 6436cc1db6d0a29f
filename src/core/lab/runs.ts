/**
 * The lab's open run and its twin: opening a configuration (or a stored run, or a dataset) as a RunSession
 * (core/loop/session.ts, the same one `mappa train` drives), resumed when the browser holds it, read-only
 * when another tab trains it (tabs.ts); the twin under the other reward mode for "process vs outcome"; and
 * the loop that trains them until paused.
 *
 * For: the lab (lab.ts), which gates each request by its state first. Not for: the training maths (core/loop).
 *
 * Example: const runs = new Runs(platform, shelf, bars, hooks, () => baseline);
 *          await runs.open({ workflow: 'relay' });   // -> { config, runId: 'relay-process-seed0-…', iteration: 0, resumed: false }
 *          await runs.loop(true);                    // one iteration
 */
import { backendLimits, currentBackend } from '../engine/backend.ts';
import { alongside } from '../compute/alongside.ts';
import { computeFor } from '../compute/lanes.ts';
import { type TrainConfig } from '../loop/config.ts';
import { ConfigFileError } from '../loop/config-fields.ts';
import { usedBy } from '../loop/models-used.ts';
import { splitRecords, type EvalResult, type StoredRecord } from '../loop/records.ts';
import { planForModel, type RunPlanSummary } from '../measure/run-plan.ts';
import { RunSession } from '../loop/session.ts';
import type { RunParts } from '../loop/train.ts';
import type { RolloutTask } from '../loop/trajectory.ts';
import { resolveTrainConfig } from '../domains/index.ts';
import { hashString } from '../stats/rng.ts';
import { formatDatasetErrors, parseJsonlDataset } from '../tasks/dataset.ts';
import type { ProgressBars } from './progress.ts';
import type { OpenedRun } from './protocol.ts';
import type { LabPlatform, LabStore, Shelf } from './shelf.ts';
import { TabLocks, type LabHooks } from './tabs.ts';
import { LAST_TRAJECTORIES, trajectoryViews } from './transfer.ts';

/** The file a dataset run keeps its imported JSONL in. */
const DATASET_FILE = 'dataset.jsonl';

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

/** The open run: its config, the patch it came from, what it trains with, its store, session and memory plan. */
export interface OpenRun {
  config: TrainConfig; partial: unknown; runId: string; parts: RunParts; store: LabStore; session: RunSession; plan: RunPlanSummary;
}

export class Runs {
  run: OpenRun | null = null;
  /** The patch the open run came from (kept when its opening failed: Reset opens it afresh). */
  partial: unknown = {};
  /** The same run under the other reward mode, stepped in turn with this one ("process vs outcome"). */
  private partner: { runId: string; session: RunSession; writer?: { release(): void } } | null = null;
  /** An imported JSONL dataset the team trains on instead of generated problems (null: generated). */
  private dataset: { name: string; tasks: RolloutTask[]; text: string } | null = null;
  /** Counts the openings of runs: only the latest one sets the state it ends in. */
  private openings = 0;
  readonly tabs: TabLocks;

  constructor(private readonly platform: LabPlatform, private readonly shelf: Shelf, private readonly bars: ProgressBars,
    private readonly hooks: LabHooks, private readonly baseline: () => boolean) {
    this.tabs = new TabLocks(platform, hooks, () => this.close());
  }

  /** A lane's failure (the run goes on in this worker alone), shown as the run's warning. */
  private readonly warn = (message: string): void => {
    this.hooks.post({ kind: 'train', event: { type: 'warning', iteration: this.run?.session.trainer.iteration ?? 0, message } });
  };

  /** Closes the open run and its twin; what it came from and where it was. */
  close(): { partial: unknown; iteration: number } {
    const was = { partial: this.run?.partial ?? this.partial, iteration: this.run?.session.trainer.iteration ?? 0 };
    this.run?.session.dispose();
    this.run = null;
    this.partner?.session.dispose();
    this.partner?.writer?.release();
    this.partner = null;
    return was;
  }

  /** The id a run's config (and dataset) is stored under: the same settings resume the same run. */
  runIdOf(c: TrainConfig, withDataset = true): string {
    const d = withDataset ? this.dataset : null;
    const h = (hashString(JSON.stringify(c) + (d ? `|${d.name}:${d.tasks.length}` : '')) >>> 0).toString(36);
    return `${c.workflow.name}-${c.rewards.mode}-seed${c.seed}-${h}`;
  }

  /** Opens (or resumes) the run of this configuration; `fresh` deletes what the browser held of it first. */
  open(partial: unknown, opts: { fresh?: boolean; takeOver?: boolean } = {}): Promise<OpenedRun> {
    const c = resolvePageConfig(partial); // a refused setting leaves the open run as it was
    const token = ++this.openings;
    const m = this.hooks.mode();
    const before = m.state === 'loading' ? m.opening.catch(() => undefined) : null;
    const opening = (async () => {
      await before; // one opening at a time, in the order asked
      return this.openNow(c, partial, opts, token);
    })();
    this.hooks.setMode({ state: 'loading', opening });
    return opening;
  }

  /** Opens run `c` (see open); the state it ends in is set only by the latest opening. */
  private async openNow(c: TrainConfig, partial: unknown, opts: { fresh?: boolean; takeOver?: boolean }, token: number): Promise<OpenedRun> {
    const settle = (mode: Parameters<LabHooks['setMode']>[0], message?: string) => (token === this.openings ? this.hooks.setMode(mode, message) : undefined);
    try {
      const parts = await this.shelf.parts(c);
      this.close();
      const runId = this.runIdOf(c);
      const store = this.platform.store(runId);
      if (!(await this.tabs.claim(runId, store, opts.takeOver ? 'take-over' : 'if-free'))) {
        const value = await this.openReadOnly(c, partial, runId, store, parts);
        settle({ state: 'readonly', runId, partial, iteration: value.iteration },
          'this run is training in another tab; this tab shows it read-only (Take over to train it here)');
        this.tabs.follow(runId);
        return value;
      }
      const lanes = await this.shelf.lanes(c.agentModel);
      const compute = computeFor(parts, lanes, this.warn);
      const runParts: RunParts = { ...parts, dataset: this.dataset ? { train: this.dataset.tasks } : undefined, compute };
      // Warnings come while the session opens (records cut back to the checkpoint, an evaluation begun again), before
      // `session` is assigned (reading it there threw, and the page refused the run's link): those carry iteration 0.
      let opened: RunSession | null = null;
      const session = await RunSession.open(c, runParts, {
        store, hook: alongside(compute), baseline: this.baseline(), fresh: opts.fresh,
        // The models it uses by content, in every checkpoint; a stored run checkpointed with others is refused, naming which.
        used: await usedBy(c, parts.team, parts.agentModel.source,
          (spec) => (parts.coach.name.startsWith('model:') ? this.platform.modelSource(spec, this.shelf.baseUrl) : null)),
        emit: (e) => {
          if (e.type === 'eval') this.bars.evaluation(e.iteration, e.result);
          this.hooks.post({ kind: 'train', event: e.type === 'warning' ? { type: 'warning', iteration: opened?.trainer.iteration ?? 0, message: e.message } : e });
        },
      });
      opened = session;
      session.trainer.on((e) => {
        if (e.type === 'trajectories') {
          void trajectoryViews(c.workflow, e.trajectories, parts.coach.name).then((trajectories) => {
            const views = { iteration: e.iteration, trajectories };
            this.hooks.post({ kind: 'trajectories', ...views });
            return store.writeFile(LAST_TRAJECTORIES, JSON.stringify(views));
          }).catch((err) => this.hooks.reportError(err));
          return;
        }
        if (e.type === 'generation') return this.bars.generation(e.agentId, e.progress);
        if (e.type === 'phase') this.bars.phase(e.phase, e.status);
        this.hooks.post({ kind: 'train', event: e });
      });
      const { resumed, metrics, evals } = session.history;
      const last = resumed ? await store.readFile(LAST_TRAJECTORIES) : null;
      const dataset = this.dataset;
      // A dataset run keeps its dataset beside its records: a reload (?run=) trains on the same problems.
      if (dataset && !resumed) await store.writeFile(DATASET_FILE, dataset.text);
      await store.describe(`${dataset ? `dataset ${dataset.name}: ` : ''}${c.rewards.mode}, seed ${c.seed}`, partial, session.trainer.iteration);
      this.hooks.post({ kind: 'history', runId, metrics, evals, trajectories: typeof last === 'string' ? JSON.parse(last) : null });
      const plan = planForModel(parts.agentModel, c, parts.team, currentBackend()?.name ?? 'cpu', backendLimits());
      this.run = { config: c, partial, runId, parts: runParts, store, session, plan };
      this.partial = partial;
      const iteration = session.trainer.iteration;
      const coachQuality = await this.shelf.coachQuality(c, parts.coach.name);
      const pool = this.dataset ? this.dataset.tasks.length : session.trainer.curriculum.source.pool(c.curriculum.startLevel).length;
      this.hooks.post({
        kind: 'run', config: c, partial, runId, iteration, resumed, lanes: lanes?.count ?? 0, plan, coach: parts.coach.name, coachQuality, pool,
        dataset: dataset?.name ?? null,
      });
      settle({ state: 'ready' }, resumed ? `resumed at iteration ${iteration}` : undefined);
      return { config: c, runId, iteration, resumed };
    } catch (e) {
      if (token === this.openings) this.partial = partial; // Reset opens this run afresh (its stored files may be what failed)
      settle({ state: 'error', message: (e as Error).message }, (e as Error).message);
      throw e;
    }
  }

  /** Shows a run another tab trains: its records so far, no session, nothing written. */
  private async openReadOnly(c: TrainConfig, partial: unknown, runId: string, store: LabStore, parts: Omit<RunParts, 'dataset'>): Promise<OpenedRun> {
    this.run?.session.dispose();
    this.run = null;
    this.tabs.release();
    this.partial = partial;
    const { metrics, evals } = splitRecords(await store.metrics<StoredRecord>());
    const iteration = metrics.at(-1)?.iteration ?? 0;
    this.hooks.post({ kind: 'history', runId, metrics, evals, trajectories: null });
    const plan = planForModel(parts.agentModel, c, parts.team, currentBackend()?.name ?? 'cpu', backendLimits());
    const coachQuality = await this.shelf.coachQuality(c, parts.coach.name);
    this.hooks.post({ kind: 'run', config: c, partial, runId, iteration, resumed: true, lanes: 0, plan, coach: parts.coach.name, coachQuality, pool: Infinity });
    return { config: c, runId, iteration, resumed: true };
  }

  /** Opens a run this browser holds by its id (a link's ?run=): its stored settings, and its dataset when it has one. */
  async openSaved(runId: string): Promise<OpenedRun> {
    const rec = (await this.platform.listRuns()).find((r) => r.runId === runId);
    if (!rec || rec.config === null) throw new Error(`this browser holds no run ${runId} (it may have been deleted, or trained in another browser)`);
    const text = await this.platform.store(runId).readFile(DATASET_FILE);
    if (typeof text === 'string') {
      const name = /^dataset (.+?): /.exec(rec.label)?.[1] ?? 'dataset.jsonl';
      this.dataset = { name, tasks: parseJsonlDataset(text, { source: name.replace(/\.jsonl$/, '') }).tasks, text };
    } else {
      this.dataset = null;
    }
    const opened = await this.open(rec.config);
    if (opened.runId !== runId) throw new Error(`run ${runId}'s stored settings now open ${opened.runId} (the settings' defaults changed since)`);
    return opened;
  }

  /**
   * Trains on a JSONL dataset from now on: a new run (its id includes the dataset), resumable like any other.
   * The run that was open is kept as it was, and the page says so (an import never replaces a run in silence).
   * `allow` is asked once the file is read (lines with problems alone open nothing).
   */
  async openDataset(text: string, name: string, allow: () => Promise<void>): Promise<{ tasks: number; errors: string[] }> {
    const parsed = parseJsonlDataset(text, { source: name.replace(/\.jsonl$/, '') });
    const errors = parsed.errors.length ? formatDatasetErrors(parsed.errors, name).split('\n') : [];
    if (parsed.tasks.length) {
      await allow();
      const was = this.run ? { runId: this.run.runId, iteration: this.run.session.trainer.iteration } : null;
      this.dataset = { name, tasks: parsed.tasks, text };
      const opened = await this.open(this.partial);
      this.hooks.post({
        kind: 'notice',
        message: `The dataset ${name} (${parsed.tasks.length} problems) opened a new run, ${opened.runId}, at iteration ${opened.iteration}`
          + `${was ? `; the run that was open (${was.runId}, iteration ${was.iteration}) is kept as it was` : ''}. `
          + 'This page\'s link now opens the dataset run (?run=); a link without it opens generated problems.',
      });
    }
    return { tasks: parsed.tasks.length, errors };
  }

  /** The open run, when it can train (else why not, thrown to the request so the page shows it). */
  runnable(): OpenRun {
    const run = this.run;
    if (!run) throw new Error('no run is open: its configuration was refused (see the banner); change the setting');
    if (!run.plan.fits) throw new Error(`this run does not fit the device (memory plan: ${run.plan.line}): ${run.plan.problems.join('; ')}`);
    return run;
  }

  /**
   * Opens the twin of the open run: the same configuration and seed with the other reward mode
   * (process <-> outcome; mixed pairs with outcome), resumed when the browser holds it. Each of its
   * iterations and finished evaluations is announced so the page redraws its overlay. The untrained
   * team is the same in both runs (base model, same problems and seeds): measured once, in the run.
   */
  async openTwin(): Promise<void> {
    const run = this.run;
    if (!run || this.hooks.mode().state !== 'ready') throw new Error('open a run and let it settle (not running) before starting the comparison');
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
      this.hooks.post({ kind: 'partner', runId, mode, iteration: session?.trainer.iteration ?? 0, iterations: c.iterations, ...(ev ? { eval: ev } : {}) });
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
  }

  /** Trains until paused, done or one iteration (`single`), the twin in turn when comparing; checkpoints whenever it stops. */
  loop(single: boolean): Promise<void> {
    const m = this.hooks.mode();
    if (m.state === 'running' && (m.activity === 'training' || m.activity === 'compare')) return m.done; // already going
    const run = this.run!;
    const pair = this.partner;
    const words = pair ? 'process vs outcome: this run and its twin train in turn, one iteration each' : undefined;
    return this.hooks.launch(single ? 'step' : pair ? 'compare' : 'training', words, async (signal) => {
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
      if (this.run === run && this.hooks.mode().state !== 'lost') await run.session.saveIfBehind();
    });
  }
}
