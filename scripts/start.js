#!/usr/bin/env node
// `npm start`: builds the static site into dist/ when it is missing or older than its sources,
// then serves dist/ with `vite preview` on 127.0.0.1 and prints the URL to open.
// Env: PORT (default 4173; the next free one is used if taken).

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const distEntry = path.join(repoRoot, 'dist/index.html');
/** Inputs of the site build: a change to any makes dist/ stale. */
const SOURCES = ['src', 'index.html', 'public', 'models', 'docs/credit.md', 'docs/judges.md', 'vite.config.ts', 'package-lock.json'];

/** Newest modification time (ms) of a file or anything inside a folder; 0 if absent. */
function newestMtime(p) {
  const st = fs.statSync(p, { throwIfNoEntry: false });
  if (!st) return 0;
  if (!st.isDirectory()) return st.mtimeMs;
  let newest = st.mtimeMs;
  for (const name of fs.readdirSync(p)) newest = Math.max(newest, newestMtime(path.join(p, name)));
  return newest;
}

const builtAt = fs.statSync(distEntry, { throwIfNoEntry: false })?.mtimeMs ?? 0;
const newestSource = Math.max(...SOURCES.map((s) => newestMtime(path.join(repoRoot, s))));
if (builtAt <= newestSource) {
  console.log(builtAt ? 'dist/ is older than the sources: rebuilding…' : 'dist/ is missing: building…');
  const vite = path.join(repoRoot, 'node_modules/vite/bin/vite.js');
  // A production build whatever NODE_ENV the shell has (with NODE_ENV=development or test, vite builds
  // with import.meta.env.DEV true, which leaves out the service worker).
  const res = spawnSync(process.execPath, [vite, 'build'], { cwd: repoRoot, stdio: 'inherit', env: { ...process.env, NODE_ENV: 'production' } });
  if (res.status !== 0) {
    console.error(`vite build failed (exit ${res.status}); fix the error above, then run npm start again.`);
    process.exit(res.status ?? 1);
  }
} else {
  console.log('dist/ is up to date.');
}

const { preview } = await import('vite');
const server = await preview({
  root: repoRoot,
  preview: { host: '127.0.0.1', port: Number(process.env.PORT ?? 4173), strictPort: false, open: false },
});
const url = server.resolvedUrls?.local[0] ?? `http://127.0.0.1:${process.env.PORT ?? 4173}/`;
console.log(`\nmappa-sandbox is running: open ${url} in a browser with WebGPU (Chrome/Edge 113+).`);
console.log('Press Ctrl+C to stop.');
