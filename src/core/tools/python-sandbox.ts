// Python sandbox: agent code runs in Pyodide (CPython compiled to WebAssembly, stdlib only) inside a
// worker, so a run that will not stop can be killed without taking the host down.
//
// For: short analysis snippets (json, csv, statistics, re, math...) with the Workspace as the current
// directory. Not for: third-party packages, network, threads, or long jobs.
//
// Lifecycle: the worker starts on the first run (Pyodide load, ~2-4 s, not counted against the time
// limit) and is reused. At the time limit the host raises KeyboardInterrupt through a shared interrupt
// buffer (Node; browsers only on cross-origin-isolated pages, where SharedArrayBuffer exists); if the
// run has not ended 500 ms later (C code that never checks signals, `except BaseException: pass` in
// the loop) the worker is terminated and the next run loads a fresh one. Runs are serialised.
//
// Node vs browser: in Node the worker is a worker_thread in the host process with an empty env and
// a V8 heap limit, and it stubs out fs/net/child_process itself (see worker/python-worker.mjs); in the
// browser it is a module Web Worker with no host file system, whose fetch/XHR/WebSocket are stubbed.
//
// What is NOT airtight (documented on purpose):
// - The Python-level audit hook and import blocks can probably be bypassed by someone who knows
//   CPython internals (e.g. reaching a Pyodide JS proxy through object.__subclasses__() and function
//   __globals__). What is behind them is then the hardened worker: no NODEFS, no code generation, Node
//   network/fs/child_process exports stubbed. A leaked proxy can still call Pyodide's own API object
//   (in-memory FS, interpreter internals), and emscripten keeps private references to `ws` and
//   child_process inside its closure that only the stubs in step 4 of the worker neutralise.
// - Module-level state (e.g. monkeypatching `math`) persists between runs until the worker is
//   recycled; each run gets a fresh global namespace and an emptied /workspace, nothing more.
// - The memory limit caps WebAssembly memory growth; WebAssembly memory never shrinks, so a run that
//   reached the limit leaves the worker at that size (the next run still works within it).
//
// Example:
//   const py = createPythonSandbox();
//   await py.run('import statistics; print(statistics.mean([1, 2, 3]))')  -> {ok: true, stdout: '2\n', ...}

import { DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT_MS, clipParts, describeError, serialSandbox, type RunErrorKind, type RunOptions, type RunResult, type Sandbox } from './sandbox.ts';
import { createWorkerHost, isNode, type WorkerHost } from './worker-host.ts';

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

interface Clip {
  head: string;
  tail: string;
  total: number;
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

interface LiveWorker {
  host: WorkerHost;
  interrupt?: Int32Array; // shared with the worker: writing 2 raises KeyboardInterrupt (SIGINT)
  listener?: (message: any) => void;
  exitListener?: (reason: string) => void;
}

const emptyClip = (): Clip => ({ head: '', tail: '', total: 0 });
const clipText = (c: Clip): string => clipParts(c.head, c.tail, c.total);

export function createPythonSandbox(config: PythonSandboxConfig = {}): Sandbox {
  const killGraceMs = config.killGraceMs ?? 500;
  let worker: Promise<LiveWorker> | undefined;
  let nextId = 1;

  async function startWorker(): Promise<LiveWorker> {
    const { pyodideModuleUrl, indexURL } = await locatePyodide(config.pyodideIndexURL);
    const host = await createWorkerHost(new URL('./worker/python-worker.mjs', import.meta.url), { maxHeapMb: config.workerHeapMb ?? 512 });
    const live: LiveWorker = { host };
    host.onMessage((m) => live.listener?.(m));
    host.onExit((reason) => live.exitListener?.(reason));
    const canShare = typeof SharedArrayBuffer !== 'undefined' && (isNode() || (globalThis as { crossOriginIsolated?: boolean }).crossOriginIsolated === true);
    const interruptBuffer = canShare ? new SharedArrayBuffer(4) : undefined;
    if (interruptBuffer) live.interrupt = new Int32Array(interruptBuffer);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`Pyodide did not load within ${config.loadTimeoutMs ?? 60_000} ms from ${indexURL}`)), config.loadTimeoutMs ?? 60_000);
      live.listener = (m) => {
        if (m.type === 'ready') resolve();
        if (m.type === 'init-error') reject(new Error(`Pyodide failed to load from ${indexURL}: ${m.message}. Check pyodideIndexURL serves pyodide.mjs and its assets.`));
        if (m.type === 'ready' || m.type === 'init-error') clearTimeout(timer);
      };
      live.exitListener = (reason) => {
        clearTimeout(timer);
        reject(new Error(`Pyodide worker died while loading: ${reason}`));
      };
      host.post({ type: 'init', pyodideModuleUrl, indexURL, interruptBuffer });
    }).catch(async (e) => {
      await host.terminate();
      throw e;
    });
    return live;
  }

  async function discardWorker(): Promise<void> {
    const old = worker;
    worker = undefined;
    if (old) await (await old.catch(() => undefined))?.host.terminate();
  }

  async function runNow(code: string, opts: RunOptions): Promise<RunResult> {
    const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const memoryMb = opts.memoryMb ?? DEFAULT_MEMORY_MB;
    worker ??= startWorker();
    let live: LiveWorker;
    try {
      live = await worker;
    } catch (e) {
      worker = undefined; // try a fresh load next time
      const message = (e as Error).message;
      return { ok: false, stdout: '', stderr: '', error: { kind: 'crash', message: describeError('crash', message) }, durationMs: 0 };
    }
    const id = nextId++;
    if (live.interrupt) Atomics.store(live.interrupt, 0, 0);
    const started = Date.now();
    const outcome = await new Promise<{ done?: DoneMessage; killed?: 'timeout' | string; stdout: Clip; stderr: Clip }>((resolve) => {
      let stdout = emptyClip();
      let stderr = emptyClip();
      let interruptSent = false;
      const finish = (value: { done?: DoneMessage; killed?: string }) => {
        clearTimeout(deadline);
        clearTimeout(killTimer);
        live.listener = live.exitListener = undefined;
        resolve({ ...value, stdout, stderr });
      };
      let killTimer: ReturnType<typeof setTimeout> | undefined;
      const deadline = setTimeout(() => {
        if (live.interrupt) {
          interruptSent = true;
          Atomics.store(live.interrupt, 0, 2);
        }
        killTimer = setTimeout(() => finish({ killed: 'timeout' }), live.interrupt ? killGraceMs : 0);
      }, timeoutMs);
      live.listener = (m) => {
        if (m.id !== id) return;
        if (m.type === 'output') ({ stdout, stderr } = m);
        if (m.type === 'done') {
          ({ stdout, stderr } = m);
          // A KeyboardInterrupt that we did not send is the code's own; report it as an exception.
          if (m.error?.kind === 'timeout' && !interruptSent) m.error = { kind: 'exception', message: 'KeyboardInterrupt' };
          finish({ done: m });
        }
      };
      live.exitListener = (reason) => finish({ killed: reason });
      live.host.post({ type: 'run', id, code, files: opts.workspace?.snapshot() ?? [], memoryLimitBytes: memoryMb * 1024 * 1024 });
    });
    const durationMs = Date.now() - started;

    let error: { kind: RunErrorKind; message: string } | undefined;
    if (outcome.killed) {
      await discardWorker(); // the next run pays the reload
      const kind: RunErrorKind = outcome.killed === 'timeout' ? 'timeout' : /memory/i.test(outcome.killed) ? 'memory' : 'crash';
      error = { kind, message: outcome.killed };
    } else if (outcome.done) {
      const done = outcome.done;
      if (done.error?.fatal) await discardWorker();
      if (done.error) error = { kind: done.error.kind, message: done.error.message };
      if (opts.workspace && !done.error?.fatal) opts.workspace.applyChanges(done.changed, done.deleted, opts.owner ?? 'unknown');
    }
    if (error) error = { kind: error.kind, message: describeError(error.kind, error.message, { timeoutMs, memoryMb }) };
    return { ok: !error, stdout: clipText(outcome.stdout), stderr: clipText(outcome.stderr), error, durationMs };
  }

  return serialSandbox(runNow, discardWorker);
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
