// Test helper: can this machine run the real WebGPU backend (Dawn in Node, SwiftShader Vulkan)?
// Suites use it to skip LOUDLY instead of failing when Debian's chromium is missing.
//
// Example:
//   const gpu = webgpuAvailable();
//   warnIfSkipped('WebGPU suite (test/webgpu/backend.test.ts)', gpu);
//   describe.skipIf(!gpu.ok)('webgpu', () => { ... });
//
// The check is synchronous (describe.skipIf needs the answer at collection time), so it runs
// a tiny Node child process that asks Dawn for an adapter through src/core/engine/webgpu-node.ts.

import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const INSTALL_CHROMIUM = "install Debian's chromium: apt-get update && apt-get install -y chromium";

let cached: { ok: boolean; why?: string } | null = null;

/** Whether Dawn can create a WebGPU adapter here; `why` explains a "no". Cached per process. */
export function webgpuAvailable(): { ok: boolean; why?: string } {
  if (cached) return cached;
  const script = `
    const { installNodeWebGPU } = await import(${JSON.stringify(path.join(repoRoot, 'src/core/engine/webgpu-node.ts'))});
    const r = await installNodeWebGPU();
    process.stdout.write(JSON.stringify({ ok: r.ok, why: r.why }));
    process.exit(0);`;
  const res = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: repoRoot,
    encoding: 'utf8',
    timeout: 60_000,
  });
  try {
    cached = JSON.parse(res.stdout.trim().split('\n').pop() ?? '') as { ok: boolean; why?: string };
  } catch {
    cached = { ok: false, why: `probe failed (exit ${res.status}): ${(res.stderr || res.stdout).slice(-500)}` };
  }
  return cached;
}

/** Prints a hard-to-miss warning when a suite is skipped. */
export function warnIfSkipped(suite: string, check: { ok: boolean; why?: string }, fix = INSTALL_CHROMIUM): void {
  if (check.ok) return;
  const bar = '!'.repeat(78);
  console.warn(`\n${bar}\nSKIPPED: ${suite} — ${fix}\n  reason: ${check.why ?? 'unknown'}\n${bar}\n`);
}
