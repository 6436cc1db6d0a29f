// The guided step after the lesson, as a newcomer meets it (the real `npm start`, the plain URL, 1366x800): the lesson
// runs first; then "Correct a weak judge" switches the coach to models/relay-judge-weak and trains the relay of 4 coached
// by it; ten "Ask me" cards (the scores it is least sure of) are answered with the mouse, each with the relay rubric's
// verdict on the card's own step (the rubric plays the person here, and the test says so); "Teach it" teaches the judge;
// the relay of 4 is coached again by the taught version; the step shows the ranking before and after and the team's
// accuracy paired, with intervals and in words. The Settings menu then offers the taught judge, and choosing it there
// coaches with it; a reload shows the step's result kept. Prints the step's wall time and the load average.
// Minutes here: in `npm run test:slow` (vite.config.ts SLOW_ONLY). Screenshots: test-results/guided-*.png.
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { chromiumAvailable, ensureBuilt, openUserPage, resultsDir, type UserPage } from '../helpers/browser.ts';
import { waitFor } from '../helpers/page-state.ts';
import { warnIfSkipped } from '../helpers/webgpu.ts';
import { relayRuleScore } from '../../src/core/domains/relay/team.ts';
import type { ActionContext } from '../../src/core/coach/coach-format.ts';

const have = chromiumAvailable();
warnIfSkipped('the guided step e2e (test/e2e/guided-step.test.ts)', have);

const text = async (page: Page, id: string) => ((await page.getByTestId(id).first().textContent()) ?? '').replace(/\s+/g, ' ').trim();
const load = () => fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const coachOf = (page: Page) => page.evaluate(() => (window as unknown as { __mappa: { run: { coach: string } } }).__mappa.run.coach);
async function phase(page: Page, want: string, timeoutMs: number): Promise<void> {
  const step = page.getByTestId('guided-step');
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if ((await step.getAttribute('data-phase')) === want) return;
    const error = await page.getByTestId('guided-error').textContent({ timeout: 50 }).catch(() => null);
    if (error) throw new Error(`the guided step stopped: ${error}`);
    if (Date.now() > deadline) throw new Error(`the guided step did not reach "${want}" within ${timeoutMs / 1000} s`);
    await page.waitForTimeout(500);
  }
}

describe.skipIf(!have.ok)('the guided step after the lesson: correct a weak judge, teach it, coach again (npm start, 1366x800)', () => {
  let user: UserPage;
  let page: Page;
  let problems: string[];

  beforeAll(async () => {
    await ensureBuilt('site');
    user = await openUserPage();
    ({ page, problems } = user);
  }, 600_000);
  afterAll(async () => {
    await user?.close();
  });

  it('appears only after the lesson', async () => {
    await page.getByTestId('btn-lesson').waitFor({ timeout: 120_000 });
    expect(await page.getByTestId('guided-step').count()).toBe(0);
    await waitFor(page, (s) => s.state === 'ready', 240_000, 'the page ready');
    await page.getByTestId('btn-lesson').click();
    await page.locator('[data-testid="lesson"][data-status="done"]').waitFor({ timeout: 1_200_000 });
    await page.getByTestId('guided-step').waitFor({ timeout: 30_000 });
    expect(await text(page, 'btn-guided')).toBe('Correct a weak judge');
    await page.getByTestId('guided-step').scrollIntoViewIfNeeded();
    await page.screenshot({ path: `${resultsDir}/guided-offered.png` });
  }, 1_500_000);

  let seconds = 0;
  it('switches to the weak judge, asks about 10 scores, teaches it and coaches again, in words with intervals', async () => {
    const started = Date.now();
    const loadBefore = load();
    await page.getByTestId('btn-guided').click();
    await phase(page, 'correct', 600_000);
    expect(await coachOf(page)).toMatch(/^model:(https?:\/\/[^/]+\/)?models\/relay-judge-weak$/); // the site's own folder
    const step = page.getByTestId('guided-step');
    expect(await text(page, 'guided-judge')).toMatch(/^The coach is now models\/relay-judge-weak, a weak relay judge: it ranks \d+\.\d % \[\d+\.\d, \d+\.\d\] of an agent's/);
    await step.getByTestId('ask-card').first().waitFor({ timeout: 300_000 });
    expect(await step.getByTestId('ask-card').count()).toBe(10);
    expect(await step.getByTestId('ask-why').first().textContent()).toMatch(/^Picked because the judge is unsure of it/);
    await step.scrollIntoViewIfNeeded();
    await page.screenshot({ path: `${resultsDir}/guided-cards.png` });
    // The person: the relay rubric's verdict on each card's own step (its input's sum, its reply), clicked with the mouse.
    for (let k = 1; k <= 10; k++) {
      const card = step.getByTestId('ask-card').first();
      const input = (await card.getByTestId('ask-input').textContent()) ?? '';
      const reply = ((await card.getByTestId('ask-reply').textContent()) ?? '').replace(/^replied: /, '');
      const score = relayRuleScore({ input, output: reply, final: false } as ActionContext).score;
      await card.getByTestId(`ask-score-${score}`).click();
      await page.waitForFunction((n) => document.querySelector('[data-testid="guided-count"]')?.textContent?.startsWith(`${n} of 10`), k, { timeout: 60_000 });
    }
    expect(await step.getByTestId('ask-card').count()).toBe(0);
    await step.getByTestId('btn-guided-teach').click();
    await phase(page, 'recoach', 600_000);
    await step.getByTestId('teach-result').waitFor({ timeout: 10_000 });
    await step.scrollIntoViewIfNeeded();
    await page.screenshot({ path: `${resultsDir}/guided-taught.png` });
    await phase(page, 'done', 900_000);
    seconds = (Date.now() - started) / 1000;
    console.log(`[e2e] guided step: ${seconds.toFixed(0)} s from the click to the result; load average ${loadBefore} before, ${load()} after`);
    expect(await coachOf(page)).toMatch(/^model:taught:relay-judge-weak-[0-9a-f]{12}$/);
    const ranking = await text(page, 'guided-ranking');
    const words = await text(page, 'guided-words');
    console.log(`[e2e] ${await text(page, 'guided-judge')}\n[e2e] ${ranking}\n[e2e] ${words}\n[e2e] ${await text(page, 'guided-time')}`);
    expect(ranking).toMatch(/^Its ranking against the rater on the batch's other actions \(\d+ pairs of the same agent's steps\): \d+\.\d % \[[\d.]+, [\d.]+\] before teaching, \d+\.\d % \[[\d.]+, [\d.]+\] after: (the intervals overlap, so no change beyond the noise|a (gain|loss) in ranking beyond the noise)\.$/);
    expect(words).toMatch(/^Held-out greedy team accuracy \(100 problems\): untrained [\d.]+ % \[[\d.]+, [\d.]+\]; coached by the weak judge [\d.]+ % \[[\d.]+, [\d.]+\]; by the taught judge [\d.]+ % \[[\d.]+, [\d.]+\]\. Taught minus weak, paired on the same 100 problems: [+-]?[\d.]+ pts \[[+-]?[\d.]+, [+-]?[\d.]+\]: /);
    // A difference inside its interval is said to be no gain; one outside, a gain or a loss.
    const [, low, high] = /pts \[([+-]?[\d.]+), ([+-]?[\d.]+)\]/.exec(words)!.map(Number);
    if (low <= 0 && high >= 0) expect(words).toContain('inside the interval, so no gain');
    else expect(words).toMatch(/beyond the noise, a (gain|loss)/);
    expect(await text(page, 'guided-time')).toMatch(/^This step took (\d+ s|\d+ min \d+ s) here from the first click to the last result, your corrections included/);
    await step.scrollIntoViewIfNeeded();
    await page.screenshot({ path: `${resultsDir}/guided-done.png` });
  }, 1_800_000);

  it('the Settings coach menu offers the taught judge, and choosing it there coaches with it', async () => {
    const taught = (await coachOf(page)).replace(/^model:/, '');
    await page.getByTestId('settings').locator('summary').click();
    const menu = page.getByTestId('cfg-coach.kind');
    expect(await menu.inputValue()).toBe(taught);
    const options = await menu.locator('option').allTextContents();
    expect(options).toEqual(['judge models/relay-judge-weak (AI)', taught, 'rule (the rater)']);
    // Back to the weak judge, then the taught one again, from the Settings menu alone.
    await menu.selectOption('model');
    await waitFor(page, (s) => s.state === 'ready', 180_000, 'the run coached by the weak judge');
    await page.waitForFunction(() => /models\/relay-judge-weak$/.test((window as unknown as { __mappa: { run: { coach: string } } }).__mappa.run.coach), null,
      { timeout: 60_000 });
    await menu.selectOption(taught);
    await page.waitForFunction((t) => (window as unknown as { __mappa: { run: { coach: string } } }).__mappa.run.coach === `model:${t}`, taught, { timeout: 180_000 });
    await waitFor(page, (s) => s.state === 'ready', 180_000, 'the run coached by the taught judge');
    expect(await menu.inputValue()).toBe(taught);
    await menu.scrollIntoViewIfNeeded();
    await page.screenshot({ path: `${resultsDir}/guided-settings.png` });
  }, 600_000);

  it('after a reload, shows the step\'s result kept', async () => {
    const words = await text(page, 'guided-words');
    await page.reload({ waitUntil: 'load' });
    await page.locator('[data-testid="guided-step"][data-phase="done"]').waitFor({ timeout: 120_000 });
    expect(await text(page, 'guided-words')).toBe(words);
    expect(await text(page, 'btn-guided')).toBe('Do this step again');
    expect(problems).toEqual([]);
  }, 300_000);
});
