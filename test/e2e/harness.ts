// Test-only browser entry (harness.html, built by vite.harness.config.ts, never shipped):
// runs registered checks (checks/*.ts) on a chosen backend in real Chromium and returns JSON,
// so Node tests can exercise src/core on browser WebGPU.
//
// Example (from a playwright test):
//   const r = await page.evaluate(() => window.runHarness('matmul-vs-cpu'));
//   // r = { ok: true, name, backend: {name: 'webgpu', adapter}, ms, result: {...} }

import { initBackend } from '../../src/core/engine/backend.ts';
import type { HarnessCheck, HarnessContext, HarnessOptions, HarnessResult, HarnessWindow } from './harness-types.ts';

const modules = import.meta.glob<{ check?: HarnessCheck }>('./checks/*.ts', { eager: true });
const checks = new Map<string, HarnessCheck>();
for (const [file, mod] of Object.entries(modules)) {
  if (!mod.check) continue;
  if (checks.has(mod.check.name)) throw new Error(`harness: check name '${mod.check.name}' used twice (${file})`);
  checks.set(mod.check.name, mod.check);
}

/** Fixtures are served next to the harness at /fixtures/ (see test/helpers/browser.ts). */
async function fetchFixture(rel: string): Promise<Response> {
  const url = new URL(`/fixtures/${rel.replace(/^\/+/, '')}`, location.href);
  const res = await fetch(url);
  if (!res.ok) throw new Error(`fixture ${rel}: HTTP ${res.status} from ${url}`);
  return res;
}

async function runHarness(name: string, opts: HarnessOptions = {}): Promise<HarnessResult> {
  const check = checks.get(name);
  if (!check) return { ok: false, name, error: `no check '${name}'; have: ${[...checks.keys()].join(', ')}` };
  let backend;
  try {
    backend = await initBackend({ force: opts.backend ?? 'webgpu' });
    const ctx: HarnessContext = {
      backend,
      fetchBytes: async (rel) => new Uint8Array(await (await fetchFixture(rel)).arrayBuffer()),
      fetchJson: async (rel) => (await fetchFixture(rel)).json(),
    };
    const t0 = performance.now();
    const result = await check.run(ctx);
    return { ok: true, name, backend, ms: performance.now() - t0, result };
  } catch (err) {
    const e = err as Error;
    return { ok: false, name, error: e.message ?? String(err), stack: e.stack, backend };
  }
}

const w = window as unknown as HarnessWindow;
w.runHarness = runHarness;
w.harnessChecks = () => [...checks.keys()];
w.harnessReady = true;
document.getElementById('log')!.textContent = `checks: ${[...checks.keys()].join(', ')}`;
