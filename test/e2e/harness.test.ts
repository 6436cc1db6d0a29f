// The browser harness (test/e2e/harness.html, a test-only build) in headless Chromium: runs the
// 'matmul-vs-cpu' check on WebGPU (SwiftShader) and compares with tfjs cpu inside the page.
// Pattern for more browser checks: add test/e2e/checks/<name>.ts exporting `check`, then call
// openHarness().run('<name>') (test/helpers/browser.ts) in a test file. Fixtures are served at /fixtures/.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumAvailable, openHarness, type OpenHarness } from '../helpers/browser.ts';
import { warnIfSkipped } from '../helpers/webgpu.ts';
import type { HarnessWindow } from './harness-types.ts';

const have = chromiumAvailable();
warnIfSkipped('browser harness suite (test/e2e/harness.test.ts)', have);


describe.skipIf(!have.ok)('browser harness in headless Chromium', () => {
  let harness: OpenHarness;
  beforeAll(async () => {
    harness = await openHarness();
  });
  afterAll(async () => {
    await harness?.close();
  });

  it('lists its checks and serves fixtures', async () => {
    const { page } = harness;
    const names = await page.evaluate(() => (window as unknown as HarnessWindow).harnessChecks());
    expect(names).toContain('matmul-vs-cpu');
    const status = await page.evaluate(async () => (await fetch('/fixtures/parity/llama/config.json')).status);
    expect(status).toBe(200);
    const missing = await harness.run('no-such-check');
    expect(missing).toMatchObject({ ok: false, error: expect.stringContaining('matmul-vs-cpu') });
  });

  it('matmul 64x96x80 and softmax on WebGPU equal tfjs cpu within 1e-4', async () => {
    const r = await harness.run('matmul-vs-cpu');
    if (!r.ok) throw new Error(`harness check failed in the browser: ${r.error}\n${r.stack ?? ''}`);
    expect(r.backend.name).toBe('webgpu');
    expect(r.backend.adapter?.architecture).toBe('swiftshader');
    const res = r.result as { matmulMaxAbsDiff: number; softmaxMaxAbsDiff: number; leakedTensors: number };
    expect(res.matmulMaxAbsDiff).toBeLessThan(1e-4);
    expect(res.softmaxMaxAbsDiff).toBeLessThan(1e-4);
    expect(res.leakedTensors).toBe(0);
    console.log(`[harness] matmul-vs-cpu on webgpu: ${JSON.stringify(res)} in ${r.ms.toFixed(0)} ms`);
  });

  it('the wasm backend loads its bundled .wasm assets (no CDN) and agrees with cpu', async () => {
    const r = await harness.run('matmul-vs-cpu', { backend: 'wasm' });
    if (!r.ok) throw new Error(`harness check failed in the browser: ${r.error}\n${r.stack ?? ''}`);
    expect(r.backend.name).toBe('wasm');
    expect(r.backend.wasm?.simd).toBe(true);
    const res = r.result as { matmulMaxAbsDiff: number; softmaxMaxAbsDiff: number };
    expect(res.matmulMaxAbsDiff).toBeLessThan(1e-4);
    expect(res.softmaxMaxAbsDiff).toBeLessThan(1e-4);
    console.log(`[harness] wasm ${JSON.stringify(r.backend.wasm)}: ${JSON.stringify(res)}`);
  });
});
