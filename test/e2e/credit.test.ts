// The credit methods in the page, as a reader meets them (the real `npm start`, 1366x800): the lesson says
// that an AI judge (models/relay-judge, with its measured ranking) scores every step of its process runs and
// that outcome reward needs no coach, and the introduction says what that judge reads, how it was trained and
// how often it agrees with the rubric; the reward setting offers the five credit methods with a hint of what
// each needs, costs and gets (counterfactual: replays of each agent's turn, generations, not coach calls); the
// credit view shows one trajectory's credit under process, outcome and groups side by side, saying that a
// batch with no replays has no counterfactual credit, then, after a step under reward counterfactual, the
// counterfactual column too; and "Compare credit methods" trains counterfactual and groups at 4 agents beside
// the lesson's own process and outcome runs, and ends with the table (needs, costs, gets) in words; that table and
// the lesson's export as an SVG that parses and a PNG that decodes at twice its size. Prints the comparison's wall
// time, from scratch and again with the lesson's runs stored. About 1 minute here: in `npm run test:slow`
// (vite.config.ts SLOW_ONLY).
// Screenshots in test-results/credit-*.png. Skips loudly without chromium.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { chromiumAvailable, collectProblems, ensureBuilt, launchChromium, npmStart, resultsDir, type StartedSite } from '../helpers/browser.ts';
import { until, waitFor } from '../helpers/page-state.ts';
import { warnIfSkipped } from '../helpers/webgpu.ts';
import { relayConfig } from '../../src/core/domains/relay/team.ts';
import type { CreditMethodsView } from '../../src/core/lab/experiments/credit-methods/credit-methods-maths.ts';
import type { LessonView } from '../../src/core/lab/experiments/lesson/lesson-maths.ts';
import { unserved } from './cited.ts';

const have = chromiumAvailable();
warnIfSkipped('the credit methods e2e (test/e2e/credit.test.ts)', have);

const WIDTH = 1366;
const HEIGHT = 800;
const withConfig = (base: string, config: unknown) => `${base}?config=${encodeURIComponent(JSON.stringify(config))}`;

function views(page: Page): Promise<{ lesson: LessonView | null; methods: CreditMethodsView | null; mode?: string; trajectories: number; iteration: number }> {
  return page.evaluate(() => {
    const run = (window as unknown as { __mappa: { run: { lesson: LessonView | null; creditMethods: CreditMethodsView | null;
      config?: { rewards: { mode: string } }; trajectories: { iteration: number; trajectories: unknown[] } | null } } }).__mappa.run;
    return { lesson: run.lesson, methods: run.creditMethods, mode: run.config?.rewards.mode, trajectories: run.trajectories?.trajectories.length ?? 0,
      iteration: run.trajectories?.iteration ?? 0 };
  });
}

describe.skipIf(!have.ok)('the credit methods in the page (npm start, 1366x800)', () => {
  let site: StartedSite;
  let browser: Browser;
  let page: Page;
  const problems: string[] = [];
  // The relay of 4, short and quickly evaluated, one prompt played twice: each step shows a small batch in the inspector.
  const relay = { ...relayConfig(4), iterations: 3, evalEvery: 3, evalTasks: 20, checkpointEvery: 3, promptsPerIteration: 1, samplesPerPrompt: 2 };

  beforeAll(async () => {
    await ensureBuilt('site');
    site = await npmStart();
    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: WIDTH, height: HEIGHT } });
    page = await context.newPage();
    collectProblems(page, problems);
    await page.goto(withConfig(site.url, relay), { waitUntil: 'load' });
    await waitFor(page, (s) => s.state === 'ready' && s.team === 'relay-4', 180_000, 'the relay of 4 ready');
  }, 300_000);
  afterAll(async () => {
    await browser?.close();
    await site?.close();
  });

  it('the lesson names its AI judge and its ranking, and the introduction says what the judge reads, how it learnt and how often it agrees', async () => {
    const lesson = await until(page, async () => (await views(page)).lesson, (v) => Boolean(v?.coach), 60_000, 'the lesson\'s coach');
    const coach = (await page.getByTestId('lesson-coach').textContent()) ?? '';
    console.log(`[e2e] lesson: ${coach}`);
    expect(coach).toMatch(/^An AI judge, models\/relay-judge, scores every step of the process runs: it ranks \d+\.\d % \[\d+\.\d, \d+\.\d\] of an agent's differently-rated steps as the rubric does \(\d+ held-out steps, models\/relay-judge\/report\.json\)\. Outcome reward needs no coach/);
    expect(lesson!.coach!.ranking).not.toBeNull();
    // The lesson's button and charts stay above the fold, the comparison's button beside them.
    for (const id of ['btn-lesson', 'btn-credit-methods', 'lesson-chart-2', 'lesson-chart-4', 'lesson-chart-6']) {
      const box = (await page.getByTestId(id).boundingBox())!;
      expect(box.y + box.height, `${id} ends above the fold`).toBeLessThanOrEqual(HEIGHT);
    }
    await page.screenshot({ path: `${resultsDir}/credit-first-screen.png` });
    await page.getByTestId('intro').locator('summary').click();
    const judge = (await page.getByTestId('intro-relay-judge').textContent())?.replace(/\s+/g, ' ') ?? '';
    const prompt = (await page.getByTestId('intro-judge-prompt').textContent()) ?? '';
    const trained = (await page.getByTestId('intro-relay-judge').locator('xpath=following-sibling::p[1]').textContent())?.replace(/\s+/g, ' ') ?? '';
    console.log(`[e2e] intro: ${judge} | ${JSON.stringify(prompt)} | ${trained}`);
    expect(judge).toMatch(/The relay team's coach \(the lesson's process runs\) is an AI judge, models\/relay-judge, a 121k-parameter model\. It reads the agent's reply, then its input, which ends with the step/);
    expect(prompt).toBe('Relay agent 2 replied "2".\nRelay agent 2 of 4: reply with the last digit of the sum.\n\n7 + 5');
    expect(trained).toMatch(/trained, from models\/relay's weights, in 3 stages, on 114,437 of the relay team's own steps, each rated by the rubric.*It ranks \d+\.\d % \[\d+\.\d, \d+\.\d\] of an agent's differently-rated steps as the rubric does \(\d+ held-out steps, models\/relay-judge\/report\.json\)/);
    await page.getByTestId('intro').screenshot({ path: `${resultsDir}/credit-intro.png` });
    expect(await unserved(page, site.url)).toEqual([]);
  }, 120_000);

  it('the reward setting offers the five credit methods, each with what it needs, costs and gets', async () => {
    await page.getByTestId('settings').locator('summary').click();
    const select = page.getByTestId('cfg-rewards.mode');
    const options = await select.locator('option').allTextContents();
    console.log(`[e2e] reward options: ${options.join(' | ')}`);
    expect(options).toEqual(['process (a coach scores each step)', 'outcome (the final answer only)', 'mixed (process and outcome)',
      'counterfactual (replays, no coach)', 'groups (same input, no coach)']);
    expect(await page.getByTestId('reward-hint').textContent()).toMatch(/^Needs a coach; costs a coach call for every agent of every rollout/);
  }, 60_000);

  it('the credit view: process, outcome and groups side by side; no replays in this batch, so no counterfactual', async () => {
    await page.getByTestId('btn-step').click();
    await until(page, () => views(page), (v) => v.trajectories > 0, 120_000, 'a process batch');
    await waitFor(page, (s) => s.state === 'ready', 60_000, 'the step done');
    const view = page.getByTestId('credit-view');
    expect(await view.getAttribute('data-tree')).toBe('false');
    for (const m of ['process', 'outcome', 'groups']) expect(await page.getByTestId(`credit-col-${m}`).count(), m).toBe(1);
    expect(await page.getByTestId('credit-col-counterfactual').count()).toBe(0);
    expect(await page.getByTestId('credit-no-tree').textContent()).toMatch(/This batch has no replays, so no counterfactual credit: run with reward counterfactual to see it\./);
    await page.getByTestId('inspector').scrollIntoViewIfNeeded();
    await page.getByTestId('inspector').screenshot({ path: `${resultsDir}/credit-view-process.png` });
  }, 180_000);

  it('under reward counterfactual the setting says it replays each agent\'s turn, and the credit view adds the counterfactual column', async () => {
    await page.getByTestId('cfg-rewards.mode').selectOption('counterfactual');
    await until(page, () => views(page), (v) => v.mode === 'counterfactual', 60_000, 'the counterfactual run open');
    await waitFor(page, (s) => s.state === 'ready', 120_000, 'the counterfactual run ready');
    const hint = (await page.getByTestId('reward-hint').textContent()) ?? '';
    console.log(`[e2e] ${hint}`);
    expect(hint).toMatch(/^Replays each agent's turn: every agent replies 2, 2, 2, 2 times to the same frozen input \(its fan-out\), so a prompt costs 60 agent generations \(2 samples, each a tree of 16 leaves and 30 generations\) instead of 8: 60 an iteration\. It costs generations, not coach calls/);
    expect(await page.getByTestId('run-size').textContent()).toMatch(/each a tree of replays: 16 leaves, 30 agent generations/);
    await page.getByTestId('settings').screenshot({ path: `${resultsDir}/credit-setting.png` });
    await page.getByTestId('btn-step').click();
    await until(page, () => views(page), (v) => v.mode === 'counterfactual' && v.trajectories === 1 * 2 * 16, 180_000, 'a tree of replays');
    await waitFor(page, (s) => s.state === 'ready', 60_000, 'the step done');
    expect(await page.getByTestId('credit-view').getAttribute('data-tree')).toBe('true');
    for (const m of ['process', 'outcome', 'groups', 'counterfactual']) expect(await page.getByTestId(`credit-col-${m}`).count(), m).toBe(1);
    expect(await page.getByTestId('credit-tree-note').textContent()).toMatch(/tree of replays/);
    await page.getByTestId('inspector').scrollIntoViewIfNeeded();
    await page.getByTestId('inspector').screenshot({ path: `${resultsDir}/credit-view-counterfactual.png` });
  }, 300_000);

  it('"Compare credit methods" trains counterfactual and groups beside the lesson\'s 4-agent runs and ends with the table', async () => {
    await page.evaluate(() => window.scrollTo(0, 0));
    const started = Date.now();
    await page.getByTestId('btn-credit-methods').click();
    await until(page, () => views(page), (v) => v.methods?.status === 'running', 60_000, 'the comparison running');
    await page.waitForTimeout(8000);
    await page.screenshot({ path: `${resultsDir}/credit-methods-running.png` });
    const done = (await until(page, () => views(page), (v) => v.methods?.status === 'done' || v.methods?.status === 'failed', 600_000, 'the comparison done')).methods!;
    const seconds = (Date.now() - started) / 1000;
    console.log(`[e2e] "Compare credit methods": ${seconds.toFixed(0)} s wall after the click (the page counted ${done.elapsed.toFixed(0)} s), `
      + 'training the lesson\'s 4-agent process and outcome runs too (a fresh browser)');
    expect(done.status).toBe('done');
    for (const r of done.rows) console.log(`[e2e] ${r.words}`);
    console.log(`[e2e] ${done.words}`);
    expect(done.rows.map((r) => r.method)).toEqual(['process', 'outcome', 'counterfactual', 'groups']);
    expect(done.rows.every((r) => r.final && r.generations === done.budget)).toBe(true);
    expect(done.rows.map((r) => r.coachCalls > 0)).toEqual([true, false, false, false]);
    expect(done.rows[0].needs).toBe('an AI judge, models/relay-judge');
    for (const m of ['process', 'counterfactual', 'groups']) {
      expect(await page.getByTestId(`method-row-${m}`).textContent(), m).toMatch(/\d+\.\d % \[\d+\.\d, \d+\.\d\].*pts \[[−+]?\d+\.\d, [−+]?\d+\.\d\]/);
    }
    expect(await page.getByTestId('credit-methods-words').textContent()).toMatch(/^At 4 agents and 960 generations each: process .*, outcome .*, counterfactual .*, groups .* \(greedy, 100 held-out problems; the untrained team \d+\.\d %\)\. Against outcome, paired: /);
    expect(await page.getByTestId('method-row-untrained').textContent()).toMatch(/untrained team.*\d+\.\d % \[/);
    // The lesson's 4-agent runs it trained are the lesson's own: the lesson draws them, and a later "Run the lesson" reuses them.
    const lesson = (await until(page, () => views(page), (v) => Boolean(v.lesson?.rows.find((r) => r.n === 4)?.gap), 30_000, 'the lesson\'s 4 agents')).lesson!;
    expect(lesson.status).toBe('paused');
    expect(lesson.runs.filter((r) => r.done).map((r) => `${r.n} ${r.mode}`)).toEqual(['4 process', '4 outcome']);
    await page.getByTestId('credit-methods').scrollIntoViewIfNeeded();
    await page.getByTestId('lesson').screenshot({ path: `${resultsDir}/credit-methods.png` });
    // Its table, and the lesson's, as pictures for a slide: the SVG parses, carries the title and the intervals, and the PNG
    // decodes at twice the SVG's size (export-table.ts draws the same layout at 2 device pixels a CSS pixel).
    for (const [where, title] of [['credit-methods', 'Credit methods at 4 agents, 960 agent generations each'],
      ['lesson-summary', 'Process vs outcome reward: held-out accuracy by team size']] as const) {
      const table = page.getByTestId(where).locator('table').first();
      const [svgFile] = await Promise.all([page.waitForEvent('download'), table.getByTestId('btn-table-svg').click()]);
      expect(svgFile.suggestedFilename(), where).toMatch(/\.svg$/);
      const svg = readFileSync((await svgFile.path())!, 'utf8');
      const parsed = await page.evaluate((text) => {
        const doc = new DOMParser().parseFromString(text, 'image/svg+xml');
        const root = doc.documentElement;
        return { error: doc.getElementsByTagName('parsererror').length > 0, tag: root.tagName, w: Number(root.getAttribute('width')),
          h: Number(root.getAttribute('height')), text: [...doc.querySelectorAll('text')].map((t) => t.textContent).join(' | ') };
      }, svg);
      expect(parsed.error, where).toBe(false);
      expect(parsed.tag).toBe('svg');
      expect(parsed.text).toContain(title);
      expect(parsed.text).toMatch(/\d+\.\d % \[\d+\.\d, \d+\.\d\]/); // a figure with its interval
      const [pngFile] = await Promise.all([page.waitForEvent('download'), table.getByTestId('btn-table-png').click()]);
      expect(pngFile.suggestedFilename(), where).toMatch(/\.png$/);
      const png = readFileSync((await pngFile.path())!);
      expect([...png.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
      const size = await page.evaluate(async (b64) => {
        const img = await createImageBitmap(await (await fetch(`data:image/png;base64,${b64}`)).blob());
        return { w: img.width, h: img.height };
      }, png.toString('base64'));
      console.log(`[e2e] ${where} table: SVG ${parsed.w} x ${parsed.h}, PNG ${size.w} x ${size.h}`);
      expect(parsed.w).toBeGreaterThan(300);
      expect(size).toEqual({ w: Math.round(parsed.w * 2), h: Math.round(parsed.h * 2) });
    }
    expect(await page.getByTestId('table-export-error').count()).toBe(0);
    // A reload reads it back from storage, with no click.
    await page.reload({ waitUntil: 'load' });
    const back = (await until(page, () => views(page), (v) => v.methods?.status === 'done', 60_000, 'the comparison read back')).methods!;
    expect(back.readBack).toBe(true);
    expect(await page.getByTestId('btn-credit-methods').textContent()).toContain('Compare credit methods again');
    // Again: the lesson's runs are stored now, so only counterfactual and groups are trained anew, to the same numbers.
    await waitFor(page, (s) => s.state === 'ready', 120_000, 'ready after the reload');
    const again = Date.now();
    await page.getByTestId('btn-credit-methods').click();
    await until(page, () => views(page), (v) => v.methods?.status === 'running', 60_000, 'the comparison running again');
    const redone = (await until(page, () => views(page), (v) => v.methods?.status === 'done' && !v.methods.readBack, 300_000, 'the comparison again')).methods!;
    console.log(`[e2e] "Compare credit methods again" (the lesson's runs stored): ${((Date.now() - again) / 1000).toFixed(0)} s wall`);
    expect(redone.rows.map((r) => r.final?.p)).toEqual(done.rows.map((r) => r.final?.p));
    expect(problems).toEqual([]);
  }, 700_000);
});
