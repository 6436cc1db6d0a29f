// The page as a teacher preparing a class meets it: the README's `npm start`, 1366x800, a small relay
// run from the link (a second an iteration). A setting typed and then Start clicked at once starts the
// run with the typed value; every banner is inside the first 800 px whatever is stored below, and can be
// dismissed; a coach-free run's words name no coach; an imported dataset opens its own run, which a
// reload still reaches; a read-only tab follows the writer and cannot start an experiment.
// One server and one browser for the file. Skips loudly without chromium.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { chromiumAvailable, ensureBuilt, launchChromium, npmStart, repoRoot, screenshot, type StartedSite } from '../helpers/browser.ts';
import { readState, until, waitFor } from '../helpers/page-state.ts';
import { warnIfSkipped } from '../helpers/webgpu.ts';

const have = chromiumAvailable();
warnIfSkipped('class e2e suite (test/e2e/class.test.ts)', have);

const relay = JSON.parse(readFileSync(path.join(repoRoot, 'configs/relay-2.json'), 'utf8'));
/** A relay of 2 small enough for seconds an iteration, evaluated rarely (8 problems). */
const small = { ...relay, iterations: 20, promptsPerIteration: 4, evalEvery: 20, evalTasks: 8, checkpointEvery: 1 };
const linkTo = (base: string, config: object, extra = '') => `${base}?baseline=0&config=${encodeURIComponent(JSON.stringify(config))}${extra}`;

/** The page's open run as it reads it: its configured iterations and the run's id. */
function opened(page: Page): Promise<{ iterations?: number; runId: string; mode?: string }> {
  return page.evaluate(() => {
    const run = (window as unknown as { __mappa: { run: { config?: { iterations: number; rewards: { mode: string } }; runId: string } } }).__mappa.run;
    return { iterations: run.config?.iterations, runId: run.runId, mode: run.config?.rewards.mode };
  });
}

/** Each visible banner's text and where it sits in the viewport (y of its top, px). */
function banners(page: Page): Promise<{ id: string; top: number; bottom: number; text: string }[]> {
  return page.evaluate(() => [...document.querySelectorAll('.banner')].map((el) => {
    const r = el.getBoundingClientRect();
    return { id: el.getAttribute('data-testid') ?? '', top: r.top, bottom: r.bottom, text: el.textContent ?? '' };
  }));
}

describe.skipIf(!have.ok)('a page a class can rely on', () => {
  let site: StartedSite;
  let browser: Browser;
  let context: BrowserContext;

  beforeAll(async () => {
    await ensureBuilt('site');
    site = await npmStart();
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1366, height: 800 } });
  }, 300_000);
  afterAll(async () => {
    await browser?.close();
    await site?.close();
  });

  it('a setting typed and Start clicked at once: the run starts with the typed value, with no false banner', async () => {
    const page = await context.newPage();
    await page.goto(linkTo(site.url, { ...small, seed: 11 }));
    await waitFor(page, (s) => s.state === 'ready', 180_000, 'ready');
    await page.locator('[data-testid=settings] summary').click();
    const field = page.getByTestId('cfg-iterations');
    await field.fill('3'); // no Enter, no blur: the click on Start is what commits it
    await page.getByTestId('btn-start').click();
    const s = await until(page, () => readState(page), (x) => x.metrics >= 1 || x.errors.length > 0, 120_000, 'the run starts');
    expect(s.errors).toEqual([]);
    expect((await opened(page)).iterations).toBe(3);
    await waitFor(page, (x) => x.state === 'ready' && x.iteration === 3, 120_000, 'the run of 3 ends');
    expect(await page.getByTestId('run-state').textContent()).toMatch(/iteration 3 \/ 3/);
    await screenshot(page, 'class-typed-then-start');
    await page.close();
  }, 400_000);

  // A stored lesson costs training: the default run stores the first iterations of its first run (a paused lesson, drawn
  // from storage like a finished one); MAPPA_SLOW=1 stores the whole lesson (about a minute more).
  it('with a stored lesson, a bad link\'s banner is inside the first 800 px, stays there when scrolled, and can be dismissed', async () => {
    const ctx = await browser.newContext({ viewport: { width: 1366, height: 800 } });
    const page = await ctx.newPage();
    await page.goto(`${site.url}?baseline=0`);
    await waitFor(page, (s) => s.state === 'ready', 180_000, 'ready');
    await page.getByTestId('btn-lesson').click();
    const lesson = () => page.evaluate(() => {
      const v = (window as unknown as { __mappa: { run: { lesson: { status: string; runs: { iteration: number }[] } | null } } }).__mappa.run.lesson;
      return { status: v?.status, iteration: Math.max(0, ...(v?.runs ?? []).map((r) => r.iteration)) };
    });
    await until(page, lesson, (v) => (process.env.MAPPA_SLOW ? v.status === 'done' : v.iteration >= 2), 600_000, 'a stored lesson run');
    if (!process.env.MAPPA_SLOW) {
      await page.getByTestId('btn-lesson-pause').click();
      await waitFor(page, (s) => s.state === 'ready', 120_000, 'the lesson paused');
    }
    await page.close();

    const bad = await ctx.newPage();
    await bad.goto(`${site.url}?seed=abc&baseline=0`);
    await waitFor(bad, (s) => s.state === 'ready', 180_000, 'ready on the bad link');
    await bad.getByTestId('link-error').waitFor({ timeout: 30_000 });
    const text = await bad.getByTestId('link-error').textContent();
    expect(text).toMatch(/\?seed=abc is refused: a setting goes in \?config=, e\.g\. \?config=\{"seed":0\}, or in Settings → seed/);
    const shown = await until(bad, () => bad.evaluate(() => (window as unknown as { __mappa: { run: { lesson: { status: string } | null } } }).__mappa.run.lesson?.status),
      (st) => st === 'paused' || st === 'done', 30_000, 'the stored lesson drawn');
    expect(shown).toMatch(/paused|done/);
    const at = (await banners(bad)).find((b) => b.id === 'link-error')!;
    expect(at.bottom, 'the link banner ends inside the first 800 px').toBeLessThanOrEqual(800);
    await screenshot(bad, 'class-banner-stored-lesson');
    await bad.mouse.wheel(0, 5000); // far down the page: the banner is pinned to the top of the viewport
    await bad.waitForTimeout(300);
    const scrolled = (await banners(bad)).find((b) => b.id === 'link-error')!;
    expect(await bad.evaluate(() => scrollY)).toBeGreaterThan(500);
    expect(scrolled.top).toBeGreaterThanOrEqual(0);
    expect(scrolled.bottom).toBeLessThanOrEqual(800);
    await bad.getByTestId('link-error').getByRole('button', { name: 'dismiss' }).click();
    expect(await bad.getByTestId('link-error').count()).toBe(0);
    await ctx.close();
  }, 900_000);

  it('a counterfactual run\'s words name no coach (line above the charts, settings line, verdict); its replays are a folded tree', async () => {
    const ctx = await browser.newContext({ viewport: { width: 1366, height: 800 } });
    const page = await ctx.newPage();
    const cf = { ...small, seed: 31, iterations: 2, evalEvery: 2, promptsPerIteration: 1, samplesPerPrompt: 2, rewards: { mode: 'counterfactual' } };
    await page.goto(`${site.url}?config=${encodeURIComponent(JSON.stringify(cf))}`); // the untrained team is measured: the verdict needs it
    await waitFor(page, (s) => s.state === 'ready', 180_000, 'ready');
    const line = (await page.getByTestId('coach-line').textContent())!;
    expect(line).toMatch(/^No coach: counterfactual credit reads replays/);
    expect(line).not.toMatch(/judge|rater|rubric|Coach:/);
    expect(await page.locator('[data-testid=settings] summary').textContent()).toMatch(/counterfactual reward · no coach ·/);
    await page.getByTestId('btn-start').click();
    await waitFor(page, (s) => s.state === 'ready' && s.iteration === 2 && s.evals.some((e) => e.iteration === 2 && e.of === undefined), 300_000, 'the run ends');
    const verdict = (await page.getByTestId('verdict').textContent())!;
    expect(verdict).toMatch(/After iteration 2 \(the end of the run\)/);
    expect(verdict).not.toMatch(/coach agrees|judge models|Coach:/);
    // The tree of replays: one folded group per sample (2 here, 4 leaves each), the selected one open, its deciding leaf first.
    expect(await page.getByTestId('replay-group').count()).toBe(2);
    expect(await page.locator('[data-testid=replay-group][open]').count()).toBe(1);
    expect(await page.locator('[data-testid=trajectory-tab]:visible').count()).toBe(4);
    expect(await page.getByTestId('chart-score').textContent()).toMatch(/none \(counterfactual credit reads no coach\)/);
    await screenshot(page, 'class-counterfactual-words');
    await ctx.close();
  }, 600_000);

  it('an imported dataset opens a new run, says so, and a reload reaches it (?run=)', async () => {
    const ctx = await browser.newContext({ viewport: { width: 1366, height: 800 } });
    const page = await ctx.newPage();
    await page.goto(`${site.url}?baseline=0`);
    await waitFor(page, (s) => s.state === 'ready', 180_000, 'ready');
    const before = await opened(page);
    const lines = Array.from({ length: 6 }, (_, i) => JSON.stringify({ id: i + 1, problem: `What is ${i + 2} + ${i + 3}?`, answer: String(2 * i + 5) }));
    await page.getByTestId('import-dataset').setInputFiles({ name: 'class.jsonl', mimeType: 'application/x-ndjson', buffer: Buffer.from(lines.join('\n')) });
    await page.getByTestId('run-notice').waitFor({ timeout: 120_000 });
    const notice = (await page.getByTestId('run-notice').textContent())!;
    expect(notice).toMatch(/^The dataset class\.jsonl \(6 problems\) opened a new run, .*, at iteration 0; the run that was open \(.*, iteration 0\) is kept as it was/);
    await waitFor(page, (s) => s.state === 'ready', 120_000, 'the dataset run ready');
    const now = await opened(page);
    expect(now.runId).not.toBe(before.runId);
    expect(new URL(page.url()).searchParams.get('run')).toBe(now.runId);
    const box = (await page.getByTestId('run-notice').boundingBox())!;
    expect(box.y + box.height).toBeLessThanOrEqual(800);
    await screenshot(page, 'class-dataset-notice');

    await page.reload();
    await waitFor(page, (s) => s.state === 'ready', 180_000, 'ready after the reload');
    const back = await page.evaluate(() => {
      const run = (window as unknown as { __mappa: { run: { runId: string; dataset: string | null; pool: number } } }).__mappa.run;
      return { runId: run.runId, dataset: run.dataset, pool: run.pool };
    });
    expect(back).toEqual({ runId: now.runId, dataset: 'class.jsonl', pool: 6 });
    expect(await page.getByTestId('link-error').count()).toBe(0);
    await ctx.close();
  }, 600_000);

  it('a read-only tab follows the writer\'s iteration, and its experiment buttons are disabled with the reason', async () => {
    const ctx = await browser.newContext({ viewport: { width: 1366, height: 800 } });
    const url = linkTo(site.url, { ...small, seed: 41, iterations: 400 }); // long enough that it is still training when tab A pauses
    const a = await ctx.newPage();
    await a.goto(url);
    await waitFor(a, (s) => s.state === 'ready', 180_000, 'tab A ready');
    await a.getByTestId('btn-start').click();
    await waitFor(a, (s) => s.metrics >= 1, 180_000, 'tab A trains');
    const b = await ctx.newPage();
    await b.goto(url);
    const first = await waitFor(b, (s) => s.state === 'readonly', 180_000, 'tab B read-only');
    const followed = await waitFor(b, (s) => s.iteration >= first.iteration + 2 && s.metrics >= s.iteration, 120_000, 'tab B follows tab A');
    expect((await readState(a)).iteration).toBeGreaterThanOrEqual(followed.iteration);
    expect(await b.getByTestId('read-only').textContent()).toMatch(new RegExp(`follows it: iteration ${followed.iteration}|iteration \\d+`));
    for (const id of ['btn-lesson', 'btn-credit-methods', 'btn-start', 'btn-step', 'btn-reset', 'btn-compare']) {
      expect(await b.getByTestId(id).isDisabled(), `${id} disabled in the read-only tab`).toBe(true);
    }
    expect(await b.getByTestId('btn-credit-methods').getAttribute('title')).toMatch(/experiments run in that tab/);
    expect(await b.getByTestId('experiments-refused').textContent()).toMatch(/experiments run in that tab/);
    await screenshot(b, 'class-read-only-follows');
    await a.getByTestId('btn-pause').click();
    await waitFor(a, (s) => s.state === 'ready', 60_000, 'tab A paused');
    await ctx.close();
  }, 600_000);
});
