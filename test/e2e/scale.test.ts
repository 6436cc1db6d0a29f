// "Scale the team", as a user meets it: the README's `npm start`, the plain URL, a 1366x800 window, a fresh
// browser. Under the lesson, "Scale the team" trains the relay of 8, 16 and 32 agents under process reward
// (the AI judge) and outcome reward (six runs, src/core/lab/experiments/scale/scale-run.ts) with a progress bar, and ends with
// team and step accuracy against N with their intervals and the theory's lines, a heat strip of the 32 agents'
// step accuracy, and a sentence computed from the numbers. A reload then shows it from storage, without a
// click. Prints the wall time and each size's seconds (docs/page.md quotes them). Skips loudly without chromium.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { chromiumAvailable, ensureBuilt, openUserPage, resultsDir, type UserPage } from '../helpers/browser.ts';
import { waitFor } from '../helpers/page-state.ts';
import { warnIfSkipped } from '../helpers/webgpu.ts';
import type { ScaleView } from '../../src/core/lab/experiments/scale/scale-maths.ts';

const have = chromiumAvailable();
warnIfSkipped('the team-scaling e2e (test/e2e/scale.test.ts)', have);

const WIDTH = 1366;
const HEIGHT = 800;

function scaleOf(page: Page): Promise<ScaleView | null> {
  return page.evaluate(() => (window as unknown as { __mappa: { run: { scale: ScaleView | null } } }).__mappa.run.scale);
}

async function waitScale(page: Page, ok: (v: ScaleView) => boolean, timeoutMs: number, what: string): Promise<ScaleView> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await scaleOf(page);
    if (v && ok(v)) return v;
    if (v?.status === 'failed') throw new Error(`${what}: the experiment failed: ${v.message}`);
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs / 1000} s; status ${v?.status}, current ${JSON.stringify(v?.current)}`);
    await page.waitForTimeout(1000);
  }
}

/** The section scrolled to the top of the window, and whether every part of it that matters lies inside the window. */
async function inView(page: Page, ids: string[]): Promise<string[]> {
  await page.getByTestId('scale').evaluate((el) => el.scrollIntoView({ block: 'start' }));
  await page.waitForTimeout(300);
  const out: string[] = [];
  for (const id of ids) {
    const box = await page.getByTestId(id).boundingBox();
    if (!box || box.y < 0 || box.y + box.height > HEIGHT) out.push(`${id} at ${JSON.stringify(box)}`);
  }
  return out;
}

describe.skipIf(!have.ok)('"Scale the team" (npm start, plain URL, 1366x800)', () => {
  let user: UserPage;
  let page: Page;
  let problems: string[];

  beforeAll(async () => {
    await ensureBuilt('site');
    user = await openUserPage({ viewport: { width: WIDTH, height: HEIGHT } });
    ({ page, problems } = user);
  }, 600_000);
  afterAll(async () => {
    await user?.close();
  });

  it('trains the six runs with a progress bar and ends in words, with the strip of the 32 agents', async () => {
    const button = page.getByTestId('btn-scale');
    await button.waitFor({ timeout: 60_000 });
    expect(await button.textContent()).toContain('Scale the team');
    expect(await page.getByTestId('scale-status').textContent()).toMatch(/6 runs, one after the other: 6 iterations of 64 rollouts each/);
    await waitFor(page, (s) => s.state === 'ready', 240_000, 'the page ready');
    expect(await inView(page, ['btn-scale', 'scale-status'])).toEqual([]);
    await page.screenshot({ path: `${resultsDir}/scale-idle.png` });
    const started = Date.now();
    await button.click();
    await waitScale(page, (v) => v.status === 'running' && v.progress.done > 0, 240_000, 'the first work done');
    const mid = await waitScale(page, (v) => v.rows.filter((r) => r.final.process && r.final.outcome).length >= 2 && v.remaining !== null,
      1_500_000, 'the 8- and 16-agent runs');
    console.log(`[e2e] scale: 8 and 16 agents done after ${((Date.now() - started) / 1000).toFixed(0)} s; `
      + `progress ${mid.progress.done} of ${mid.progress.total} generations; estimate ${mid.remaining!.toFixed(0)} s left`);
    expect(await page.getByTestId('scale-progress').getAttribute('aria-valuenow')).not.toBe('0');
    expect(await inView(page, ['btn-scale-pause', 'scale-progress', 'scale-status'])).toEqual([]);
    await page.screenshot({ path: `${resultsDir}/scale-running.png` });

    const done = await waitScale(page, (v) => v.status === 'done', 1_500_000, 'the experiment done');
    const seconds = (Date.now() - started) / 1000;
    console.log(`[e2e] scale: ${seconds.toFixed(0)} s wall after the click (${(seconds / 60).toFixed(1)} min); trained ${done.trained?.seconds.toFixed(0)} s`);
    for (const r of done.rows) {
      console.log(`[e2e] ${r.n} agents: process ${r.seconds.process?.toFixed(0)} s + outcome ${r.seconds.outcome?.toFixed(0)} s. ${r.words}`);
      expect(r.untrained && r.final.process && r.final.outcome && r.stepGap && r.teamGap).toBeTruthy();
      expect(r.final.process!.step.low).toBeLessThanOrEqual(r.final.process!.step.p);
    }
    console.log(`[e2e] ${done.words}`);
    expect(done.rows.map((r) => r.n)).toEqual([8, 16, 32]);

    // The words are the page's, from the numbers: one clause per side of the noise, and the theory's chances (the luck floor and p^N).
    const words = (await page.getByTestId('scale-words').textContent()) ?? '';
    expect(words).toBe(done.words);
    expect(words).toMatch(/^Against the untrained team, on the same held-out problems, process reward's team accuracy (rose|fell|did not move) /);
    expect(words).toMatch(/Process reward's mean step accuracy (ended above|was within|ended below) /);
    expect(words).toMatch(/process reward's trained steps predict team accuracy .* at 8, .* at 16, .* at 32 agents, against .* measured/);
    expect(words).toMatch(/rewarded rollouts fell from .* at 8 agents to .* at 32, toward its floor of 10 % .* right chains, p\^N, fell from .*: at 32 agents .* of its rewards come from a right chain, the rest is luck\./);
    // The team chart draws the luck floor beside p^N (and what process's trained steps predict).
    expect(await page.getByTestId('scale-chart-team').locator('[data-testid="scale-theory"]').count()).toBe(3);
    expect(await page.getByTestId('scale-chart-team').textContent()).toMatch(/luck floor.*pᴺ: every step right/);
    // The strip: three rows of 32 cells, each agent's step accuracy.
    expect(await page.getByTestId('scale-strip').locator('[data-testid="scale-cell"]').count()).toBe(3 * 32);
    expect(await page.getByTestId('scale-cost').textContent()).toMatch(/32 agents \d+ \+ \d+/);
    expect(await page.getByTestId('scale-status').textContent()).toMatch(/^Trained on .* in \d+ (s|min( \d+ s)?) on this machine\.$/);
    expect(await inView(page, ['btn-scale', 'scale-chart-team', 'scale-chart-step', 'scale-strip', 'scale-words'])).toEqual([]);
    await page.screenshot({ path: `${resultsDir}/scale-done.png` });
    expect(problems).toEqual([]);
  }, 3_300_000); // about 5 minutes of training on a quiet 2-core machine; the limits are for a loaded one (19 min at load 10-12)

  it('a reload shows the finished experiment from storage, without a click', async () => {
    const before = await scaleOf(page);
    await page.reload({ waitUntil: 'load' });
    const v = await waitScale(page, (x) => x.status === 'done' && Boolean(x.readBack), 120_000, 'the experiment read back');
    expect(v.words).toBe(before!.words);
    expect(v.trained!.seconds).toBeCloseTo(before!.trained!.seconds, 3);
    await page.getByTestId('scale-words').waitFor({ timeout: 10_000 });
    expect(await page.getByTestId('scale-status').textContent()).toMatch(/on this machine, kept in this browser\.$/);
    expect(await page.getByTestId('btn-scale').textContent()).toContain('Scale the team again');
    expect(await page.getByTestId('scale-strip').locator('[data-testid="scale-cell"]').count()).toBe(3 * 32);
    expect(await inView(page, ['btn-scale', 'scale-chart-team', 'scale-chart-step', 'scale-strip', 'scale-words'])).toEqual([]);
    await page.screenshot({ path: `${resultsDir}/scale-reloaded.png` });
    expect(problems).toEqual([]);
  }, 240_000);

  it('each run opens in the inspector by a short link, with its iterations and last rollouts, and the inspector comes into view', async () => {
    await page.getByTestId('scale-open-32-outcome').click();
    await waitFor(page, (x) => x.state === 'ready' && x.team === 'relay-32' && x.metrics >= 6, 120_000, 'the 32-agent outcome run open');
    const url = new URL(page.url());
    expect(url.searchParams.get('team')).toBe('relay');
    expect(url.searchParams.get('agents')).toBe('32');
    expect(page.url().length).toBeLessThan(1000);
    expect(JSON.parse(url.searchParams.get('config')!)).toMatchObject({ iterations: 6, rewards: { mode: 'outcome' } });
    await page.getByTestId('trajectory-tab').first().waitFor({ timeout: 30_000 }); // its last batch, kept with it
    expect(await page.getByTestId('step-pager').textContent()).toMatch(/steps 1–6 of 32/);
    await page.waitForTimeout(1000); // the smooth scroll
    const top = await page.getByTestId('inspector').evaluate((e) => e.getBoundingClientRect().top);
    expect(top).toBeGreaterThanOrEqual(0);
    expect(top).toBeLessThan(HEIGHT);
    await page.screenshot({ path: `${resultsDir}/scale-opened.png` });
    expect(problems).toEqual([]);
  }, 240_000);
});
