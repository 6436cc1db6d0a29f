// The page's own storage faults, in the real browser behind the real `npm start`: a page closed the moment
// a checkpoint write begins reopens at the last whole checkpoint, each iteration stored once (the store
// replaces a checkpoint in one IndexedDB transaction). A relay of 2 on its shipped model, a checkpoint every
// iteration (seconds an iteration). Storage full during a checkpoint: CDP's Storage.overrideQuotaForOrigin puts
// the origin's quota just above its usage, so the run's next checkpoint (about 480 KiB) is refused by Chromium itself;
// Chromium's IndexedDB lets writes through on an allowance it cached for up to 30 s, so the test waits until a write
// from the page is refused before it trains (docs/testing.md). Skips loudly without chromium.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { chromiumAvailable, ensureBuilt, launchChromium, npmStart, repoRoot, screenshot, type StartedSite } from '../helpers/browser.ts';
import { until, waitFor } from '../helpers/page-state.ts';
import { warnIfSkipped } from '../helpers/webgpu.ts';

const have = chromiumAvailable();
warnIfSkipped('the page\'s storage faults e2e (test/e2e/storage.test.ts)', have);

const relay = JSON.parse(fs.readFileSync(path.join(repoRoot, 'configs/relay-2.json'), 'utf8'));
const CONFIG = {
  agentModel: relay.agentModel, workflow: relay.workflow, coach: { kind: 'rule' }, iterations: 40,
  promptsPerIteration: 4, samplesPerPrompt: 2, evalEvery: 100, evalTasks: 8, checkpointEvery: 1,
};

/** What the browser holds of run `id`: its checkpoint's iteration (read from the stored state.json) and its iterations' records. */
function stored(page: Page, id: string): Promise<{ checkpoint: number | null; iterations: number[] }> {
  return page.evaluate((runId) => new Promise((resolve, reject) => {
    const req = indexedDB.open('mappa-sandbox');
    req.onerror = () => reject(req.error);
    req.onsuccess = () => {
      const t = req.result.transaction(['checkpoints', 'metrics'], 'readonly');
      const c = t.objectStore('checkpoints').get(runId);
      const m = t.objectStore('metrics').getAll(IDBKeyRange.bound([runId], [runId, []]));
      t.oncomplete = () => {
        const files = (c.result as { files?: Record<string, Uint8Array> } | undefined)?.files;
        const state = files ? JSON.parse(new TextDecoder().decode(files['state.json'])) as { iteration: number } : null;
        resolve({ checkpoint: state?.iteration ?? null, iterations: (m.result as { iteration: number; perAgent?: unknown }[]).filter((r) => r.perAgent).map((r) => r.iteration) });
        req.result.close();
      };
    };
  }), id);
}

const runIdOf = (page: Page) => page.evaluate(() => (window as unknown as { __mappa: { run: { runId: string } } }).__mappa.run.runId);

describe.skipIf(!have.ok)('the page\'s storage faults (npm start)', () => {
  let site: StartedSite;
  let browser: Browser;
  let url: string;

  beforeAll(async () => {
    await ensureBuilt('site');
    site = await npmStart();
    browser = await launchChromium();
    url = `${site.url}?config=${encodeURIComponent(JSON.stringify(CONFIG))}`;
  }, 600_000);
  afterAll(async () => {
    await browser?.close();
    await site?.close();
  });

  it('a page closed the moment a checkpoint write begins: reopened, the run resumes at its last whole checkpoint, each iteration stored once', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(url, { waitUntil: 'load' });
    await waitFor(page, (s) => s.state === 'ready', 300_000, 'ready');
    const runId = await runIdOf(page);
    let closing: Promise<void> | null = null;
    await page.exposeFunction('__checkpointBegins', () => {
      closing ??= page.close({ runBeforeUnload: false });
    });
    // The second checkpoint's write begins (its phase starts): the page is closed at once, the write in flight.
    await page.evaluate(() => {
      const m = (window as unknown as { __mappa: { client: { on(f: (e: { kind: string; event?: { type: string; phase?: string; status?: string; iteration?: number } }) => void): void } } }).__mappa;
      m.client.on((e) => {
        const ev = e.event;
        if (e.kind === 'train' && ev?.type === 'phase' && ev.phase === 'checkpoint' && ev.status === 'start' && (ev.iteration ?? 0) >= 2) {
          void (window as unknown as { __checkpointBegins(): void }).__checkpointBegins();
        }
      });
    });
    await page.getByTestId('btn-start').click();
    await until(page, async () => closing !== null, (x) => x, 300_000, 'the second checkpoint begins').catch((e: Error) => {
      if (!closing) throw e; // the page's own reads fail once it is closed
    });
    await closing;
    const again = await context.newPage();
    await again.goto(url, { waitUntil: 'load' });
    const back = await waitFor(again, (s) => s.state === 'ready' && s.iteration > 0, 300_000, 'reopened');
    const kept = await stored(again, runId);
    console.log(`[e2e] closed mid-checkpoint: reopened at iteration ${back.iteration}; stored checkpoint ${kept.checkpoint}, iterations ${kept.iterations.join(',')}`);
    // The checkpoint before the write (1) or the one written whole (2); the worker keeps training while Playwright's close
    // travels (an iteration of this relay takes well under a second on today's engine), so a later one may be the last
    // whole one. Whichever it is, the run resumes exactly there, each iteration stored once and none after it.
    expect(back.iteration).toBeGreaterThanOrEqual(1);
    expect(back.iteration).toBe(kept.checkpoint);
    expect(kept.iterations).toEqual(Array.from({ length: back.iteration }, (_, i) => i + 1)); // each once, none after it
    await context.close();
  }, 1_200_000);

  it('storage full during a checkpoint: the run pauses and says so, the last whole checkpoint stays, a reload opens it', async () => {
    const context = await browser.newContext({ viewport: { width: 1366, height: 800 } });
    const page = await context.newPage();
    await page.goto(url, { waitUntil: 'load' });
    await waitFor(page, (s) => s.state === 'ready', 300_000, 'ready');
    const runId = await runIdOf(page);
    await page.getByTestId('btn-step').click(); // iteration 1, checkpointed
    await waitFor(page, (s) => s.state === 'ready' && s.iteration === 1, 300_000, 'the first checkpoint');
    expect((await stored(page, runId)).checkpoint).toBe(1);
    // A write of 256 KiB from the page, into a database of its own (made before the quota falls, then rewritten in place).
    const write = () => page.evaluate(() => new Promise<string>((resolve) => {
      const r = indexedDB.open('quota-probe', 1);
      r.onupgradeneeded = () => r.result.createObjectStore('s');
      r.onsuccess = () => {
        const t = r.result.transaction('s', 'readwrite');
        t.objectStore('s').put(new Uint8Array(256 * 1024), 1);
        t.oncomplete = t.onabort = () => (r.result.close(), resolve(t.error?.name ?? 'ok'));
      };
    }));
    expect(await write()).toBe('ok');
    // The quota: 128 KiB above the usage, room for an iteration's records, not for its checkpoint.
    const { usage } = await page.evaluate(() => navigator.storage.estimate());
    const cdp = await context.newCDPSession(page);
    const origin = new URL(site.url).origin;
    await cdp.send('Storage.overrideQuotaForOrigin', { origin, quotaSize: usage! + 128 * 1024 });
    // Until Chromium asks the quota again (its allowance lapses within 30 s), writes still pass: wait for one refused.
    const refused = await until(page, write, (r) => r !== 'ok', 60_000, 'a write refused under the quota', 1000);
    expect(refused).toBe('QuotaExceededError');
    await page.getByTestId('btn-start').click();
    await waitFor(page, (s) => s.state === 'ready' && s.errors.length > 0, 300_000, 'the refused checkpoint');
    const words = await page.getByTestId('run-state').innerText();
    const kept = await stored(page, runId);
    console.log(`[e2e] storage full: "${words.replace(/\n/g, ' | ')}"; stored checkpoint ${kept.checkpoint}, iterations ${kept.iterations.join(',')}`);
    await screenshot(page, 'storage-full');
    expect(words).toMatch(/paused at iteration 2: browser storage is full while saving the checkpoint .*the last whole checkpoint \(iteration 1\) is kept/);
    expect(await page.getByTestId('run-error').first().innerText()).toContain('browser storage is full while saving the checkpoint');
    expect(kept.checkpoint).toBe(1);
    // Space again (the override lifted), the page reloaded: the run opens at its last whole checkpoint.
    await cdp.send('Storage.overrideQuotaForOrigin', { origin });
    await page.reload({ waitUntil: 'load' });
    const back = await waitFor(page, (s) => s.state === 'ready', 300_000, 'reopened');
    const after = await stored(page, runId);
    console.log(`[e2e] reloaded: ${back.team} at iteration ${back.iteration}; "${(await page.getByTestId('banners').innerText()).replace(/\n/g, ' | ')}"`);
    expect(back).toMatchObject({ team: 'relay-2', iteration: 1 });
    expect(after).toEqual({ checkpoint: 1, iterations: [1] }); // iteration 2, never checkpointed, is dropped
    await context.close();
  }, 1_200_000);
});
