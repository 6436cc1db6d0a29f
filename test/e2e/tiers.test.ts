// A coach in tiers with a person in the page (the real `npm start`, 1366x800, the plain URL with a link's settings): a
// relay of 4 coached by the weak judge (models/relay-judge-weak) as tier 1, the rubric (standing in for a large hosted
// judge) on a quarter of each iteration's 16 actions, and the person (tier 3) on the 2 of those where the two disagree
// most; the judge is taught every 4 answers in the worker during the run. The Settings drawer shows the tiers and refuses
// a person share above the budget, naming the setting. Started, the run asks: the cards come up beside the charts while
// the run waits; two are answered with the mouse and the run goes on; the next iteration's cards are skipped ("Skip
// all"). The record of iteration 1 names the version taught mid-run (taught:relay-judge-weak-<12 hex>), iteration 2 was
// scored by it, and the page shows it. Over a minute here (two iterations, teaching in the worker on SwiftShader): in
// `npm run test:slow` (vite.config.ts SLOW_ONLY). Screenshots: test-results/tiers-*.png.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { chromiumAvailable, ensureBuilt, openUserPage, resultsDir, type UserPage } from '../helpers/browser.ts';
import { until, waitFor } from '../helpers/page-state.ts';
import { warnIfSkipped } from '../helpers/webgpu.ts';
import { relayConfig } from '../../src/core/domains/relay/team.ts';
import type { TierRecord } from '../../src/core/coach/coach.ts';

const have = chromiumAvailable();
warnIfSkipped('the tiers e2e (test/e2e/tiers.test.ts)', have);

const withConfig = (base: string, config: unknown) => `${base}?config=${encodeURIComponent(JSON.stringify(config))}`;
const text = async (page: Page, id: string) => ((await page.getByTestId(id).first().textContent()) ?? '').replace(/\s+/g, ' ').trim();
/** Each iteration's tier record, as the page holds the run's metrics. */
const records = (page: Page) => page.evaluate(() => ((window as unknown as { __mappa: { run: { metrics: { coach: { tiers?: unknown } }[] } } }).__mappa.run.metrics
  .map((m) => m.coach.tiers ?? null))) as Promise<(TierRecord | null)[]>;

describe.skipIf(!have.ok)('a coach in tiers with a person in the page (npm start, 1366x800)', () => {
  let user: UserPage;
  let page: Page;
  let problems: string[];
  const config = {
    ...relayConfig(4), iterations: 2, promptsPerIteration: 2, samplesPerPrompt: 2, evalEvery: 2, evalTasks: 4, checkpointEvery: 2,
    coach: { kind: 'model', model: 'models/relay-judge-weak', tiers: { budget: 0.25, pick: 'spread', teachEvery: 4, person: 0.125, personWait: 240 } },
  };

  beforeAll(async () => {
    await ensureBuilt('site');
    user = await openUserPage();
    ({ page, problems } = user);
  }, 600_000);
  afterAll(async () => {
    await user?.close();
  });

  it('shows the tier settings and refuses a person share above the budget by name', async () => {
    await page.goto(withConfig(user.site.url, config), { waitUntil: 'load' });
    await waitFor(page, (s) => s.state === 'ready' && s.team === 'relay-4', 180_000, 'the relay in tiers ready');
    await page.getByTestId('settings').locator('summary').click();
    expect(await page.getByTestId('cfg-coach.tiers').isChecked()).toBe(true);
    expect(await page.getByTestId('cfg-coach.tiers.person').inputValue()).toBe('0.125');
    expect(await page.getByTestId('cfg-coach.tiers.teachEvery').inputValue()).toBe('4');
    await page.getByTestId('cfg-coach.tiers.person').fill('0.5');
    await page.getByTestId('cfg-coach.tiers.person').press('Enter');
    await page.getByTestId('config-error').waitFor({ timeout: 60_000 });
    expect(await text(page, 'config-error')).toMatch(/share asked of a person \(tier 3\): 0\.5 is more than the share escalated to tier 2.*, 0\.25; the person is asked among the actions tier 2 scored/);
    await until(page, () => page.getByTestId('cfg-coach.tiers.person').inputValue(), (v) => v === '0.125', 30_000, 'the refused share put back');
    await page.getByTestId('settings').screenshot({ path: `${resultsDir}/tiers-settings.png` });
    await page.getByTestId('config-error').getByRole('button').click();
    expect(decodeURIComponent(page.url())).toContain('"person":0.125');
    // The box turns the tiers off (one coach: the panel leaves) and on again with their defaults (a fifth to the rubric, no person).
    await page.getByTestId('cfg-coach.tiers').uncheck();
    await page.getByTestId('tiers-panel').waitFor({ state: 'detached', timeout: 60_000 });
    expect(await page.getByTestId('cfg-coach.tiers.budget').count()).toBe(0);
    await page.getByTestId('cfg-coach.tiers').check();
    await page.getByTestId('tiers-panel').waitFor({ timeout: 60_000 });
    expect(await page.getByTestId('cfg-coach.tiers.budget').inputValue()).toBe('0.2');
    expect(await page.getByTestId('cfg-coach.tiers.person').inputValue()).toBe('0');
    expect(await page.getByTestId('cfg-coach.tiers.personWait').count()).toBe(0); // shown only with a person
    await page.getByTestId('settings').screenshot({ path: `${resultsDir}/tiers-settings-defaults.png` });
    // Back to the link's settings (the same run: nothing trained yet).
    await page.goto(withConfig(user.site.url, config), { waitUntil: 'load' });
    await waitFor(page, (s) => s.state === 'ready' && s.team === 'relay-4', 180_000, 'the relay in tiers ready again');
  }, 300_000);

  it('asks with cards during the run, goes on when they are answered or skipped, and names the judge taught mid-run', async () => {
    await page.getByTestId('btn-start').click();
    const asking = page.getByTestId('person-asking');
    await asking.waitFor({ timeout: 300_000 });
    expect((await waitFor(page, () => true, 1000, 'state')).state).toBe('running'); // the run waits, it is not paused
    const cards = page.getByTestId('ask-card');
    expect(await cards.count()).toBe(2);
    expect(await text(page, 'person-asking')).toMatch(/The coach asks you about 2 of 2 actions.*waits at most \d+ s more/);
    expect(await cards.first().getByTestId('ask-why').textContent()).toMatch(/small judge \(\d+\) and the stronger coach \(\d+\)|audit sample/);
    await page.screenshot({ path: `${resultsDir}/tiers-cards-mid-run.png` });
    await page.getByTestId('tiers-panel').screenshot({ path: `${resultsDir}/tiers-cards.png` });
    // Answered with the mouse: each card leaves as it is answered.
    await cards.first().getByTestId('ask-score-3').click();
    await until(page, () => cards.count(), (n) => n === 1, 30_000, 'the first card answered');
    await cards.first().getByTestId('ask-score-8').click();
    // The run goes on: iteration 1 ends with the person's two answers and a teaching of the judge.
    const first = (await until(page, () => records(page), (r) => r.length >= 1, 600_000, 'iteration 1 recorded'))[0]!;
    expect(first.scored).toEqual([12, 2, 2]);
    expect(first.person).toMatchObject({ asked: 2, answered: 2, skipped: 0 });
    expect(first.judge).toMatch(/\/models\/relay-judge-weak$/); // the site's own folder, by its URL
    expect(first.taught?.judge).toMatch(/^taught:relay-judge-weak-[0-9a-f]{12}$/);
    // Iteration 2 asks again (now of the taught judge's verdicts): skipped.
    await asking.waitFor({ timeout: 600_000 });
    await page.screenshot({ path: `${resultsDir}/tiers-cards-again.png` });
    await page.getByTestId('person-skip-all').click();
    await waitFor(page, (s) => s.state === 'ready' && s.iteration === 2, 600_000, 'the run at its end');
    const second = (await records(page))[1]!;
    expect(second.judge).toBe(first.taught!.judge); // the taught version scored iteration 2
    expect(second.person).toMatchObject({ asked: 2, answered: 0, skipped: 2 });
    expect(second.scored).toEqual([12, 4, 0]);
    expect(await text(page, 'tiers-taught')).toContain(`after iteration 1: taught ${first.taught!.judge}`);
    expect(await text(page, 'tiers-asks')).toBe('2, 2');
    expect(await text(page, 'person-outcome')).toMatch(/0 answered, 2 skipped, 0 unanswered .* 2 of 4 answered in this page/);
    await page.getByTestId('tiers-panel').screenshot({ path: `${resultsDir}/tiers-after.png` });
    await page.screenshot({ path: `${resultsDir}/tiers-end.png` });
    expect(problems).toEqual([]);
  }, 1_200_000);
});
