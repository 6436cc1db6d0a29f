// The built site behind static hosts other than `npm start`: a single-page-app fallback that answers index.html
// (status 200) for missing files, and a plain host with no isolation headers (the service worker isolates the page).
// Each becomes ready with no page error. In `npm run test:slow` (vite.config.ts); `npm start` itself: start.test.ts.
// Skips loudly without chromium.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { chromiumAvailable, ensureBuilt, launchChromium, serveStatic } from '../helpers/browser.ts';
import { open, waitFor } from '../helpers/page-state.ts';
import { warnIfSkipped } from '../helpers/webgpu.ts';

const have = chromiumAvailable();
warnIfSkipped('other static hosts e2e (test/e2e/hosts.test.ts)', have);

describe.skipIf(!have.ok)('the same build behind other static hosts', () => {
  let browser: Browser;
  beforeAll(async () => {
    await ensureBuilt('site');
    browser = await launchChromium();
  }, 900_000);
  afterAll(async () => browser?.close());

  for (const host of [
    { name: 'a single-page-app fallback (index.html, 200, for missing files)', opts: { spaFallback: true } },
    { name: 'plain, with no isolation headers', opts: {} },
  ]) {
    it(`becomes ready with no page error behind ${host.name}`, async () => {
      const server = await serveStatic(await ensureBuilt('site'), {}, host.opts);
      try {
        const { page, problems } = await open(browser, server.url);
        await waitFor(page, (s) => s.state === 'ready', 360_000, 'ready');
        expect(await page.getByTestId('config-error').count()).toBe(0);
        expect(problems).toEqual([]);
        await page.context().close();
      } finally {
        await server.close();
      }
    }, 450_000);
  }
});
