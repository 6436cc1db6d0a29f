// The engine on WebGPU in headless Chromium (SwiftShader): the parity fixtures' logits within 1e-3
// of transformers and the same greedy continuation. Skips loudly without Debian's chromium.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { chromiumAvailable, ensureBuilt, fixturesDir, launchChromium, openPage, serveStatic, type StaticServer } from '../helpers/browser.ts';
import { warnIfSkipped } from '../helpers/webgpu.ts';
import type { HarnessResult, HarnessWindow } from './harness-types.ts';

const have = chromiumAvailable();
warnIfSkipped('browser parity suite (test/e2e/parity.test.ts)', have);

describe.skipIf(!have.ok)('engine parity on WebGPU in headless Chromium', () => {
  let server: StaticServer;
  let browser: Browser;
  let page: Page;
  beforeAll(async () => {
    server = await serveStatic(await ensureBuilt('harness'), { '/fixtures/': fixturesDir });
    browser = await launchChromium();
    page = await openPage(browser, `${server.url}harness.html`);
    await page.waitForFunction(() => (window as unknown as HarnessWindow).harnessReady === true);
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('llama and qwen2 logits match transformers within 1e-3; greedy identical; no leaks', async () => {
    const r: HarnessResult = await page.evaluate(() => (window as unknown as HarnessWindow).runHarness('parity'));
    if (!r.ok) throw new Error(`parity check failed in the browser: ${r.error}\n${r.stack ?? ''}`);
    expect(r.backend.name).toBe('webgpu');
    const res = r.result as Record<string, { maxAbsDiff: number; greedyEqual: boolean; leaked: number }>;
    console.log(`[e2e parity] ${JSON.stringify(res)}`);
    for (const name of ['llama', 'qwen2']) {
      expect(res[name].maxAbsDiff).toBeLessThan(1e-3);
      expect(res[name].greedyEqual).toBe(true);
      expect(res[name].leaked).toBe(0);
    }
  });
});
