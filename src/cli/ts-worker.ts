/** Worker threads that run this project's TypeScript modules (Node): the boot source they are started with. */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * The `eval` source of a worker thread that runs the TypeScript module at `moduleUrl` through tsx's
 * ESM loader (registered from tsx's exports map: require.resolve would give the CommonJS API).
 * Example: new Worker(tsWorkerBoot(import.meta.url), { eval: true, workerData })
 */
export function tsWorkerBoot(moduleUrl: string): string {
  const manifest = createRequire(import.meta.url).resolve('tsx/package.json');
  const entry = JSON.parse(readFileSync(manifest, 'utf8')).exports['./esm/api'].import.default as string;
  const api = pathToFileURL(path.join(path.dirname(manifest), entry)).href;
  return `import(${JSON.stringify(api)}).then((api) => { api.register(); return import(${JSON.stringify(moduleUrl)}); })`;
}
