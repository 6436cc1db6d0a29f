#!/usr/bin/env node
// The `mappa` command: runs the TypeScript CLI (src/cli/main.ts) through tsx's loader,
// so `npx mappa ...` works straight from a clone after `npm install`.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/main.ts');
process.exitCode = await main(process.argv.slice(2));
