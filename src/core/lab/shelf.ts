/**
 * What a lab run is built from, kept between runs: the loaded models (each downloaded once, with a
 * counted bar), the coach a config asks for (or the chosen WebLLM coach), the tool sandboxes, and
 * the lane workers holding replicas of the agent model. The platform says where each comes from.
 *
 * For: lab.ts (one Shelf per lab). Not for: the run itself (core/loop/session.ts).
 *
 * Example: const shelf = new Shelf(platform, bars, post); shelf.baseUrl = 'http://127.0.0.1:4173/';
 *          const parts = await shelf.parts(config);     // { agentModel, coach, tools: { python, javascript, sql } }
 *          const lanes = await shelf.lanes(config.agentModel);   // one per extra core on wasm, else null
 */
import { backendLimits, currentBackend } from '../engine/backend.ts';
import { checkFits } from '../engine/model/fits.ts';
import { loadModel, type LoadedModel } from '../engine/model/load.ts';
import type { ModelSource } from '../engine/model/source.ts';
import { isEmbedded, type PickedFile } from '../engine/model/sources.ts';
import type { Coach } from '../coach/coach.ts';
import { buildCoach, judgeSpec, wrapCoach } from '../coach/coaches.ts';
import type { Person } from '../coach/person-tier.ts';
import { coachQuality, judgeBuild, reportRanking, type CoachQuality } from './coach-quality.ts';
import { LocalCompute } from '../compute/local.ts';
import { sqlFunctions, teamOf } from '../domains/index.ts';
import type { RunStore } from '../loop/checkpoint.ts';
import type { TrainConfig } from '../loop/config.ts';
import type { Lanes } from '../compute/lanes.ts';
import type { RunParts } from '../loop/train.ts';
import { createSqlTool } from '../tools/sql.ts';
import { toolsFor } from '../tools/runners.ts';
import type { Sandbox } from '../tools/sandbox.ts';
import type { ProgressBars } from './progress.ts';
import type { RunRecord, WorkerEvent } from './protocol.ts';

/** A run's store in the lab, with its entry in the platform's list of runs. */
export type LabStore = RunStore & {
  describe(label: string, config: unknown, iteration: number): Promise<void>;
  /** Makes this store the run's only writer: a store of the run opened earlier (another tab) fails its next write. */
  claim?(): Promise<void>;
};

/** The right to write one run, held while a tab trains it (platform/browser/run-lock.ts). */
export interface RunWriter {
  release(): void;
  /** Resolves (with why) when another tab took the run over by force. */
  lost: Promise<string>;
  /** Another tab asks for the run: pause at a checkpoint, then release. */
  onTakeOverRequest(cb: () => Promise<void>): void;
}

/** What the lab needs from the platform it runs on (the browser: src/worker/trainer-worker.ts). */
export interface LabPlatform {
  /** The store run `runId` lives in. */
  store(runId: string): LabStore;
  /** Every run this platform holds, newest first. */
  listRuns(): Promise<RunRecord[]>;
  /** A model spec ('models/agent', a hub id or URL, 'picked:<folder>') -> where its files are. */
  modelSource(spec: string, baseUrl: string): ModelSource;
  /** Keeps picked or dropped files under their spec ('picked:<folder>'). */
  pickModel(spec: string, files: PickedFile[]): void;
  /** Lanes to start beside this worker (0 where there is no extra core). */
  laneCount(): number;
  startLanes(count: number, spec: string, baseUrl: string): Promise<Lanes>;
  /** The agents' Python / JavaScript sandbox. */
  createSandbox(baseUrl: string): Sandbox;
  /** The device's memory in GiB when the platform tells (navigator.deviceMemory). */
  deviceMemoryGiB?: number;
  /**
   * The right to write run `runId`: 'if-free' gives null when another tab holds it, 'take-over' asks
   * that tab to let go (and takes it if it does not answer). Absent: one writer is all there is.
   */
  claimRun?(runId: string, how: 'if-free' | 'take-over'): Promise<RunWriter | null>;
}

export class Shelf {
  /** The site's root URL (models, Pyodide), set by the lab's init. */
  baseUrl = '';
  private models = new Map<string, Promise<LoadedModel>>();
  /** What the page was told of each loaded model (its 'model' event), to tell it again. */
  private described = new Map<string, Extract<WorkerEvent, { kind: 'model' }>>();
  private webllm: { modelId: string; coach: Coach } | null = null;
  private codeSandbox: Sandbox | null = null;
  /** The SQL tool (DuckDB-wasm), started when a workflow uses it (data team). */
  private sql: Sandbox | null = null;
  /** Lane workers (one per extra core, wasm only) and the model spec their replicas hold. */
  private running: { spec: string; lanes: Lanes } | null = null;

  constructor(private readonly platform: LabPlatform, private readonly bars: ProgressBars, private readonly post: (e: WorkerEvent) => void,
    /** Tier 3 of a coach in tiers (coach.tiers.person > 0): the person at the page (person-cards.ts). */
    private readonly person?: Person) {}

  /** The model of `spec`, loaded once (a failed load is forgotten, so it can be tried again). */
  model(spec: string): Promise<LoadedModel> {
    let m = this.models.get(spec);
    if (!m) {
      m = this.load(spec);
      this.models.set(spec, m);
      m.catch(() => this.models.delete(spec));
    }
    return m;
  }

  private async load(spec: string): Promise<LoadedModel> {
    const source = this.platform.modelSource(spec, this.baseUrl);
    const fit = await checkFits(source, { maxBufferSize: backendLimits().maxBufferSize, deviceMemoryGiB: this.platform.deviceMemoryGiB });
    const started = performance.now();
    let loadedBytes = 0;
    const label = `downloading ${isEmbedded(spec) ? spec : source.name}`;
    const loaded = await loadModel(source, {
      tokenizer: 'required',
      onProgress: ({ loaded: l, total }) => {
        loadedBytes = l;
        const rate = l / Math.max((performance.now() - started) / 1000, 1e-3);
        const t = total ?? fit.bytes;
        this.bars.report({ task: 'download', label, done: l, total: t, eta: rate > 0 ? Math.max(0, (t - l) / rate) : undefined });
      },
    });
    this.bars.report({ task: 'download', label, done: loadedBytes, total: loadedBytes, finished: true });
    const described = { kind: 'model', name: source.name, parameters: fit.parameters, bytes: fit.bytes } as const;
    this.described.set(spec, described);
    this.post(described);
    return loaded;
  }

  /** Tells the page again which model `spec` is (after the lesson loaded others, the open run's model is the one shown). */
  announce(spec: string): void {
    const described = this.described.get(spec);
    if (described) this.post(described);
  }

  /** The spec a loadModel request names: picked files ('picked:<folder>', loaded afresh) or a hub id / URL. */
  modelSpec(url: string | undefined, files: File[] | undefined): string {
    if (files?.length) {
      const folder = files[0].webkitRelativePath?.split('/')[0] || 'files';
      const spec = `picked:${folder}`;
      this.platform.pickModel(spec, files);
      this.models.delete(spec);
      return spec;
    }
    if (url) return url.trim();
    throw new Error('loadModel: give a hub id / URL or pick a folder');
  }

  /** After a device loss: the models' tensors lived on the lost device. */
  forgetModels(): void {
    this.models.clear();
  }

  /** Chooses the WebLLM coach (null: back to the config's own); returns its name. */
  async useWebLlm(modelId: string | null): Promise<string | null> {
    if (!modelId) {
      this.webllm = null;
      return null;
    }
    const { createWebLlmCoach } = await import('../coach/webllm-coach.ts');
    const coach = await createWebLlmCoach(modelId, {
      onProgress: (p) => this.bars.report({ task: 'webllm', label: `WebLLM ${modelId}: ${p.text}`, done: p.progress, total: 1, finished: p.progress >= 1 }),
    });
    this.webllm = { modelId, coach };
    return `webllm:${modelId}`;
  }

  private coach(c: TrainConfig): Promise<Coach> | Coach {
    if (!this.webllm) return buildCoach(c.coach, (spec) => this.model(spec), teamOf(c.workflow), { seed: c.seed, person: this.person });
    return wrapCoach(this.webllm.coach, c.coach);
  }

  /**
   * What the coach of a run of `c` is, in one line (coach-quality.ts): a judge's ranking is read from
   * its folder's report.json where it has one (`check.ranking`), else from the measured table.
   */
  async coachQuality(c: TrainConfig, given: string): Promise<CoachQuality> {
    // A coach in tiers ("tiers:<tier 1>><tier 2>"): what tier 1, which scores every action, is (the tiers panel says the rest).
    const coachName = given.startsWith('tiers:') ? given.slice('tiers:'.length).split('>')[0] : given;
    const domain = c.workflow.domain;
    if (!coachName.startsWith('model:')) return coachQuality(coachName, domain, c.coach.miscalibration);
    const spec = judgeSpec(c.coach, teamOf(c.workflow));
    let report: unknown = null;
    try {
      const source = this.platform.modelSource(spec, this.baseUrl);
      if (await source.has('report.json')) report = await source.readJson('report.json');
    } catch {
      report = null; // no report: the table's figure, or "not measured"
    }
    const folder = spec.replace(/^https?:\/\/[^/]+\//, '').replace(/^\.\//, '');
    return { ...coachQuality(coachName, domain, c.coach.miscalibration, reportRanking(report), `${folder}/report.json`), build: judgeBuild(report) };
  }

  /** The name of the coach a config builds, without building it (no model loaded): "model:<judge>", "webllm:<id>" or "rule:<domain>". */
  coachNameOf(c: TrainConfig): string {
    if (this.webllm) return `webllm:${this.webllm.modelId}`;
    return c.coach.kind === 'model' ? `model:${judgeSpec(c.coach, teamOf(c.workflow))}` : `rule:${c.workflow.domain}`;
  }

  /** The agents' code sandbox, started on first use. */
  sandbox(): Sandbox {
    return (this.codeSandbox ??= this.platform.createSandbox(this.baseUrl));
  }

  /** What a run of `c` trains with: its agent model, coach, the tools its agents use, and this worker as its Compute (a caller may share it out). */
  async parts(c: TrainConfig): Promise<RunParts> {
    const agentModel = await this.model(c.agentModel);
    const coach = await this.coach(c);
    this.announce(c.agentModel); // a judge loaded just now announced itself; the panel shows the agents' model
    const tools = toolsFor(c.workflow, { code: () => this.sandbox(), sql: () => (this.sql ??= createSqlTool({ functions: sqlFunctions() })) });
    const team = teamOf(c.workflow);
    return { team, agentModel, coach, tools, compute: LocalCompute.forTeam({ team, agentModel, tools }) };
  }

  /** The lanes already running, if any. */
  openLanes(): Lanes | null {
    return this.running?.lanes ?? null;
  }

  /**
   * Lane workers for this model (wasm only: on webgpu the one device does the work), started once per
   * model. A failure to start them is a warning: the run goes on in this worker alone.
   */
  async lanes(spec: string): Promise<Lanes | null> {
    const want = currentBackend()?.name === 'wasm' ? this.platform.laneCount() : 0;
    if (this.running && (this.running.spec !== spec || want === 0)) {
      await this.running.lanes.close();
      this.running = null;
    }
    if (!want || this.running) return this.openLanes();
    try {
      this.running = { spec, lanes: await this.platform.startLanes(want, spec, this.baseUrl) };
    } catch (e) {
      this.post({ kind: 'error', message: `${(e as Error).message}; training goes on in one worker` });
    }
    return this.openLanes();
  }
}
