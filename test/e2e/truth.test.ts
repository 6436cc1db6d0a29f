// The page tells the truth and answers at once (the real `npm start`, 1366x800): no text cites a file
// the built site does not serve (its text and links, folded text included); a confirmed run of 100,000
// prompts says its size before Start, shows "pausing" before the page handles the worker's next message, and pauses
// within the first iteration (orders of events, not milliseconds: the test holds on a busy machine); a stored run
// that cannot be read, or whose checkpoint was made with other models, is named in one line with the way out.
// The coach's part (a weak judge's run stated in words, the twin's held-out line) is test/e2e/coach.test.ts,
// in `npm run test:slow`. Screenshots in test-results/truth-*.png. Skips loudly without chromium.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { chromiumAvailable, collectProblems, ensureBuilt, launchChromium, npmStart, resultsDir, type StartedSite } from '../helpers/browser.ts';
import { readState, until, waitFor } from '../helpers/page-state.ts';
import { warnIfSkipped } from '../helpers/webgpu.ts';
import { citedFiles, unserved } from './cited.ts';

const have = chromiumAvailable();
warnIfSkipped('the page tells the truth e2e (test/e2e/truth.test.ts)', have);

const WIDTH = 1366;
const HEIGHT = 800;

async function openAt(browser: Browser, url: string, problems: string[]): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width: WIDTH, height: HEIGHT } });
  const page = await context.newPage();
  collectProblems(page, problems);
  await page.goto(url, { waitUntil: 'load' });
  return { context, page };
}

const withConfig = (base: string, config: unknown) => `${base}?config=${encodeURIComponent(JSON.stringify(config))}`;
const shot = (page: Page, name: string) => page.screenshot({ path: `${resultsDir}/truth-${name}.png` });

describe.skipIf(!have.ok)('the page tells the truth and answers at once (npm start, 1366x800)', () => {
  let site: StartedSite;
  let browser: Browser;
  const problems: string[] = [];

  beforeAll(async () => {
    await ensureBuilt('site');
    site = await npmStart();
    browser = await launchChromium();
  }, 300_000);
  afterAll(async () => {
    await browser?.close();
    await site?.close();
  });

  it('cites only files the built site serves, and links them', async () => {
    const { context, page } = await openAt(browser, site.url, problems);
    await waitFor(page, (s) => s.state === 'ready', 120_000, 'ready');
    await page.screenshot({ path: `${resultsDir}/truth-first-screen.png`, fullPage: true });
    const cited = await citedFiles(page);
    console.log(`[e2e] cited on the first screen: ${cited.join(', ')}`);
    expect(cited).toContain('docs/credit.md');
    expect(cited).toContain('docs/judges.md');
    expect(await unserved(page, site.url)).toEqual([]);
    const credit = await (await fetch(new URL('docs/credit.md', site.url))).text();
    expect(credit).toMatch(/p\^\(N-1\)/);
    expect(await page.evaluate(() => document.body.innerText)).not.toMatch(/CREDIT\.md/); // the file outside the project the page once cited
    await context.close();
  }, 180_000);

  it('a confirmed run of 100,000 prompts says its size before Start, shows "pausing" before the worker\'s next message, and pauses in its first iteration', async () => {
    const { context, page } = await openAt(browser, withConfig(site.url, { promptsPerIteration: 100_000 }), problems);
    const asked: string[] = [];
    page.on('dialog', (d) => {
      asked.push(d.message());
      void d.accept();
    });
    await waitFor(page, (s) => s.state === 'ready', 120_000, 'ready');
    const size = (await page.getByTestId('run-size').textContent()) ?? '';
    console.log(`[e2e] before Start: ${size}`);
    expect(size).toMatch(/rollouts an iteration \([\d,]+ prompts × 2 samples, of the 100,000 asked/);
    await page.getByTestId('btn-start').click();
    console.log(`[e2e] Start asked: ${asked.join(' | ') || '(nothing: not a large run at this pace)'}`);
    await waitFor(page, (s) => s.state === 'running', 60_000, 'running');
    // Pause while the worker is deep in the rollouts' decoding.
    await page.waitForFunction(() => 'decode' in (window as unknown as { __mappa: { run: { progress: object } } }).__mappa.run.progress, undefined, { timeout: 120_000 });
    await page.waitForTimeout(2000);
    // The order of events on the page's thread, not milliseconds (a busy machine stretches those): the click, the
    // "pausing" shown, and every message from the worker (its decoding progress comes several times a second).
    // "At once" means "pausing" shows before the page handles the worker's next message.
    await page.evaluate(() => {
      const w = window as unknown as { __order: string[]; __mappa: { client: { on(f: (e: { kind: string }) => void): void } } };
      w.__order = [];
      const button = document.querySelector('[data-testid=btn-pause]')!;
      button.addEventListener('click', () => w.__order.push('click'), { capture: true });
      const state = document.querySelector('[data-testid=run-state]')!;
      new MutationObserver(() => {
        if (state.getAttribute('data-state') === 'pausing' && !w.__order.includes('pausing')) w.__order.push('pausing');
      }).observe(state, { attributes: true, attributeFilter: ['data-state'] });
      w.__mappa.client.on((e) => {
        if (w.__order.length) w.__order.push(`worker:${e.kind}`);
      });
    });
    const t0 = Date.now();
    await page.getByTestId('btn-pause').click();
    await page.waitForFunction(() => document.querySelector('[data-testid=run-state]')?.getAttribute('data-state') === 'pausing', undefined, { timeout: 60_000 });
    const shown = Date.now() - t0;
    await shot(page, 'pausing');
    // A deadline against a hang only: 38 s was seen with the machine's load at 18 (a decoding step of 4,000 rollouts).
    const paused = await waitFor(page, (s) => s.state === 'ready', 400_000, 'paused');
    const order = await page.evaluate(() => (window as unknown as { __order: string[] }).__order);
    console.log(`[e2e] 100,000 prompts: "pausing" shown ${shown} ms after Pause, paused after ${((Date.now() - t0) / 1000).toFixed(1)} s; `
      + `the page's order of events: ${order.slice(0, 6).join(', ')}${order.length > 6 ? ', ...' : ''}`);
    expect(order.slice(0, 2)).toEqual(['click', 'pausing']); // shown before the worker's next message was handled
    expect(order.filter((e) => e.startsWith('worker:')).length).toBeGreaterThan(0); // the worker was still talking
    expect(paused.iteration).toBe(0); // paused in the first iteration's rollouts, not after its 100,000 prompts
    expect(paused.metrics).toBe(0);
    await shot(page, 'paused');
    expect(problems).toEqual([]);
    await context.close();
  }, 600_000);

  it('a stored run whose checkpoint cannot be read, or was made with other models, is named in one line with the way out', async () => {
    // Each context has storage of its own: the damaged run is this test's alone. The page's console errors are expected here.
    const { context, page } = await openAt(browser, site.url, []);
    await waitFor(page, (s) => s.state === 'ready', 120_000, 'ready');
    const runId = await page.evaluate(() => (window as unknown as { __mappa: { run: { runId: string } } }).__mappa.run.runId);
    /** Stores `files` as the run's checkpoint (as the page's IdbStore keeps it), reloads, and returns the line that names it. */
    const storeAndReload = async (files: Record<string, string>, line: RegExp) => {
      await page.evaluate(async ([id, f]) => {
        const db = await new Promise<IDBDatabase>((resolve, reject) => {
          const r = indexedDB.open('mappa-sandbox');
          r.onsuccess = () => resolve(r.result);
          r.onerror = () => reject(r.error);
        });
        const bytes = Object.fromEntries(Object.entries(f).map(([k, v]) => [k, new TextEncoder().encode(v)]));
        await new Promise<void>((resolve, reject) => {
          const t = db.transaction(['checkpoints'], 'readwrite');
          t.objectStore('checkpoints').put({ files: bytes, savedAt: Date.now() }, id);
          t.oncomplete = () => resolve();
          t.onerror = () => reject(t.error);
        });
        db.close();
      }, [runId, files] as const);
      await page.reload({ waitUntil: 'load' });
      const text = await until(page, () => page.evaluate(() => document.body.innerText), (t) => line.test(t), 120_000, `the page names ${line}`);
      return text.split('\n').find((l) => line.test(l))!;
    };
    const damaged = await storeAndReload({ 'state.json': '{"iteration": 1 "curriculum": {}}' }, /state\.json is not valid JSON/);
    console.log(`[e2e] a damaged stored checkpoint: ${damaged}`);
    expect(damaged).toMatch(new RegExp(`the stored run "${runId}": checkpoint/state\\.json is not valid JSON \\(position 16\\): `
      + 'press Reset to start this run again from iteration 0 \\(its stored records go\\)'));
    await shot(page, 'damaged-run');
    // The way out it names: Reset opens the run afresh.
    await page.getByTestId('btn-reset').click();
    // (The banner stays until dismissed; the run behind it is open again, from iteration 0.)
    const reset = await until(page, () => readState(page), (s) => s.state === 'ready', 120_000, 'ready after Reset');
    expect(reset).toMatchObject({ iteration: 0, metrics: 0 });
    const used = { models: [{ role: 'agents', path: 'models/agent', sha256: '0'.repeat(64) }] };
    const changed = await storeAndReload({ 'state.json': '{"iteration": 1}', 'used.json': JSON.stringify(used) }, /made with other models/);
    console.log(`[e2e] a stored checkpoint made with another model: ${changed}`);
    expect(changed).toMatch(/this run's checkpoint was made with other models: the agents' model \S+ changed .*\(sha256 00000000 then, [0-9a-f]{8} now\); put them back, or press Reset/);
    await context.close();
  }, 400_000);
});
