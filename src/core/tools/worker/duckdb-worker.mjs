// DuckDB-wasm's Node worker (the package's duckdb-node-eh.worker.cjs) inside a jailed child process
// (src/core/tools/jail.ts), dressed as the Web Worker global scope it expects: `onmessage` in,
// `postMessage` out, over the jail's framed stdio (jail-port.mjs). The host's first message names the
// package's worker script; every later one is DuckDB's own.
//
// For: sql-duckdb.ts in Node. Not for: the browser (the package's browser worker runs as is).
// Example: host posts {script: '/abs/node_modules/@duckdb/duckdb-wasm/dist/duckdb-node-eh.worker.cjs'},
//          waits for {jailReady: true}, then speaks AsyncDuckDB's protocol.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { openJailPort } from './jail-port.mjs';

// DuckDB's Node runtime looks a table name up as a host path first (stat, glob) and takes an error for
// "no such file". The permission model answers ERR_ACCESS_DENIED instead: it becomes ENOENT here, so
// the lookup falls through to the registered workspace files. Nothing more is readable for it.
for (const name of ['statSync', 'lstatSync', 'readdirSync', 'openSync', 'accessSync', 'realpathSync']) {
  const original = fs[name];
  fs[name] = function denyAsMissing(...args) {
    try {
      return original.apply(this, args);
    } catch (e) {
      if (e?.code !== 'ERR_ACCESS_DENIED') throw e;
      throw Object.assign(new Error(`ENOENT: no such file or directory, '${args[0]}'`), { code: 'ENOENT', errno: -2, syscall: name, path: String(args[0]) });
    }
  };
}

const port = openJailPort();
globalThis.self = globalThis;
globalThis.postMessage = (data) => port.post(data);
let booted = false;
port.onMessage((message) => {
  if (!booted) {
    booted = true;
    createRequire(import.meta.url)(message.script);
    port.post({ jailReady: true });
    return;
  }
  globalThis.onmessage?.({ data: message });
});
