// Browser-only: DuckDB-wasm's worker script and WebAssembly module as vite assets, so the built site
// carries them in dist/assets and the SQL tool works offline (no CDN). sql-duckdb.ts imports this
// only in the browser; Node reads the same package's Node files from node_modules instead.
//
// Example: new Worker(duckDbAssetUrls.workerUrl); db.instantiate(duckDbAssetUrls.wasmUrl)

/// <reference types="vite/client" />
import workerUrl from '@duckdb/duckdb-wasm/dist/duckdb-browser-eh.worker.js?url';
import wasmUrl from '@duckdb/duckdb-wasm/dist/duckdb-eh.wasm?url';

export const duckDbAssetUrls = { workerUrl, wasmUrl };
