// A person corrects a judge in the page and teaches it (the real `npm start`, 1366x800, the plain URL with a link's
// settings): a relay of 4 coached by the weak judge (test/fixtures/relay-judge-weak, 61.7 % ranking) trains one
// iteration; 10 of its actions are corrected with the mouse (each set to the rater's verdict shown on its card: the
// person here reads the rubric's score, and the test says so); "Ask me" picks the actions the judge is least sure of and
// says why; "Teach the judge" teaches it in the worker with a progress bar and shows its ranking before and after; the
// Settings drawer's coach menu picks the taught version, whose run of the relay of 4 trains to its end and records the judge by the sha-256
// of its files (used.json in the run's checkpoint); a reload finds the 10 corrections and the version kept.
// Several minutes here: in `npm run test:slow` (vite.config.ts SLOW_ONLY). Screenshots: test-results/corrections-*.png.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { chromiumAvailable, collectProblems, ensureBuilt, launchChromium, npmStart, resultsDir, type StartedSite } from '../helpers/browser.ts';
import { waitFor } from '../helpers/page-state.ts';
import { warnIfSkipped } from '../helpers/webgpu.ts';
import { relayConfig } from '../../src/core/domains/relay/team.ts';

const have = chromiumAvailable();
warnIfSkipped('the corrections e2e (test/e2e/corrections.test.ts)', have);

const withConfig = (base: string, config: unknown) => `${base}?config=${encodeURIComponent(JSON.stringify(config))}`;
const text = async (page: Page, id: string) => ((await page.getByTestId(id).first().textContent()) ?? '').replace(/\s+/g, ' ').trim();

/** The used.json of a run's stored checkpoint (IndexedDB "mappa-sandbox", store "checkpoints"). */
async function usedOf(page: Page, runId: string): Promise<unknown> {
  return page.evaluate(async (id) => {
    const db: IDBDatabase = await new Promise((ok, no) => {
      const r = indexedDB.open('mappa-sandbox');
      r.onsuccess = () => ok(r.result);
      r.onerror = () => no(r.error);
    });
    const rec = await new Promise<{ files: Record<string, Uint8Array> } | undefined>((ok, no) => {
      const r = db.transaction('checkpoints').objectStore('checkpoints').get(id);
      r.onsuccess = () => ok(r.result);
      r.onerror = () => no(r.error);
    });
    const f = rec?.files['used.json'];
    return f ? JSON.parse(typeof f === 'string' ? f : new TextDecoder().decode(f)) : null;
  }, runId);
}

describe.skipIf(!have.ok)('correct a judge, teach it, coach with it (npm start, 1366x800)', () => {
  let site: StartedSite;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const problems: string[] = [];
  const weak = {
    ...relayConfig(4), iterations: 4, evalEvery: 4, evalTasks: 50, checkpointEvery: 4,
    coach: { kind: 'model', model: './fixtures/relay-judge-weak', template: 'generic' },
  };

  beforeAll(async () => {
    await ensureBuilt('site');
    site = await npmStart({ env: { MAPPA_SERVE_FIXTURES: '1' } });
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1366, height: 800 } });
    page = await context.newPage();
    collectProblems(page, problems);
  }, 600_000);
  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await site?.close();
  });

  let taughtSpec = '';

  it('corrects 10 actions with the mouse, asks, teaches the judge and shows its ranking before and after', async () => {
    await page.goto(withConfig(site.url, weak), { waitUntil: 'load' });
    await waitFor(page, (s) => s.state === 'ready' && s.team === 'relay-4', 180_000, 'the weakly coached relay ready');
    await page.getByTestId('btn-step').click();
    await waitFor(page, (s) => s.state === 'ready' && s.iteration === 1, 300_000, 'one iteration');
    await page.getByTestId('corrections-count').waitFor({ timeout: 60_000 });
    expect(await text(page, 'corrections-count')).toMatch(/^0 corrections · fixtures\/relay-judge-weak/);
    // Ten actions, each set to the rater's verdict on its card (the person reads the rubric's score here).
    let done = 0;
    const tabs = page.getByTestId('trajectory-tab');
    for (let t = 0; done < 10 && t < (await tabs.count()); t++) {
      await tabs.nth(t).click();
      const cards = page.getByTestId('action');
      for (let a = 0; done < 10 && a < (await cards.count()); a++) {
        const card = cards.nth(a);
        const rater = Number(await card.getByTestId('rater-score').textContent());
        await card.getByTestId(`score-${rater}`).click();
        await card.getByTestId('your-score').waitFor({ timeout: 30_000 });
        expect(Number(await card.getByTestId('your-score').textContent())).toBe(rater);
        done++;
        expect(await text(page, 'corrections-count')).toMatch(new RegExp(`^${done} correction`));
      }
    }
    expect(done).toBe(10);
    await page.getByTestId('corrections').scrollIntoViewIfNeeded();
    await page.screenshot({ path: `${resultsDir}/corrections-10.png` });
    // Ask me: the cards say why each was picked (the spread of the judge's score distribution).
    await page.getByTestId('btn-ask').click();
    await page.getByTestId('ask-card').first().waitFor({ timeout: 120_000 });
    const why = await text(page, 'ask-why');
    console.log(`[e2e] ask me: ${why}`);
    expect(why).toMatch(/^Picked because the judge is unsure of it: (spread \d+\.\d points: P\(\d+\) [.\d]+, P\(\d+\) [.\d]+|its answer has no score line)/);
    await page.getByTestId('ask-cards').screenshot({ path: `${resultsDir}/corrections-ask.png` });
    // Teach: a progress bar, then before/after.
    const started = Date.now();
    await page.getByTestId('btn-teach').click();
    await page.getByTestId('teach-progress').waitFor({ timeout: 60_000 });
    await page.screenshot({ path: `${resultsDir}/corrections-teaching.png` });
    await page.getByTestId('teach-result').waitFor({ timeout: 600_000 });
    const seconds = (Date.now() - started) / 1000;
    const result = await text(page, 'teach-result');
    console.log(`[e2e] taught in ${seconds.toFixed(0)} s (click to result): ${result}`);
    expect(result).toMatch(/taught:relay-judge-weak-[0-9a-f]{12} \(sha-256 [0-9a-f]{12}, from 10 corrections\): taught in [\d.]+ s/);
    expect(await text(page, 'ranking-before')).toMatch(/^\d+\.\d % \[\d+\.\d, \d+\.\d\] over \d+ pairs$/);
    expect(await text(page, 'ranking-after')).toMatch(/^\d+\.\d % \[\d+\.\d, \d+\.\d\] over \d+ pairs$/);
    expect(await text(page, 'heldout-after')).toMatch(/on the pass side, MAE [\d.]+ \(10 held out\)/);
    taughtSpec = /taught:relay-judge-weak-[0-9a-f]{12}/.exec(result)![0];
    await page.getByTestId('corrections').screenshot({ path: `${resultsDir}/corrections-taught.png` });
  }, 1_200_000);

  it('runs the relay of 4 coached by the taught judge, which the run records by the hash of its files', async () => {
    expect(taughtSpec).not.toBe('');
    // Picked from the Settings drawer's coach menu (the panel's "Coach with" offers the same versions).
    await page.getByTestId('settings').locator('summary').click();
    const menu = page.getByTestId('cfg-coach.kind');
    expect(await menu.locator('option').allTextContents()).toEqual(
      ['judge fixtures/relay-judge-weak (AI)', taughtSpec, 'rule (the rater)']);
    await menu.selectOption(taughtSpec);
    await waitFor(page, (s) => s.state === 'ready' && s.iteration === 0, 180_000, 'the run coached by the taught judge opened');
    const runId = await page.evaluate(() => (window as unknown as { __mappa: { run: { runId: string; coach: string } } }).__mappa.run.runId);
    expect(await page.evaluate(() => (window as unknown as { __mappa: { run: { coach: string } } }).__mappa.run.coach)).toBe(`model:${taughtSpec}`);
    expect(await menu.inputValue()).toBe(taughtSpec);
    await page.getByTestId('settings').screenshot({ path: `${resultsDir}/corrections-settings-menu.png` });
    await page.getByTestId('btn-start').click();
    await waitFor(page, (s) => s.state === 'ready' && s.iteration === 4 && s.evals.some((e) => e.iteration === 4 && e.of === undefined), 600_000,
      'the run coached by the taught judge finished');
    const verdict = await text(page, 'run-verdict');
    console.log(`[e2e] coached by ${taughtSpec}: ${verdict}`);
    expect(verdict).toMatch(/held-out greedy on 50 problems/);
    const used = (await usedOf(page, runId)) as { models: { role: string; path: string; sha256: string }[] };
    const judge = used.models.find((m) => m.role === 'judge')!;
    console.log(`[e2e] used.json judge: ${JSON.stringify(judge)}`);
    expect(judge.path).toBe(taughtSpec);
    expect(judge.sha256).toMatch(/^[0-9a-f]{64}$/);
    await page.screenshot({ path: `${resultsDir}/corrections-coached.png` });
  }, 900_000);

  it('after a reload, finds the corrections and the judge versions kept', async () => {
    await page.reload({ waitUntil: 'load' });
    await waitFor(page, (s) => s.state === 'ready' && s.team === 'relay-4', 180_000, 'ready after the reload');
    await page.getByTestId('corrections-count').waitFor({ timeout: 60_000 });
    // The taught judge keeps its line's book: the 10 corrections of relay-judge-weak.
    expect(await text(page, 'corrections-count')).toMatch(new RegExp(`^10 corrections · ${taughtSpec}`));
    expect(await text(page, 'judge-versions')).toContain(taughtSpec);
    const options = await page.getByTestId('coach-judge').locator('option').allTextContents();
    expect(options).toEqual(expect.arrayContaining(['fixtures/relay-judge-weak', taughtSpec]));
    await page.getByTestId('corrections').scrollIntoViewIfNeeded();
    await page.screenshot({ path: `${resultsDir}/corrections-reloaded.png` });
    expect(problems).toEqual([]);
  }, 600_000);
});
