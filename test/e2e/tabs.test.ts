// One writer per run in the browser, as a user meets it: the README's `npm start`, two tabs of one
// browser on the same run (a 2-agent relay from the link, a few seconds an iteration). The first
// trains; the second opens the run read-only and says so; "Take over" moves the run to the second tab
// (the first pauses at a checkpoint and turns read-only); the stored metrics hold each iteration
// exactly once, in order, and the checkpoint never moves back. Then the link's mistakes: a broken
// ?config= and an unknown ?backend= are named in a banner, and the broken link stays in the address bar.
// Skips loudly without chromium.

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { chromiumAvailable, ensureBuilt, launchChromium, npmStart, repoRoot, screenshot, type StartedSite } from '../helpers/browser.ts';
import { readState, waitFor } from '../helpers/page-state.ts';
import { warnIfSkipped } from '../helpers/webgpu.ts';

const have = chromiumAvailable();
warnIfSkipped('two-tabs e2e suite (test/e2e/tabs.test.ts)', have);

/** The stored records and checkpoint of the run in IndexedDB, read from a page of the site. */
function stored(page: Page, runId: string): Promise<{ iterations: number[]; checkpoint: number | null; writer: number | null }> {
  return page.evaluate((id) => new Promise((resolve, reject) => {
    const req = indexedDB.open('mappa-sandbox');
    req.onerror = () => reject(req.error);
    req.onsuccess = () => {
      const db = req.result;
      const t = db.transaction(['metrics', 'runs'], 'readonly');
      const m = t.objectStore('metrics').getAll(IDBKeyRange.bound([id], [id, []]));
      const r = t.objectStore('runs').get(id);
      t.oncomplete = () => {
        const records = m.result as { iteration: number; perAgent?: unknown }[];
        const run = r.result as { iteration?: number; writer?: number } | undefined;
        resolve({ iterations: records.filter((x) => x.perAgent).map((x) => x.iteration), checkpoint: run?.iteration ?? null, writer: run?.writer ?? null });
      };
    };
  }), runId);
}

describe.skipIf(!have.ok)('two tabs on one run', () => {
  let site: StartedSite;
  let browser: Browser;
  let context: BrowserContext;
  let url: string;

  beforeAll(async () => {
    await ensureBuilt('site');
    site = await npmStart();
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1366, height: 800 } });
    const relay = JSON.parse(readFileSync(path.join(repoRoot, 'configs/relay-2.json'), 'utf8'));
    const config = { ...relay, iterations: 40, promptsPerIteration: 4, evalEvery: 40, evalTasks: 8, checkpointEvery: 1 };
    url = `${site.url}?baseline=0&config=${encodeURIComponent(JSON.stringify(config))}`;
  }, 900_000);
  afterAll(async () => {
    await browser?.close();
    await site?.close();
  });

  it('the second tab is read-only and says so; Take over moves the run; each iteration is stored once, in order', async () => {
    const a = await context.newPage();
    await a.goto(url);
    await waitFor(a, (s) => s.state === 'ready', 540_000, 'tab A ready');
    await a.getByTestId('btn-start').click();
    await waitFor(a, (s) => s.metrics >= 2, 540_000, 'tab A trains');

    const b = await context.newPage();
    await b.goto(url);
    await waitFor(b, (s) => s.state === 'readonly', 540_000, 'tab B read-only');
    await expect.poll(() => b.getByTestId('read-only').textContent()).toMatch(/this run is training in another tab; this tab shows it read-only/);
    expect(await b.getByTestId('btn-start').isDisabled()).toBe(true);
    await screenshot(b, 'tabs-read-only');
    const runId = await b.evaluate(() => (window as unknown as { __mappa: { run: { runId: string } } }).__mappa.run.runId);
    expect((await readState(a)).state).toBe('running'); // the first tab goes on

    const before = await stored(b, runId);
    // The iteration B opens the run at (its 'run' event), heard as it happens: B trains on at once.
    await b.evaluate(() => {
      const m = (window as unknown as { __mappa: { opened?: number | null; client: { on(f: (e: { kind: string; iteration?: number }) => void): void } } }).__mappa;
      m.opened = null;
      m.client.on((e) => {
        if (e.kind === 'run' && m.opened === null) m.opened = e.iteration ?? null;
      });
    });
    await b.getByTestId('btn-take-over').click();
    const letGo = await waitFor(a, (s) => s.state === 'readonly', 180_000, 'tab A let go'); // A stopped at a checkpoint
    // "Take over" trains the run here (its tooltip says so): B goes on at once, from A's last checkpoint.
    await waitFor(b, (s) => s.state === 'running' || s.iteration > letGo.iteration, 180_000, 'tab B took over and trains');
    await expect.poll(() => a.getByTestId('read-only').textContent()).toMatch(/another tab took this run over/);
    const openedAt = await b.evaluate(() => (window as unknown as { __mappa: { opened: number | null } }).__mappa.opened);
    expect(letGo.iteration).toBeGreaterThanOrEqual(before.checkpoint ?? 0);
    expect(openedAt).toBe(letGo.iteration); // B resumed at A's last checkpoint
    const handed = await stored(b, runId);
    expect(handed.checkpoint!).toBeGreaterThanOrEqual(letGo.iteration);

    await waitFor(b, (s) => s.iteration >= letGo.iteration + 2, 360_000, 'tab B trains');
    await b.getByTestId('btn-pause').click();
    await waitFor(b, (s) => s.state === 'ready', 180_000, 'tab B paused');
    const after = await stored(b, runId);
    expect(after.iterations).toEqual(Array.from({ length: after.iterations.length }, (_, i) => i + 1)); // once each, in order
    expect(after.checkpoint!).toBeGreaterThanOrEqual(handed.checkpoint!);
    expect(after.writer).toBe((handed.writer ?? 0)); // B's claim is the last
    expect((await readState(a)).errors).toEqual([]);
    await screenshot(a, 'tabs-taken-over');
    await a.close();
    await b.close();
  }, 1_800_000);

  it('a broken ?config= and an unknown ?backend= are named in a banner; the link stays as it was', async () => {
    const page = await context.newPage();
    const broken = `${site.url}?config=%7B&backend=quantum`;
    await page.goto(broken);
    await waitFor(page, (s) => s.state === 'ready' || s.state === 'readonly', 540_000, 'ready');
    const text = await page.getByTestId('link-error').textContent();
    expect(text).toMatch(/\?backend=quantum is not a backend \(webgpu, wasm or cpu\)/);
    expect(text).toMatch(/\?config= is not a JSON object .*using the default configuration/);
    expect(text).not.toMatch(/update\.|rewards\.|promptsPerIteration/); // no raw config path
    expect(page.url()).toBe(broken);
    await page.close();
  }, 720_000);
});
