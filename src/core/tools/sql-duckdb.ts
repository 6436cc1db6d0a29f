// Starting DuckDB-wasm in a worker, the same way in Node and in the browser, so a query that never
// ends can be stopped by killing the worker.
//
// For: `startDuckDb()` -> an AsyncDuckDB (DuckDB compiled to WebAssembly, running in its own worker)
// whose `terminate()` kills that worker. Not for: running agents' SQL (sql.ts) or choosing settings.
//
// Where the files come from (all offline, no CDN):
// - Node: node_modules/@duckdb/duckdb-wasm/dist/duckdb-node-eh.worker.cjs and duckdb-eh.wasm. The
//   package's Node worker expects a Web Worker global scope (`onmessage`, `postMessage`), so a tiny
//   bootstrap maps worker_threads' parentPort onto it, silences the worker's console (DuckDB logs every
//   failed query there) and gives the worker an empty env. The host side gets a Web-Worker-shaped
//   adapter, which is all AsyncDuckDB needs.
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

// Runs inside the Node worker thread, before the package's worker script.
const NODE_BOOTSTRAP = `
const { parentPort, workerData } = require('node:worker_threads');
globalThis.self = globalThis;
globalThis.postMessage = (data, transfer) => parentPort.postMessage(data, transfer);
for (const k of ['log', 'info', 'warn', 'error', 'debug', 'trace']) console[k] = () => {};
parentPort.on('message', (data) => globalThis.onmessage && globalThis.onmessage({ data }));
require(workerData.script);
`;

/** A worker_threads Worker dressed as a Web Worker (the part AsyncDuckDB uses). */
async function nodeWorker(script: string, maxHeapMb: number): Promise<Worker> {
  const { Worker: NodeWorker } = await import(/* @vite-ignore */ 'node:worker_threads');
  const w = new NodeWorker(NODE_BOOTSTRAP, { eval: true, workerData: { script }, env: {}, resourceLimits: { maxOldGenerationSizeMb: maxHeapMb } });
  const handlers = new Map<unknown, (x: unknown) => void>();
  const nodeEvent = (type: string) => (type === 'message' ? 'message' : 'error');
  const adapter = {
    addEventListener(type: string, fn: (e: unknown) => void) {
      const h = type === 'message' ? (data: unknown) => fn({ data }) : (err: unknown) => fn(err);
      handlers.set(fn, h);
      w.on(nodeEvent(type), h);
    },
    removeEventListener(type: string, fn: (e: unknown) => void) {
      const h = handlers.get(fn);
      if (h) w.off(nodeEvent(type), h);
    },
    postMessage(data: unknown, transfer?: Transferable[]) {
      w.postMessage(data, transfer as never);
    },
    terminate() {
      void w.terminate();
    },
  };
  return adapter as unknown as Worker;
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
