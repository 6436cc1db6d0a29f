// Python sandbox: agent code runs in Pyodide (CPython compiled to WebAssembly, stdlib only) inside a
// worker, so a run that will not stop can be killed without taking the host down.
//
// For: short analysis snippets (json, csv, statistics, re, math...) with the Workspace as the current
// directory. Not for: third-party packages, network, threads, or long jobs.
//
// Lifecycle: the worker starts on the first run (Pyodide load, ~2-8 s, not counted against the time
// limit) and is reused. At the time limit the worker raises KeyboardInterrupt in the run itself (its
// interrupt check reads the run's deadline; on cross-origin-isolated pages the host also writes a shared
// buffer); if the run has not ended 500 ms later (C code that never checks signals, `except
// BaseException: pass` in the loop) the worker is killed and a fresh one starts loading at once, in the
// background. Runs are serialised.
//
// Node vs browser: in Node the worker is a jailed child process (jail.ts, through worker-host.ts) that
// may read only its own files and Pyodide's package; its resident memory is capped from here (its size
// once loaded + 1.25 x the largest memory limit it has run under). In the browser it is a module Web
// Worker under the tool workers' Content-Security-Policy (vite.config.ts, public/sw.js).
//
// What is NOT airtight (documented on purpose; docs/threat-model.md, "What is left"):
// - The Python-level audit hook and import checks are a first wall, not the boundary: CPython internals
//   still reach Pyodide's own Python modules (object.__subclasses__() and function __globals__). The
//   boundary is the process (Node) or the worker's policy (browser): no code generation from strings,
//   no files, network or processes of the host.
// - In the browser the worker shares the page's origin: JavaScript running in it could read this
//   origin's storage. Guest code has no way to run JavaScript there that is known (no eval, no wasm
//   compilation, no native modules, no `js` module).
// - Module-level state (e.g. monkeypatching `math`) persists between runs until the worker is
//   recycled; each run gets a fresh global namespace and an emptied /workspace, nothing more.
// - The memory limit caps WebAssembly memory growth; WebAssembly memory never shrinks, so a run that
//   reached the limit leaves the worker at that size (the next run still works within it).
//
// Example:
//   const py = createPythonSandbox();
//   await py.run('import statistics; print(statistics.mean([1, 2, 3]))')  -> {ok: true, stdout: '2\n', ...}

import {
  DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT_MS, clipParts, describeError, serialSandbox, type Clip, type RunErrorKind, type RunOptions, type RunResult, type Sandbox,
} from './sandbox.ts';
import { createFrameWorkerHost, createWorkerHost, isNode, toolFrameInUse, type WorkerHost } from './worker-host.ts';
import { WORKSPACE_MAX_BYTES, WORKSPACE_MAX_FILES, WorkspaceFull } from './workspace.ts';

export interface PythonSandboxConfig {
  /** Folder URL (ending in '/') that serves pyodide.mjs, pyodide.asm.wasm, python_stdlib.zip... Browser default '/pyodide/'. */
  pyodideIndexURL?: string;
  /** Grace period after the interrupt before the worker is killed. */
  killGraceMs?: number;
  /** Node: V8 heap limit of the worker (JS objects only; Python objects live in WebAssembly memory). */
  workerHeapMb?: number;
  /** How long loading Pyodide may take before the run fails with a 'crash'. */
  loadTimeoutMs?: number;
}

interface DoneMessage {
  type: 'done';
  id: number;
  error?: { kind: RunErrorKind; message: string; fatal?: boolean };
  stdout: Clip;
  stderr: Clip;
  changed: { path: string; bytes: Uint8Array }[];
  deleted: string[];
}

/** The host's messages to the worker: load Pyodide once, then one 'run' per code block. */
interface InitMessage {
  type: 'init';
  pyodideModuleUrl: string;
  indexURL: string;
  interruptBuffer?: SharedArrayBuffer;
  /** Browser, in the opaque-origin frame: Pyodide's files as bytes (it can fetch none of the site's files). */
  pyodideFiles?: Record<string, Uint8Array>;
}

interface RunMessage {
  type: 'run';
  id: number;
  code: string;
  files: { path: string; bytes: Uint8Array }[]; // the workspace, copied into /workspace
  timeoutMs: number; // the worker raises KeyboardInterrupt in the run past this
  memoryLimitBytes: number;
  maxWorkspaceBytes: number; // a run that leaves more sends nothing back ('forbidden')
  maxWorkspaceFiles: number;
}

interface LiveWorker {
  host: WorkerHost;
  baseRss?: number; // Node (Linux): the interpreter process's resident memory once loaded
  largestLimit?: number; // the largest memory limit (bytes) a run on this worker has had
  interrupt?: Int32Array; // shared with the worker: writing 2 raises KeyboardInterrupt (SIGINT)
  listener?: (message: any) => void;
  exitListener?: (reason: string) => void;
}

/** How one run ended: the worker's 'done' report, or why it was killed ('timeout', or the exit reason); plus the output so far. */
interface Outcome {
  done?: DoneMessage;
  killed?: 'timeout' | string;
  stdout: Clip;
  stderr: Clip;
}

/** The output of the run in flight. */
interface RunState {
  stdout: Clip;
  stderr: Clip;
}

type RunError = { kind: RunErrorKind; message: string };
type Limits = { timeoutMs: number; memoryMb: number };

/** The largest message the interpreter may send: a run's changed files are capped by the workspace limit. */
const MAX_FRAME_BYTES = WORKSPACE_MAX_BYTES + 4 * 2 ** 20;
/** How far over its memory limit the interpreter process may grow (JS-side copies) before it is killed. */
const RSS_HEADROOM = 1.25;

const emptyClip = (): Clip => ({ head: '', tail: '', total: 0 });
const clipText = (c: Clip): string => clipParts(c.head, c.tail, c.total);

/** A Sandbox for Python: Pyodide in a worker, loaded on the first run; see the top of this file. */
export function createPythonSandbox(config: PythonSandboxConfig = {}): Sandbox {
  const python = new PythonRunner(config);
  return serialSandbox((code, opts) => python.runNow(code, opts), () => python.discardWorker());
}

/**
 * The Pyodide worker, started on the first run and recycled after a kill or a fatal error (the next
 * run loads a fresh one), and each run on it. Runs never overlap: createPythonSandbox queues them
 * (serialSandbox).
 */
class PythonRunner {
  private worker: Promise<LiveWorker> | undefined;
  private loadingHost: WorkerHost | undefined;
  private nextId = 1;

  constructor(private readonly config: PythonSandboxConfig) {}

  /** Terminates the worker, if any; the next run loads a new one. */
  async discardWorker(): Promise<void> {
    const old = this.worker;
    const loading = this.loadingHost;
    this.worker = this.loadingHost = undefined;
    if (loading) await loading.terminate(); // a worker still loading (a prewarm) is not waited for
    if (old) await (await old.catch(() => undefined))?.host.terminate();
  }

  /** startWorker, remembering the host while it loads so that discardWorker can stop it at once. */
  private start(): Promise<LiveWorker> {
    const started = startWorker(this.config, (host) => (this.loadingHost = host));
    const settled = () => {
      if (this.worker === started) this.loadingHost = undefined;
    };
    started.then(settled, settled);
    return started;
  }

  /** One code block as a RunResult: a load failure is a 'crash'; a kill or a Python error becomes its error. */
  async runNow(code: string, opts: RunOptions): Promise<RunResult> {
    const limits: Limits = { timeoutMs: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS, memoryMb: opts.memoryMb ?? DEFAULT_MEMORY_MB };
    let live: LiveWorker;
    try {
      live = await this.liveWorker();
    } catch (e) {
      return loadFailure((e as Error).message);
    }
    const id = this.nextId++;
    if (live.interrupt) Atomics.store(live.interrupt, 0, 0); // clear an interrupt left over from a previous run
    const started = Date.now();
    const outcome = await runOnWorker(live, id, code, opts, limits, this.config.killGraceMs ?? 500);
    const durationMs = Date.now() - started;
    const error = await this.settle(outcome, opts);
    return {
      ok: !error,
      stdout: clipText(outcome.stdout),
      stderr: clipText(outcome.stderr),
      error: error && { kind: error.kind, message: describeError(error.kind, error.message, limits) },
      durationMs,
    };
  }

  /** Starts loading the next worker now, its failure left for the next run to report. */
  private prewarm(): void {
    this.worker ??= this.start();
    this.worker.catch(() => undefined);
  }

  /** The loaded worker, starting one if there is none; a failed load is forgotten so the next run tries afresh. */
  private async liveWorker(): Promise<LiveWorker> {
    this.worker ??= this.start();
    try {
      return await this.worker;
    } catch (e) {
      this.worker = undefined; // try a fresh load next time
      throw e;
    }
  }

  /**
   * The run's error, if any, after acting on the outcome: a killed or fatally broken worker is
   * discarded (the next run pays the reload); otherwise the files the run changed go back into the workspace.
   */
  private async settle(outcome: Outcome, opts: RunOptions): Promise<RunError | undefined> {
    if (outcome.killed) {
      await this.discardWorker();
      this.prewarm(); // the reload overlaps whatever the caller does before its next run
      return { kind: killedKind(outcome.killed), message: outcome.killed };
    }
    const done = outcome.done;
    if (!done) return undefined;
    if (done.error?.fatal) await this.discardWorker();
    if (opts.workspace && !done.error?.fatal) {
      try {
        opts.workspace.applyChanges(done.changed, done.deleted, opts.owner ?? 'unknown');
      } catch (e) {
        if (e instanceof WorkspaceFull) return done.error ?? { kind: 'forbidden', message: e.message };
        throw e;
      }
    }
    return done.error && { kind: done.error.kind, message: done.error.message };
  }
}

/** The RunResult for a worker that could not load Pyodide: an empty 'crash'. */
function loadFailure(message: string): RunResult {
  return { ok: false, stdout: '', stderr: '', error: { kind: 'crash', message: describeError('crash', message) }, durationMs: 0 };
}

/** The error kind of a killed run: our own time limit, the memory limit (the exit reason says so), or a crash. */
function killedKind(reason: string): RunErrorKind {
  return reason === 'timeout' ? 'timeout' : /memory/i.test(reason) ? 'memory' : 'crash';
}

/** Loads Pyodide in a fresh worker and resolves once it is ready; a failed load terminates the worker. */
async function startWorker(config: PythonSandboxConfig, onHost: (host: WorkerHost) => void = () => {}): Promise<LiveWorker> {
  const { pyodideModuleUrl, indexURL } = await locatePyodide(config.pyodideIndexURL);
  const workerUrl = new URL('./worker/python-worker.mjs', import.meta.url);
  // Browser: in the page's opaque-origin frame where the page gave this worker one (worker-host.ts).
  const inFrame = !isNode() && toolFrameInUse();
  const pyodideFiles = inFrame ? await pyodideBytes(indexURL) : undefined;
  const host = inFrame ? await createFrameWorkerHost(workerUrl) : await createWorkerHost(workerUrl, {
    maxHeapMb: config.workerHeapMb ?? 512,
    readPaths: isNode() ? await nodeReadPaths(workerUrl, indexURL) : undefined,
    maxFrameBytes: MAX_FRAME_BYTES,
  });
  onHost(host);
  const live: LiveWorker = { host };
  // The host keeps one listener of each kind; these forward to whichever phase (load, run) is current.
  host.onMessage((m) => live.listener?.(m));
  host.onExit((reason) => live.exitListener?.(reason));
  // The frame's opaque origin is not cross-origin isolated: no shared buffer reaches it (the worker
  // interrupts itself at its deadline either way).
  const interruptBuffer = inFrame ? undefined : sharedInterruptBuffer();
  if (interruptBuffer) live.interrupt = new Int32Array(interruptBuffer);
  try {
    await initWorker(live, { type: 'init', pyodideModuleUrl, indexURL, interruptBuffer, pyodideFiles }, config.loadTimeoutMs ?? 60_000);
  } catch (e) {
    await host.terminate();
    throw e;
  }
  live.baseRss = host.rssBytes?.();
  return live;
}

/** The files Pyodide loads, fetched once per worker (the service worker serves them from its cache). */
const PYODIDE_FILES = ['pyodide.mjs', 'pyodide.asm.mjs', 'pyodide.asm.wasm', 'python_stdlib.zip', 'pyodide-lock.json'];
let pyodideFiles: Promise<Record<string, Uint8Array>> | undefined;
function pyodideBytes(indexURL: string): Promise<Record<string, Uint8Array>> {
  pyodideFiles ??= Promise.all(PYODIDE_FILES.map(async (name) => {
    const res = await fetch(new URL(name, indexURL));
    if (!res.ok) throw new Error(`Pyodide's ${name} could not be fetched from ${indexURL} (HTTP ${res.status})`);
    return [name, new Uint8Array(await res.arrayBuffer())] as const;
  })).then(Object.fromEntries);
  pyodideFiles.catch(() => (pyodideFiles = undefined)); // a failed fetch is tried again at the next start
  return pyodideFiles;
}

/** Node: what the jailed Pyodide process may read: its own worker files and Pyodide's package folder. */
async function nodeReadPaths(workerUrl: URL, indexURL: string): Promise<string[]> {
  const { fileURLToPath } = await import(/* @vite-ignore */ 'node:url');
  const dir = /^file:/.test(indexURL) ? fileURLToPath(indexURL) : indexURL;
  return [fileURLToPath(new URL('./jail-port.mjs', workerUrl)), dir];
}

/**
 * A 4-byte buffer the worker can see, where SharedArrayBuffer exists and reaches it (cross-origin-isolated
 * pages); else none. Node's interpreter is another process: no shared memory, a timeout kills it.
 */
function sharedInterruptBuffer(): SharedArrayBuffer | undefined {
  const canShare = typeof SharedArrayBuffer !== 'undefined' && !isNode() && (globalThis as { crossOriginIsolated?: boolean }).crossOriginIsolated === true;
  return canShare ? new SharedArrayBuffer(4) : undefined;
}

/** Posts 'init' and waits for 'ready'; rejects on 'init-error', on the worker's exit, or after `timeoutMs`. */
function initWorker(live: LiveWorker, init: InitMessage, timeoutMs: number): Promise<void> {
  const { indexURL } = init;
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`Pyodide did not load within ${timeoutMs} ms from ${indexURL}`)), timeoutMs);
    live.listener = (m) => {
      if (m.type === 'ready') resolve();
      if (m.type === 'init-error') {
        reject(new Error(`Pyodide failed to load from ${indexURL}: ${m.message}. Check pyodideIndexURL serves pyodide.mjs and its assets.`));
      }
      if (m.type === 'ready' || m.type === 'init-error') clearTimeout(timer);
    };
    live.exitListener = (reason) => {
      clearTimeout(timer);
      reject(new Error(`Pyodide worker died while loading: ${reason}`));
    };
    live.host.post(init);
  });
}

/**
 * Posts run `id` and resolves when the worker reports it done or exits, or when the time limit is
 * past: then KeyboardInterrupt is raised (where an interrupt buffer exists) and, if the run has not
 * ended `killGraceMs` later (at once without a buffer), the outcome is killed: 'timeout'.
 */
function runOnWorker(live: LiveWorker, id: number, code: string, opts: RunOptions, limits: Limits, killGraceMs: number): Promise<Outcome> {
  return new Promise<Outcome>((resolve) => {
    const run: RunState = { stdout: emptyClip(), stderr: emptyClip() };
    let killTimer: ReturnType<typeof setTimeout> | undefined;
    const finish = (value: { done?: DoneMessage; killed?: string }) => {
      clearTimeout(deadline);
      clearTimeout(killTimer);
      live.listener = live.exitListener = undefined;
      resolve({ ...value, stdout: run.stdout, stderr: run.stderr });
    };
    const deadline = setTimeout(() => {
      // The worker interrupts itself at its deadline (KeyboardInterrupt); a shared buffer is a second
      // signal where one exists. A run that has not ended killGraceMs later is killed.
      if (live.interrupt) Atomics.store(live.interrupt, 0, 2);
      killTimer = setTimeout(() => finish({ killed: 'timeout' }), killGraceMs);
    }, limits.timeoutMs);
    live.listener = (m) => onRunMessage(m, id, run, finish);
    live.exitListener = (reason) => finish({ killed: reason });
    const memoryLimitBytes = limits.memoryMb * 1024 * 1024;
    // Past its wasm memory the process may hold JS copies (to_js, output): the whole process is capped too.
    // WebAssembly memory never shrinks: an earlier run under a larger limit may have left the process that big.
    live.largestLimit = Math.max(live.largestLimit ?? 0, memoryLimitBytes);
    if (live.baseRss !== undefined) live.host.setRssCeiling?.(live.baseRss + RSS_HEADROOM * live.largestLimit);
    const message: RunMessage = {
      type: 'run', id, code, files: opts.workspace?.snapshot() ?? [], timeoutMs: limits.timeoutMs, memoryLimitBytes,
      maxWorkspaceBytes: WORKSPACE_MAX_BYTES, maxWorkspaceFiles: WORKSPACE_MAX_FILES,
    };
    live.host.post(message);
  });
}

/** Follows the messages of run `id`: keeps its latest output, and on 'done' finishes the run. */
function onRunMessage(m: any, id: number, run: RunState, finish: (value: { done: DoneMessage }) => void): void {
  if (m.id !== id) return;
  if (m.type === 'output') ({ stdout: run.stdout, stderr: run.stderr } = m);
  if (m.type === 'done') {
    ({ stdout: run.stdout, stderr: run.stderr } = m);
    finish({ done: m });
  }
}

/** Where pyodide.mjs lives: node_modules/pyodide in Node (offline), `indexURL` or '/pyodide/' in the browser. */
async function locatePyodide(indexURL?: string): Promise<{ pyodideModuleUrl: string; indexURL: string }> {
  if (indexURL) {
    let base = indexURL.endsWith('/') ? indexURL : indexURL + '/';
    if (isNode() && !/^[a-z]+:\/\//i.test(base)) base = (await import(/* @vite-ignore */ 'node:url')).pathToFileURL(base).href.replace(/\/?$/, '/');
    return { pyodideModuleUrl: new URL('pyodide.mjs', isNode() ? base : new URL(base, globalThis.location?.href)).href, indexURL: base };
  }
  if (!isNode()) return locatePyodide('/pyodide/');
  const { createRequire } = await import(/* @vite-ignore */ 'node:module');
  const { pathToFileURL } = await import(/* @vite-ignore */ 'node:url');
  const path = await import(/* @vite-ignore */ 'node:path');
  const entry = createRequire(import.meta.url).resolve('pyodide/pyodide.mjs');
  return { pyodideModuleUrl: pathToFileURL(entry).href, indexURL: path.dirname(entry) + path.sep };
}
