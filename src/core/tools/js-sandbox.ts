// JavaScript sandbox: agent code runs in QuickJS (WebAssembly) off the caller's thread: in Node a
// jailed child process (jail.ts: permission model, no code generation from strings, empty env, no
// network namespace where the OS gives one), in the browser a Web Worker of the page's opaque-origin
// frame (src/platform/browser/tool-frame.ts) where the page gave one, else a same-origin module worker
// (a page with no frame: the harness pages). The run itself is
// worker/quickjs-worker.mjs; this file starts that worker, sends it each run and enforces its limits.
//
// For: plain ES2023 snippets that compute and print. Not for: modules, npm packages, timers, network,
// DOM. The guest sees only the QuickJS built-ins plus what the worker injects:
//   console.log/info/warn/error          captured into stdout / stderr (clipped inside the guest)
//   readFile(path) -> string, writeFile(path, text), listFiles() -> string[]   bound to the Workspace
// Limits: QuickJS's own memory limit and interrupt handler inside the worker; on top of them, from
// here, a deadline (1.5 x the time limit + 250 ms) and in Node a resident-memory ceiling (its size
// once loaded + 1.25 x the memory limit), past which the worker is killed; the next run starts a new
// one (~0.2 s in Node). A fresh QuickJS runtime is made per run, so no guest state survives between
// runs except workspace files.
//
// Example: await createJsSandbox().run('console.log([1,2,3].map(x => x * 2).join(","))')
//   -> {ok: true, stdout: '2,4,6\n', stderr: '', durationMs: 3}

import {
  DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT_MS, clipParts, describeError, serialSandbox, type Clip, type RunErrorKind, type RunOptions, type RunResult, type Sandbox,
} from './sandbox.ts';
import { browserWorkerHost, createWorkerHost, frameWorkerFromSource, isNode, toolFrameInUse, type WorkerHost } from './worker-host.ts';
import { WORKSPACE_MAX_BYTES, WORKSPACE_MAX_FILES, WorkspaceFull } from './workspace.ts';

interface DoneMessage {
  type: 'done';
  id: number;
  stdout: Clip;
  stderr: Clip;
  error?: { kind: RunErrorKind; message: string };
  written: { path: string; bytes: Uint8Array }[];
  moduleBroken: boolean;
}

interface Live {
  host: WorkerHost;
  baseRss?: number;
  largestLimit?: number; // the largest memory limit (bytes) a run on this worker has had
  listener?: (m: any) => void;
  exitListener?: (reason: string) => void;
}

const KILL_FACTOR = 1.5;
const KILL_SLACK_MS = 250;
const RSS_HEADROOM = 1.25;
const LOAD_TIMEOUT_MS = 60_000;

export function createJsSandbox(): Sandbox {
  const runner = new QuickJsRunner();
  return serialSandbox((code, opts) => runner.runNow(code, opts), () => runner.discard());
}

/** The QuickJS worker, started on first use and replaced after a kill or a broken module. */
class QuickJsRunner {
  private worker: Promise<Live> | undefined;
  private nextId = 1;

  async discard(): Promise<void> {
    const old = this.worker;
    this.worker = undefined;
    if (old) await (await old.catch(() => undefined))?.host.terminate();
  }

  async runNow(code: string, opts: RunOptions): Promise<RunResult> {
    const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const memoryMb = opts.memoryMb ?? DEFAULT_MEMORY_MB;
    const started = Date.now();
    const result = (kind: RunErrorKind | undefined, message: string, stdout: string, stderr: string): RunResult => ({
      ok: !kind, stdout, stderr, error: kind && { kind, message: describeError(kind, message.split('\n')[0], { timeoutMs, memoryMb }) },
      durationMs: Date.now() - started,
    });
    let live: Live;
    try {
      this.worker ??= startWorker();
      live = await this.worker;
    } catch (e) {
      this.worker = undefined;
      return result('crash', (e as Error).message, '', '');
    }
    const outcome = await runOn(live, this.nextId++, code, opts, timeoutMs, memoryMb);
    if (!outcome.done) {
      await this.discard();
      const kind: RunErrorKind = outcome.killed === 'timeout' ? 'timeout' : /memory/i.test(outcome.killed ?? '') ? 'memory' : 'crash';
      return result(kind, outcome.killed ?? 'killed', '', '');
    }
    const done = outcome.done;
    if (done.moduleBroken) await this.discard();
    let error = done.error;
    if (opts.workspace && done.written.length > 0) {
      try {
        opts.workspace.applyChanges(done.written, [], opts.owner ?? 'unknown');
      } catch (e) {
        if (!(e instanceof WorkspaceFull)) throw e;
        error ??= { kind: 'forbidden', message: e.message };
      }
    }
    const text = (c: Clip) => clipParts(c.head, c.tail, c.total);
    return result(error?.kind, error?.message ?? '', text(done.stdout), text(done.stderr));
  }
}

/** Posts run `id` and waits for its 'done', the worker's death, or the host's deadline (then 'timeout'). */
function runOn(live: Live, id: number, code: string, opts: RunOptions, timeoutMs: number, memoryMb: number): Promise<{ done?: DoneMessage; killed?: string }> {
  return new Promise((resolve) => {
    const finish = (value: { done?: DoneMessage; killed?: string }) => {
      clearTimeout(deadline);
      live.listener = live.exitListener = undefined;
      resolve(value);
    };
    const deadline = setTimeout(() => finish({ killed: 'timeout' }), timeoutMs * KILL_FACTOR + KILL_SLACK_MS);
    live.listener = (m) => {
      if (m?.type === 'done' && m.id === id) finish({ done: m });
    };
    live.exitListener = (reason) => finish({ killed: reason });
    const memoryBytes = memoryMb * 2 ** 20;
    // WebAssembly memory never shrinks: an earlier run under a larger limit may have left the process that big.
    live.largestLimit = Math.max(live.largestLimit ?? 0, memoryBytes);
    if (live.baseRss !== undefined) live.host.setRssCeiling?.(live.baseRss + RSS_HEADROOM * live.largestLimit);
    live.host.post({
      type: 'run', id, code, files: opts.workspace?.snapshot() ?? [], timeoutMs, memoryBytes,
      maxWorkspaceBytes: WORKSPACE_MAX_BYTES, maxWorkspaceFiles: WORKSPACE_MAX_FILES,
    });
  });
}

/** A fresh worker with QuickJS compiled; rejects if it dies or takes over a minute. */
async function startWorker(): Promise<Live> {
  const url = new URL('./worker/quickjs-worker.mjs', import.meta.url);
  const inFrame = !isNode() && toolFrameInUse();
  let wasmBinary: ArrayBuffer | undefined;
  let host: WorkerHost;
  if (isNode()) {
    host = await createWorkerHost(url, { readPaths: await nodeReadPaths(url), maxHeapMb: 256, maxFrameBytes: WORKSPACE_MAX_BYTES + 4 * 2 ** 20 });
  } else if (inFrame) {
    // The frame's worker fetches nothing: its script is one bundle (vite.config.ts) and its wasm comes as bytes.
    const frameWorker = await import('virtual:quickjs-frame-worker');
    wasmBinary = await quickjsWasm(frameWorker.wasmUrl);
    host = frameWorkerFromSource(frameWorker.source);
  } else {
    host = browserWorker();
  }
  const live: Live = { host };
  host.onMessage((m) => live.listener?.(m));
  host.onExit((reason) => live.exitListener?.(reason));
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`QuickJS did not start within ${LOAD_TIMEOUT_MS} ms`)), LOAD_TIMEOUT_MS);
      live.exitListener = (reason) => {
        clearTimeout(timer);
        reject(new Error(`QuickJS worker died while starting: ${reason}`));
      };
      live.listener = (m) => {
        if (m?.type === 'init-error') {
          clearTimeout(timer);
          reject(new Error(`QuickJS could not be loaded: ${m.message}`));
        } else if (m?.type === 'ready') {
          clearTimeout(timer);
          resolve();
        }
      };
      host.post({ type: 'init', wasmBinary }); // posted as a copy: the cached bytes serve the next start too
    });
  } catch (e) {
    await host.terminate();
    throw e;
  }
  live.listener = live.exitListener = undefined;
  live.baseRss = host.rssBytes?.();
  return live;
}

/** QuickJS's wasm, fetched once per page (the service worker serves it from its cache); a failed fetch is tried again. */
let wasmBytes: Promise<ArrayBuffer> | undefined;
function quickjsWasm(url: string): Promise<ArrayBuffer> {
  wasmBytes ??= fetch(url).then(async (res) => {
    if (!res.ok) throw new Error(`QuickJS's wasm could not be fetched from ${url} (HTTP ${res.status})`);
    return res.arrayBuffer();
  });
  wasmBytes.catch(() => (wasmBytes = undefined));
  return wasmBytes;
}

/** The browser's same-origin module worker (written out so the bundler builds quickjs-worker.mjs and its import). */
function browserWorker(): WorkerHost {
  return browserWorkerHost(new Worker(new URL('./worker/quickjs-worker.mjs', import.meta.url), { type: 'module' }));
}

/** Node: what the jailed QuickJS process may read: its worker files and the quickjs-emscripten packages. */
async function nodeReadPaths(workerUrl: URL): Promise<string[]> {
  const { fileURLToPath } = await import(/* @vite-ignore */ 'node:url');
  const { createRequire } = await import(/* @vite-ignore */ 'node:module');
  const path = await import(/* @vite-ignore */ 'node:path');
  const entry = createRequire(import.meta.url).resolve('quickjs-emscripten');
  const modules = entry.slice(0, entry.lastIndexOf(`${path.sep}node_modules${path.sep}`) + '/node_modules'.length);
  // quickjs-emscripten imports every variant's (small) entry at load; only release-sync's wasm is read.
  const packages = ['quickjs-emscripten', 'quickjs-emscripten-core', '@jitl'];
  return [fileURLToPath(new URL('./jail-port.mjs', workerUrl)), ...packages.map((p) => path.join(modules, p))];
}
