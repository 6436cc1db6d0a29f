// The built site (dist/, as `npm start` serves it) in headless Chromium: the page picks the
// webgpu backend on the SwiftShader adapter and says so. Skips loudly without Debian's chromium.

import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import type { BackendInfo } from '../../src/core/engine/backend.ts';
import {
  chromiumAvailable, ensureBuilt, launchChromium, openPage, resultsDir, screenshot, serveStatic, type StaticServer,
} from '../helpers/browser.ts';
import { warnIfSkipped } from '../helpers/webgpu.ts';

const have = chromiumAvailable();
warnIfSkipped('browser e2e suite (test/e2e/page.test.ts)', have);

describe.skipIf(!have.ok)('built page in headless Chromium', () => {
  let server: StaticServer;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    const dist = await ensureBuilt('site');
    server = await serveStatic(dist);
    browser = await launchChromium();
    page = await openPage(browser, `${server.url}?backend=webgpu`);
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('shows the title', async () => {
    expect(await page.title()).toBe('mappa-sandbox');
    await expect(page.locator('h1').textContent()).resolves.toBe('mappa-sandbox');
  });

  it('reports backend webgpu on the SwiftShader adapter', async () => {
    await page.waitForFunction(() => {
      const m = (window as unknown as { __mappa?: { backend?: unknown; error?: string } }).__mappa;
      return Boolean(m?.backend || m?.error);
    }, undefined, { timeout: 60_000 });
    const state = await page.evaluate(
      () => (window as unknown as { __mappa: { backend?: BackendInfo; error?: string } }).__mappa,
    );
    expect(state.error).toBeUndefined();
    const info = state.backend!;
    expect(info.name).toBe('webgpu');
    expect(info.adapter?.vendor).toBe('google');
    expect(info.adapter?.architecture).toBe('swiftshader');
    expect(info.adapter?.features).not.toContain('shader-f16');
    // WEBGPU-ON-CPU.md measured 128 MiB storage bindings; Chromium 156 here reports 1 GiB. Kernels
    // must read the limit (backendLimits()) rather than assume either.
    expect(info.adapter?.limits.maxStorageBufferBindingSize).toBeGreaterThanOrEqual(128 * 2 ** 20);
    // The DOM says the same thing the hook does.
    await expect(page.getByTestId('backend-name').textContent()).resolves.toBe('webgpu');
    await expect(page.getByTestId('adapter').textContent()).resolves.toMatch(/google swiftshader/);
    const shot = await screenshot(page, 'page');
    console.log(`[e2e] ${JSON.stringify(info.adapter)}; screenshot: ${shot}`);
  });

  it('every lesson chart is an image labelled with its trend, with a table a keyboard opens (src/ui/chart-text.ts; its numbers: test/unit/ui/chart-text.test.ts)', async () => {
    await page.getByTestId('lesson-chart-6').waitFor({ timeout: 60_000 });
    const labels = await page.locator('[data-testid^="lesson-chart-"] svg[role="img"]').evaluateAll((els) => els.map((e) => e.getAttribute('aria-label')));
    expect(labels).toEqual([2, 4, 6].map((n) => `Team accuracy, ${n} agents: no data yet`));
    // Tab reaches the toggle (a <summary>), Enter opens the table, Escape closes it and leaves focus on the toggle.
    const toggle = page.getByTestId('lesson-chart-2-data').locator('summary');
    await toggle.focus();
    await page.keyboard.press('Enter');
    const table = page.getByRole('region', { name: 'data table: Team accuracy, 2 agents' }).locator('table');
    expect(await table.locator('caption').textContent()).toBe('Team accuracy, 2 agents: no data yet');
    expect(await table.locator('th[scope=col]').allTextContents()).toEqual(['iteration', 'process reward', 'outcome reward']);
    await page.keyboard.press('Escape');
    expect(await page.getByTestId('lesson-chart-2-data').evaluate((d) => (d as HTMLDetailsElement).open)).toBe(false);
    expect(await page.evaluate(() => document.activeElement?.tagName)).toBe('SUMMARY');
    // The chart's SVG export keeps its caption, not the toggle's words, and its legend's keys (dash and marker).
    const [file] = await Promise.all([page.waitForEvent('download'), page.getByTestId('btn-svg').first().click()]);
    const svg = readFileSync((await file.path())!, 'utf8');
    expect(svg).toContain('2 agents · held-out accuracy');
    expect(svg).not.toContain('table:');
    expect(svg).toContain('stroke-dasharray="6 3"');
  });

  it('the theory the page cites opens as a readable page, its derivation and its plot (offline: test/e2e/offline.test.ts)', async () => {
    const intro = page.getByTestId('intro');
    if (!(await intro.evaluate((d) => (d as HTMLDetailsElement).open))) await intro.locator('summary').click();
    const link = intro.locator('a[data-testid="doc-link"]', { hasText: 'docs/credit.md' }).first();
    expect(await link.getAttribute('href')).toBe('docs/credit.html');
    const [note] = await Promise.all([page.context().waitForEvent('page'), link.click()]);
    await note.setViewportSize({ width: 1366, height: 800 });
    await note.waitForLoadState('load');
    expect(new URL(note.url()).pathname).toBe('/docs/credit.html');
    await expect(note.locator('h1').textContent()).resolves.toMatch(/^Credit in a chain of agents/);
    await expect(note.locator('h2#the-prediction').textContent()).resolves.toBe('The prediction');
    expect(await note.locator('pre').filter({ hasText: 'E[R | step i right] - E[R | step i wrong] = lambda^(N-1)' }).count()).toBe(1);
    const plot = await note.locator('figure img').first().evaluate((img) => {
      const i = img as HTMLImageElement;
      return { alt: i.alt, width: i.naturalWidth, shown: i.getBoundingClientRect().width };
    });
    expect(plot.alt).toMatch(/^The luck floor/);
    expect(plot.width).toBe(420); // bench/results/luck-floor.svg decoded, at its own size
    expect(plot.shown).toBeGreaterThan(300);
    expect(await note.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(1366); // no sideways scrolling
    await note.screenshot({ path: `${resultsDir}/theory-page-first-screen.png` }); // what a reader meets at 1366x800
    await screenshot(note, 'theory-page'); // the whole note
    await note.close();
  });
});
