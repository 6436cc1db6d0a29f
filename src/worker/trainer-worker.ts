/**
 * The training worker: hosts the headless core (backend, models, coach, sandbox, Trainer) in a
 * Web Worker so the page stays responsive, and drives it the way `mappa train` does (cli/train.ts):
 * baseline evaluation once per run, iterations until paused or done, a checkpoint whenever it
 * stops, metrics and trajectories saved with every iteration.
 *
 * For: answering the requests of src/worker/protocol.ts and streaming events to the page.
 * Not for: drawing anything (the page subscribes through client.ts) or any training maths.
 *
 * Persistence: each run lives in IndexedDB (platform/browser/store-idb.ts) under an id derived from its
 * whole configuration, so opening the same configuration (the same URL) resumes that run.
 */
/// <reference lib="webworker" />
import { planForModel, type RunPlanSummary } from '../core/loop/run-plan.ts';
import { backendLimits, currentBackend, describeBackend, initBackend, onDeviceLost, restartWebGPU, webgpuDevice, type BackendName } from '../core/engine/backend.ts';
import { loadModel, type LoadedModel } from '../core/engine/model/load.ts';
import { memorySource } from '../core/engine/model/sources.ts';
import { exportPeft, importPeft } from '../core/engine/lora/peft.ts';
import { AdamW } from '../core/rl/adamw.ts';
import { resolveTrainConfig, type TrainConfig } from '../core/loop/config.ts';
import { buildCoach } from '../core/coach/coaches.ts';
import { cachedCoach, MiscalibratedCoach, type Coach } from '../core/coach/coach.ts';
import type { GenerationProgress } from '../core/engine/model/generate.ts';
import { Trainer, type EvalResult, type IterationMetrics, type Phase } from '../core/loop/train.ts';
import { EvalQueue } from '../core/loop/eval-queue.ts';
import { RunSession } from '../core/loop/session.ts';
import type { TeamLanes } from '../core/loop/remote-rollouts.ts';
import { laneCount, startWebLanes } from './lanes.ts';
import type { RolloutTask } from '../core/loop/rollout.ts';
import { IdbStore, listRuns } from '../platform/browser/store-idb.ts';
import { hashString } from '../core/tasks/rng.ts';
import { parseJsonlDataset, formatDatasetErrors } from '../core/tasks/dataset.ts';
import type { Sandbox } from '../core/tools/sandbox.ts';
import { createSandbox } from '../core/tools/code-sandbox.ts';
import { createSqlTool } from '../core/tools/sql.ts';
import { domainOf } from '../core/domains/index.ts';
import { adapterFiles, metricsCsv, trajectoryLines, trajectoryView, zipAdapters } from './exports.ts';
import { checkFits, isEmbedded, pickedModels, sourceFor } from './models.ts';
import type { EventMessage, ProgressInfo, ReplyMessage, RequestMessage, Requests, RunState, WorkerEvent } from './protocol.ts';

const scope = self as unknown as DedicatedWorkerGlobalScope;

// ---- state -------------------------------------------------------------------------------------
let baseUrl = '';
let config: TrainConfig | null = null;
let partialConfig: unknown = {};
let runId = '';
let store: IdbStore | null = null;
let trainer: Trainer | null = null;
let session: RunSession | null = null;
/** Aborts the loop's current iteration (Pause): set while the loop runs. */
let pauseController: AbortController | null = null;
let state: RunState = 'booting';
let lastCheckpoint = 0;
let lostDevice = false;
/** Measure the untrained team alongside training (off with ?baseline=0: slow software GPUs). */
let baselineEval = true;
/** Lane workers (one per extra core, wasm only) and the model spec their replicas hold. */
let lanes: { spec: string; lanes: TeamLanes } | null = null;
let webllm: { modelId: string; coach: Coach } | null = null;
const models = new Map<string, Promise<LoadedModel>>();
let sandbox: Sandbox | null = null;
/** The SQL tool (DuckDB-wasm), started when a workflow uses it (data team). */
let sql: Sandbox | null = null;
/** Seconds each phase took last time: the expected length of its progress bar. */
const phaseSeconds: Partial<Record<Phase, number>> = {};

function post(event: WorkerEvent): void {
  scope.postMessage({ type: 'event', event } satisfies EventMessage);
}

function setState(s: RunState, message?: string): void {
  state = s;
  post({ kind: 'state', state: s, iteration: trainer?.iteration ?? 0, message });
}

/**
 * Decoding and pre-fill bars change every few milliseconds; the page redraws at most every
 * PROGRESS_MS per bar (a redraw costs the same cores the model needs: on a CPU every repaint competes
 * with training). Starts and finishes always go through.
 */
const PROGRESS_MS = 250;
const lastProgress = new Map<string, number>();
function progress(p: ProgressInfo): void {
  const now = performance.now();
  const edge = p.finished || p.done === 0;
  if (!edge && now - (lastProgress.get(p.task) ?? -Infinity) < PROGRESS_MS) return;
  lastProgress.set(p.task, p.finished ? -Infinity : now);
  post({ kind: 'progress', progress: p });
}

/** The open run's memory plan (null before a run is open). */
let runPlan: RunPlanSummary | null = null;

// ---- models, coach, sandbox ----------------------------------------------------------------------
function openModel(spec: string): Promise<LoadedModel> {
  let m = models.get(spec);
  if (!m) {
    m = (async () => {
      const source = sourceFor(spec, baseUrl);
      const deviceMemoryGiB = (navigator as Navigator & { deviceMemory?: number }).deviceMemory;
      const fit = await checkFits(source, { maxBufferSize: backendLimits().maxBufferSize, deviceMemoryGiB });
      const started = performance.now();
      let loadedBytes = 0;
      const label = `downloading ${isEmbedded(spec) ? spec : source.name}`;
      const loaded = await loadModel(source, {
        tokenizer: 'required',
        onProgress: ({ loaded: l, total }) => {
          loadedBytes = l;
          const rate = l / Math.max((performance.now() - started) / 1000, 1e-3);
          const t = total ?? fit.bytes;
          progress({ task: 'download', label, done: l, total: t, eta: rate > 0 ? Math.max(0, (t - l) / rate) : undefined });
        },
      });
      progress({ task: 'download', label, done: loadedBytes, total: loadedBytes, finished: true });
      post({ kind: 'model', name: source.name, parameters: fit.parameters, bytes: fit.bytes });
      return loaded;
    })();
    models.set(spec, m);
    m.catch(() => models.delete(spec));
  }
  return m;
}

async function makeCoach(c: TrainConfig): Promise<Coach> {
  if (webllm) {
    let coach = webllm.coach;
    if (c.coach.miscalibration) coach = new MiscalibratedCoach(coach, c.coach.miscalibration);
    return cachedCoach(coach);
  }
  return buildCoach(c.coach, (spec) => openModel(spec), domainOf(c.workflow).ruleCoach);
}

/** An imported JSONL dataset the team trains on instead of generated problems (null: generated). */
let dataset: { name: string; tasks: RolloutTask[] } | null = null;

function runIdOf(c: TrainConfig): string {
  const h = (hashString(JSON.stringify(c) + (dataset ? `|${dataset.name}:${dataset.tasks.length}` : '')) >>> 0).toString(36);
  return `${c.workflow.name}-${c.rewards.mode}-seed${c.seed}-${h}`;
}

// ---- run lifecycle ------------------------------------------------------------------------------
async function openRun(partial: unknown, opts: { fresh?: boolean } = {}): Promise<Requests['configure']['value']> {
  if (state === 'running' || state === 'stepping' || state === 'pausing') throw new Error('pause the run before changing its configuration');
  const c = resolveTrainConfig(partial); // throws ConfigFileError naming the field, as in the CLI
  setState('loading');
  try {
    const agentModel = await openModel(c.agentModel);
    const coach = await makeCoach(c);
    const uses = (tool: string) => c.workflow.agents.some((a) => a.tools.includes(tool as never));
    const needsTools = uses('python') || uses('javascript');
    if (needsTools && !sandbox) sandbox = createSandbox({ pyodideIndexURL: new URL('pyodide/', baseUrl).href });
    if (uses('sql') && !sql) sql = createSqlTool();
    trainer?.dispose();
    trainer = null;
    session = null;
    partner?.trainer.dispose();
    partner = null;
    const runLanes = await ensureLanes(c.agentModel);
    config = c;
    partialConfig = partial;
    runId = runIdOf(c);
    store = new IdbStore(runId);
    if (opts.fresh) await store.clear();
    const saved = await store.load();
    const t = await Trainer.create(c, {
      agentModel, coach, sandbox: needsTools ? sandbox : null, sql: uses('sql') ? sql : null, store,
      dataset: dataset ? { train: dataset.tasks } : undefined, updateLanes: runLanes, deferEvaluations: true,
    }, { resume: Boolean(saved) });
    trainer = t;
    session = new RunSession(t, new EvalQueue(c, t.deps), {
      lanes: runLanes, store,
      emit: (e) => {
        if (e.type === 'eval') evalProgress(e.iteration, e.result);
        post({ kind: 'train', event: e.type === 'warning' ? { type: 'warning', iteration: t.iteration, message: e.message } : e });
      },
    });
    lastCheckpoint = t.iteration;
    t.on((e) => {
      if (e.type === 'trajectories') {
        const views = { iteration: e.iteration, trajectories: e.trajectories.map(trajectoryView) };
        post({ kind: 'trajectories', ...views });
        void store?.appendText('trajectories.jsonl', trajectoryLines(e.iteration, e.trajectories)).catch(reportError);
        void store?.writeFile('last-trajectories.json', JSON.stringify(views)).catch(reportError);
        return;
      }
      if (e.type === 'generation') return generationProgress(e.agentId, e.progress);
      if (e.type === 'phase') phaseProgress(e.phase, e.status);
      if (e.type === 'checkpoint') lastCheckpoint = e.iteration;
      post({ kind: 'train', event: e });
    });
    // Records after the checkpoint's iteration were lost work (a crash before the next save).
    await store.truncateMetrics(t.iteration);
    type MetricsRecord = { iteration: number; eval?: EvalResult; perAgent?: unknown };
    const history = await store.metrics<MetricsRecord>();
    const evals = history.filter((r) => r.eval && !r.perAgent).map((r) => ({ iteration: r.iteration, result: r.eval! }));
    const savedEvals = history.filter((r) => r.eval).map((r) => r.iteration);
    session.queueMissing(baselineEval ? savedEvals : [0, ...savedEvals]);
    const last = saved ? await store.readFile('last-trajectories.json') : null;
    await store.describe(`${c.rewards.mode}, seed ${c.seed}`, partial, t.iteration);
    post({
      kind: 'history', runId,
      metrics: history.filter((r) => r.perAgent) as IterationMetrics[],
      evals,
      trajectories: typeof last === 'string' ? JSON.parse(last) : null,
    });
    runPlan = planForModel(agentModel, c, currentBackend()?.name ?? 'cpu', backendLimits());
    post({ kind: 'run', config: c, partial, runId, iteration: t.iteration, resumed: Boolean(saved), lanes: runLanes?.count ?? 0, plan: runPlan });
    setState('ready', saved ? `resumed at iteration ${t.iteration}` : undefined);
    return { config: c, runId, iteration: t.iteration, resumed: Boolean(saved) };
  } catch (e) {
    setState('error', (e as Error).message);
    throw e;
  }
}

/** The same run under the other reward mode, stepped in turn with this one ("process vs outcome"). */
let partner: { runId: string; trainer: Trainer; session: RunSession } | null = null;

/**
 * Opens the partner of the current run: the same configuration and seed with the other reward mode
 * (process <-> outcome; mixed pairs with outcome), resumed when the browser holds it. Its metrics go
 * to its own store, and each of its iterations and finished evaluations is announced so the page
 * redraws its overlay.
 */
async function openPartner(): Promise<{ runId: string; mode: string }> {
  if (!trainer || !config || state !== 'ready') throw new Error('open a run and let it settle (not running) before starting the comparison');
  const mode = config.rewards.mode === 'outcome' ? 'process' : 'outcome';
  const base = (partialConfig ?? {}) as Record<string, unknown>;
  const c = resolveTrainConfig({ ...base, rewards: { ...(base.rewards as object | undefined), mode } });
  const id = runIdOf(c);
  const partnerStore = new IdbStore(id);
  const saved = await partnerStore.load();
  const deps = trainer.deps;
  const t = await Trainer.create(c, { ...deps, store: partnerStore }, { resume: Boolean(saved) });
  const announce = () => post({ kind: 'partner', runId: id, mode, iteration: t.iteration });
  t.on((e) => {
    if (e.type === 'iteration') announce();
    if (e.type === 'trajectories') void partnerStore.appendText('trajectories.jsonl', trajectoryLines(e.iteration, e.trajectories)).catch(reportError);
  });
  const s = new RunSession(t, new EvalQueue(c, deps), {
    lanes: lanes?.lanes ?? null, store: partnerStore,
    emit: (e) => (e.type === 'eval' && e.result.of === undefined ? announce() : undefined),
  });
  await partnerStore.truncateMetrics(t.iteration);
  const history = await partnerStore.metrics<{ iteration: number; eval?: EvalResult }>();
  // The untrained team is the same in both runs (base model, same problems and seeds): measured once, in the run.
  s.queueMissing([0, ...history.filter((r) => r.eval).map((r) => r.iteration)]);
  await partnerStore.describe(`${mode}, seed ${c.seed}`, { ...base, rewards: { ...(base.rewards as object | undefined), mode } }, t.iteration);
  partner?.trainer.dispose();
  partner = { runId: id, trainer: t, session: s };
  announce();
  return { runId: id, mode };
}

/**
 * Lane workers for this model (wasm only: on webgpu the one device does the work), started once per
 * model. A failure to start them is a warning: the run goes on in this worker alone.
 */
async function ensureLanes(spec: string): Promise<TeamLanes | null> {
  const want = currentBackend()?.name === 'wasm' ? laneCount() : 0;
  if (lanes && (lanes.spec !== spec || want === 0)) {
    await lanes.lanes.close();
    lanes = null;
  }
  if (!want || lanes) return lanes?.lanes ?? null;
  try {
    const files = spec.startsWith('picked:') ? pickedModels.get(spec) : undefined;
    lanes = { spec, lanes: await startWebLanes(want, spec, baseUrl, files as never) };
  } catch (e) {
    post({ kind: 'error', message: `${(e as Error).message}; training goes on in one worker` });
  }
  return lanes?.lanes ?? null;
}

/** The evaluation measured alongside training: problems done of all, as a counted bar. */
function evalProgress(iteration: number, r: EvalResult): void {
  const label = iteration === 0 ? 'measuring the untrained team (held-out problems)' : `measuring the team after iteration ${iteration} (held-out problems)`;
  progress({ task: 'baseline', label, done: r.tasks, total: r.of ?? r.tasks, finished: r.of === undefined });
}

/** Bars of a loop that stopped (pause, error) would otherwise stay on screen. */
function clearProgress(): void {
  for (const task of ['prefill', 'decode', 'rollout', 'coach', 'update', 'eval', 'checkpoint', 'baseline'] as const) {
    progress({ task, label: '', done: 1, total: 1, finished: true });
  }
  phaseStarts.clear();
}

function phaseProgress(phase: Phase, status: 'start' | 'end'): void {
  const key = `phase:${phase}`;
  const now = performance.now();
  if (status === 'start' && !phaseStarts.has(key)) phaseStarts.set(key, now);
  const started = phaseStarts.get(key) ?? now;
  const finished = status === 'end';
  const label = { rollout: 'rollouts', coach: 'coaching every action', update: 'updating adapters', eval: 'held-out evaluation', checkpoint: 'saving checkpoint' }[phase];
  if (finished) {
    phaseSeconds[phase] = (now - started) / 1000;
    phaseStarts.delete(key);
  }
  progress({ task: phase, label, done: finished ? 1 : 0, total: 1, expected: phaseSeconds[phase], finished });
}
const phaseStarts = new Map<string, number>();

/** Pre-fill bars timed by the last measured rate (prompt tokens per second); decoding bars by step. */
let prefillRate = 0;
let prefillStarted = 0;
let decodeStarted = 0;
function generationProgress(agentId: string, p: GenerationProgress): void {
  const now = performance.now();
  if (p.phase === 'prefill') {
    const label = `pre-fill: ${agentId}, ${p.rows} prompt${p.rows === 1 ? '' : 's'} (${p.tokens} tokens)`;
    if (p.done === 0) {
      prefillStarted = now;
      progress({ task: 'prefill', label, done: 0, total: 1, expected: prefillRate > 0 ? p.tokens / prefillRate : undefined });
    } else {
      const seconds = (now - prefillStarted) / 1000;
      if (seconds > 0) prefillRate = p.tokens / seconds;
      progress({ task: 'prefill', label, done: 1, total: 1, finished: true });
    }
    return;
  }
  // A generation's first step starts a new bar (rows that stop early never reach the last step).
  if (p.done <= 1) {
    progress({ task: 'decode', label: '', done: 0, total: 0, finished: true });
    decodeStarted = now;
  }
  const finished = p.done >= p.total;
  // Time left from this generation's own step rate, measured here (the page's clock lags its messages).
  const perStep = p.done > 1 ? (now - decodeStarted) / 1000 / (p.done - 1) : undefined;
  progress({ task: 'decode', label: `decoding: ${agentId}, ${p.rows} row${p.rows === 1 ? '' : 's'} still writing`, done: p.done, total: p.total, finished,
    eta: perStep === undefined ? undefined : perStep * (p.total - p.done) });
}

/** Runs the session until paused, done or one iteration (`single`); checkpoints whenever it stops. */
/** Why the open run cannot train now (thrown to the request, so the page shows it), or nothing. */
function assertRunnable(): void {
  if (!trainer || !config || !session) throw new Error('no run is open yet; wait for the model to load');
  if (lostDevice) throw new Error('the WebGPU device was lost; restart it or continue on wasm (the buttons in the banner), or reload the page');
  if (runPlan && !runPlan.fits) throw new Error(`this run does not fit the device (memory plan: ${runPlan.line}): ${runPlan.problems.join('; ')}`);
}

async function loop(single: boolean): Promise<void> {
  assertRunnable();
  if (!trainer || !config || !session) return;
  if (state === 'running' || state === 'stepping') return;
  const controller = (pauseController = new AbortController());
  setState(single ? 'stepping' : 'running');
  const t = trainer;
  const pair = partner;
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
      await pair.trainer.checkpoint();
    }
    if (!lostDevice && t.iteration > lastCheckpoint) {
      await t.checkpoint(); // nothing is lost by pausing or stepping: a reload resumes here
    }
    clearProgress();
    setState('ready');
  } catch (e) {
    clearProgress();
    if (lostDevice) return; // the device-loss handler has reported it
    reportError(e);
    setState('ready', (e as Error).message);
  } finally {
    pauseController = null;
  }
}

function reportError(e: unknown): void {
  const err = e as Error;
  post({ kind: 'error', message: err?.name === 'StorageQuotaError' ? err.message : `${err?.message ?? String(e)}` });
}

onDeviceLost((info) => {
  lostDevice = true;
  pauseController?.abort();
  setState('lost', `WebGPU device lost (${info.reason}); the run stopped at its last checkpoint (iteration ${lastCheckpoint})`);
  post({ kind: 'deviceLost', reason: info.reason, message: info.message, checkpointIteration: lastCheckpoint });
});

// ---- requests -----------------------------------------------------------------------------------
type Handlers = { [K in keyof Requests]: (args: Requests[K]['args']) => Promise<Requests[K]['value']> };

const handlers: Handlers = {
  async init({ backend, baseUrl: base, baseline }) {
    baseUrl = base;
    baselineEval = baseline ?? true;
    let info;
    try {
      info = await initBackend(backend ? { force: backend } : {});
    } catch (e) {
      if (!backend) throw e;
      // A link that asks for a backend this browser lacks still opens, on the best one it has.
      info = await initBackend({});
      info = { ...info, notice: `The link asked for ${backend}, which is unavailable here (${(e as Error).message}); using ${info.name} instead.` };
    }
    post({ kind: 'backend', info, summary: describeBackend(info) });
    return info;
  },
  async configure({ config: partial }) {
    return openRun(partial);
  },
  async start() {
    assertRunnable(); // refused here, where the page hears it; the loop itself runs on
    void loop(false);
    return null;
  },
  async compare() {
    assertRunnable();
    const opened = await openPartner();
    void loop(false);
    return opened;
  },
  async pause() {
    if (state === 'running' && pauseController) {
      pauseController.abort();
      setState('pausing', 'pausing: the iteration stops before its update, or finishes it if the update has begun');
    }
    return null;
  },
  async step() {
    await loop(true);
    return null;
  },
  async reset() {
    if (state === 'running' || state === 'stepping' || state === 'pausing') throw new Error('pause the run before resetting it');
    await openRun(partialConfig, { fresh: true });
    return null;
  },
  async export({ what }) {
    if (!trainer || !config || !store) throw new Error('no run is open yet');
    if (what === 'adapters') {
      const perAgent: Record<string, Record<string, Uint8Array>> = {};
      for (const [id, p] of trainer.policies) perAgent[id] = await exportPeft(p.adapter, config.agentModel);
      return { name: `${runId}-adapters.zip`, mime: 'application/zip', bytes: zipAdapters(perAgent) };
    }
    if (what === 'trajectories') {
      const text = (await store.readFile('trajectories.jsonl')) ?? '';
      return { name: `${runId}-trajectories.jsonl`, mime: 'application/x-ndjson', bytes: new TextEncoder().encode(String(text)) };
    }
    const csv = metricsCsv(await store.metrics());
    return { name: `${runId}-metrics.csv`, mime: 'text/csv', bytes: new TextEncoder().encode(csv) };
  },
  async importAdapter({ agentId, files }) {
    if (!trainer || !config) throw new Error('no run is open yet');
    const policy = trainer.policies.get(agentId);
    if (!policy) throw new Error(`no trainable agent "${agentId}" in this team (${[...trainer.policies.keys()].join(', ')})`);
    if (state !== 'ready') throw new Error('pause the run before importing an adapter');
    const adapter = await importPeft(memorySource(adapterFiles(files), 'uploaded adapter'), trainer.deps.agentModel.config, agentId);
    policy.adapter.dispose();
    policy.optimizer.dispose();
    trainer.policies.set(agentId, { adapter, optimizer: new AdamW(adapter.variables(), { lr: config.lr, weightDecay: config.weightDecay }), trainable: policy.trainable });
    await trainer.checkpoint();
    return { agentId };
  },
  async importDataset({ text, name }) {
    const parsed = parseJsonlDataset(text, { source: name.replace(/\.jsonl$/, '') });
    const errors = parsed.errors.length ? formatDatasetErrors(parsed.errors, name).split('\n') : [];
    if (parsed.tasks.length) {
      // Train on it from now on: a new run (its id includes the dataset), resumable like any other.
      dataset = { name, tasks: parsed.tasks };
      await openRun(partialConfig);
    }
    return { tasks: parsed.tasks.length, errors };
  },
  async loadModel({ url, files }) {
    let spec: string;
    if (files?.length) {
      const folder = (files[0] as File & { webkitRelativePath?: string }).webkitRelativePath?.split('/')[0] || 'files';
      spec = `picked:${folder}`;
      pickedModels.set(spec, files);
      models.delete(spec);
    } else if (url) {
      spec = url.trim();
    } else {
      throw new Error('loadModel: give a hub id / URL or pick a folder');
    }
    const m = await openModel(spec);
    const parameters = m.model.parameterCount();
    const patch = { ...(partialConfig as Record<string, unknown>), agentModel: spec };
    await openRun(patch);
    return { name: m.source.name, parameters };
  },
  async listRuns() {
    const runs = await listRuns();
    return Promise.all(runs.map(async (r) => ({
      ...r,
      metrics: await new IdbStore(r.runId).metrics<IterationMetrics>(),
    })));
  },
  async webllmModels() {
    const { webLlmModels } = await import('../core/coach/webllm-coach.ts');
    return webLlmModels();
  },
  async webllmCoach({ choice }) {
    if (!choice) {
      webllm = null;
    } else {
      const { createWebLlmCoach } = await import('../core/coach/webllm-coach.ts');
      const coach = await createWebLlmCoach(choice.modelId, {
        onProgress: (p) => progress({ task: 'webllm', label: `WebLLM ${choice.modelId}: ${p.text}`, done: p.progress, total: 1, finished: p.progress >= 1 }),
      });
      webllm = { modelId: choice.modelId, coach };
    }
    await openRun(partialConfig);
    return { name: webllm ? `webllm:${webllm.modelId}` : config?.coach.kind ?? 'rule' };
  },
  async recover({ backend }) {
    if (state === 'running' || state === 'stepping' || state === 'pausing') throw new Error('pause the run before changing the backend');
    // After a loss, webgpu means a new device in this page (the GPU may not come back: then say so).
    const info = backend === 'webgpu' && lostDevice ? await restartWebGPU() : await initBackend({ force: backend });
    post({ kind: 'backend', info, summary: describeBackend(info) });
    models.clear(); // their tensors lived on the lost device
    trainer = null;
    lostDevice = false;
    state = 'ready';
    await openRun(partialConfig);
    return info;
  },
  async runTool({ code, language }) {
    sandbox ??= createSandbox({ pyodideIndexURL: new URL('pyodide/', baseUrl).href });
    const r = await sandbox.run(code, { language, timeoutMs: 30_000 });
    return { stdout: r.stdout, stderr: r.stderr, error: r.error?.message };
  },
  async loseDevice() {
    const device = webgpuDevice();
    if (!device) throw new Error(`the backend is ${currentBackend()?.name ?? 'not started'}, not webgpu: there is no device to lose`);
    device.destroy();
    return null;
  },
};

scope.onmessage = async (ev: MessageEvent<RequestMessage>) => {
  const msg = ev.data;
  const handler = handlers[msg.type] as (args: unknown) => Promise<unknown>;
  let reply: ReplyMessage;
  try {
    reply = { type: 'reply', id: msg.id, ok: true, value: await handler(msg.args) };
  } catch (e) {
    reply = { type: 'reply', id: msg.id, ok: false, error: (e as Error)?.message ?? String(e) };
  }
  scope.postMessage(reply);
};
