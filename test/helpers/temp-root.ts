// Vitest's global setup: every test run gets one temporary folder of its own, removed when the run ends.
// Tests make their folders with mkdtemp under os.tmpdir() (run folders, person files, taught judges, a
// browser's profile); TMPDIR points here before any test file's process starts, and the processes they
// spawn (the CLI, chromium) inherit it, so a run leaves nothing behind in the system's /tmp.
// Example: `npm test` -> /tmp/mappa-tests-a1B2c3/mappa-train-XyZ12/... while it runs, nothing after it.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export default function setup(): () => void {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'mappa-tests-'));
  process.env.TMPDIR = root;
  return () => fs.rmSync(root, { recursive: true, force: true });
}
