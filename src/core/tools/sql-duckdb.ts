// Starting DuckDB-wasm in a worker, the same way in Node and in the browser, so a query that never
// ends can be stopped by killing the worker.
//
// For: `startDuckDb()` -> an AsyncDuckDB (DuckDB compiled to WebAssembly, running in its own worker)
// whose `terminate()` kills that worker. Not for: running agents' SQL (sql.ts) or choosing settings.
//
// Where the files come from (all offline, no CDN):
// - Node: node_modules/@duckdb/duckdb-wasm/dist/duckdb-node-eh.worker.cjs and duckdb-eh.wasm. The
//   package's Node worker runs in a jailed child process (jail.ts: permission model, reads of its own
//   files and its packages only, no code generation, empty env, own network namespace where the OS
//   gives one); worker/duckdb-worker.mjs gives it the Web Worker global scope it expects (`onmessage`,
//   `postMessage`) over the jail's framed stdio, and its console goes nowhere (DuckDB logs every failed
//   query there). The host side gets a Web-Worker-shaped adapter, which is all AsyncDuckDB needs.
// - Browser: the bundler serves the package's duckdb-browser-eh.worker.js and duckdb-eh.wasm as
//   assets (sql-assets.ts, `?url` imports copied into the build); pass `urls` to serve them from elsewhere.
//
// Example:
//   const db = await startDuckDb();
//   const conn = await db.connect();
//   (await conn.query('SELECT 6 * 7 AS x')).toArray()[0].toJSON()  // {x: 42}
//   await db.terminate();

import type { AsyncDuckDB } from '@duckdb/duckdb-wasm';
import { isNode } from './worker-host.ts';

export interface DuckDbUrls {
  /** The package's browser worker script (duckdb-browser-eh.worker.js). */
  workerUrl: string;
  /** The matching WebAssembly module (duckdb-eh.wasm). */
  wasmUrl: string;
}

type DuckDbModule = typeof import('@duckdb/duckdb-wasm');

async function loadModule(): Promise<DuckDbModule> {
  if (isNode()) {
    // The package's Node build bundles a Web Worker polyfill that, loaded on any thread but the main one
    // (a `mappa train --threads` worker), takes itself for a polyfilled worker and crashes at import
    // (require(workerData.mod) with no mod). Its browser build has the same AsyncDuckDB without the
    // polyfill, and this file makes the worker itself (nodeWorker below), so Node workers load that one.
    const { isMainThread } = await import(/* @vite-ignore */ 'node:worker_threads');
    if (!isMainThread) {
      const { createRequire } = await import(/* @vite-ignore */ 'node:module');
      // That build reads the global Worker once at import (its own worker shim, unused here): a stand-in
      // for the duration of the import.
      const g = globalThis as { Worker?: unknown };
      const had = 'Worker' in g;
      if (!had) g.Worker = class {};
      try {
        return createRequire(import.meta.url)('@duckdb/duckdb-wasm/dist/duckdb-browser.cjs') as DuckDbModule;
      } finally {
        if (!had) delete g.Worker;
      }
    }
  }
  const m = (await import('@duckdb/duckdb-wasm')) as DuckDbModule & { default?: DuckDbModule };
  return m.AsyncDuckDB ? m : m.default!; // Node loads the CommonJS build
}

/**
 * The package's Node worker in a jailed child process (jail.ts, worker/duckdb-worker.mjs), dressed as a
 * Web Worker (the part AsyncDuckDB uses). It may read only its own files and the package's dist folder.
 */
async function nodeWorker(script: string, maxHeapMb: number): Promise<Worker> {
  const { startJail } = await import(/* @vite-ignore */ './jail.ts');
  const path = await import(/* @vite-ignore */ 'node:path');
  const { fileURLToPath } = await import(/* @vite-ignore */ 'node:url');
  const here = path.dirname(fileURLToPath(import.meta.url));
  const jail = await startJail({
    script: path.join(here, 'worker/duckdb-worker.mjs'),
    readPaths: [path.join(here, 'worker/jail-port.mjs'), path.dirname(script), ...await packageClosure(['apache-arrow'])],
    maxHeapMb,
    maxFrameBytes: 256 * 2 ** 20,
  });
  const messageListeners = new Set<(e: unknown) => void>();
  const errorListeners = new Set<(e: unknown) => void>();
  const ready = new Promise<void>((resolve, reject) => {
    jail.onMessage((data) => {
      if (data?.jailReady) return resolve();
      for (const fn of messageListeners) fn({ data });
    });
    jail.onExit((reason) => {
      reject(new Error(reason));
      for (const fn of errorListeners) fn(new Error(reason));
    });
  });
  jail.post({ script });
  await ready;
  const adapter = {
    addEventListener(type: string, fn: (e: unknown) => void) {
      (type === 'message' ? messageListeners : errorListeners).add(fn);
    },
    removeEventListener(type: string, fn: (e: unknown) => void) {
      (type === 'message' ? messageListeners : errorListeners).delete(fn);
    },
    postMessage(data: unknown) {
      jail.post(data);
    },
    terminate() {
      void jail.terminate();
    },
  };
  return adapter as unknown as Worker;
}

/** The folders of `names` and of every package they depend on (what the worker's require() reads). */
async function packageClosure(names: string[]): Promise<string[]> {
  const { createRequire } = await import(/* @vite-ignore */ 'node:module');
  const path = await import(/* @vite-ignore */ 'node:path');
  const fs = await import(/* @vite-ignore */ 'node:fs');
  const dirs = new Set<string>();
  const visit = (name: string, from: string) => {
    let entry: string;
    try {
      entry = createRequire(from).resolve(name);
    } catch {
      return; // an optional dependency that is not installed
    }
    let dir = path.dirname(entry);
    while (!fs.existsSync(path.join(dir, 'package.json')) && dir !== path.dirname(dir)) dir = path.dirname(dir);
    if (dirs.has(dir)) return;
    dirs.add(dir);
    const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
    for (const dep of Object.keys(pkg.dependencies ?? {})) visit(dep, path.join(dir, 'package.json'));
  };
  for (const name of names) visit(name, import.meta.url);
  return [...dirs];
}

async function nodeFiles(): Promise<{ script: string; wasm: string }> {
  const { createRequire } = await import(/* @vite-ignore */ 'node:module');
  const path = await import(/* @vite-ignore */ 'node:path');
  const dist = path.dirname(createRequire(import.meta.url).resolve('@duckdb/duckdb-wasm'));
  return { script: path.join(dist, 'duckdb-node-eh.worker.cjs'), wasm: path.join(dist, 'duckdb-eh.wasm') };
}

async function browserUrls(): Promise<DuckDbUrls> {
  return (await import('./sql-assets.ts')).duckDbAssetUrls;
}

/** Starts DuckDB-wasm in a fresh worker (about 1 s: the WebAssembly module is compiled each time). */
export async function startDuckDb(urls?: DuckDbUrls, options: { workerHeapMb?: number } = {}): Promise<AsyncDuckDB> {
  const duckdb = await loadModule();
  let worker: Worker;
  let wasm: string;
  if (isNode() && !urls) {
    const files = await nodeFiles();
    worker = await nodeWorker(files.script, options.workerHeapMb ?? 256);
    wasm = files.wasm;
  } else {
    const u = urls ?? (await browserUrls());
    worker = new Worker(u.workerUrl);
    wasm = u.wasmUrl;
  }
  const db = new duckdb.AsyncDuckDB(new duckdb.VoidLogger(), worker);
  try {
    await db.instantiate(wasm);
  } catch (e) {
    await db.terminate();
    throw new Error(`DuckDB-wasm failed to start from ${wasm}: ${(e as Error).message}`);
  }
  return db;
}
