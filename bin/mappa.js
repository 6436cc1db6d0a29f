#!/usr/bin/env node
// The `mappa` command: runs the TypeScript CLI (src/cli/main.ts) through tsx's loader,
// so `npx mappa ...` works straight from a clone after `npm install`.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/main.ts');
const code = await main(process.argv.slice(2));
process.exitCode = code;
// Every command closes what it opened; should anything still hold the event loop (a worker thread, a
// port), the process must still end: a failed run that idles for minutes looks like a hung one.
// An unref'd timer fires only while something else keeps the process alive.
setTimeout(() => {
  if (process.env.MAPPA_DEBUG === '1') process.stderr.write('mappa: something still held the process open after the command ended; exiting\n');
  process.exit(code);
}, 3000).unref();
