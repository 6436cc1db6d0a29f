// The coach says what it is, and a run ends in words (the real `npm start`, 1366x800): a relay run coached
// by a weak judge names the coach and its measured ranking, and, having ended below its untrained team
// beyond the interval, says so in words with the likely cause; the inspector colours each action by the
// rater's verdict beside the judge's score; the size under Start is timed from the run's own iterations;
// then "⇄ Process vs outcome" on the finished run trains its twin and draws the twin's held-out line, with
// intervals, beside the run's. About 50 s here: in `npm run test:slow` (vite.config.ts SLOW_ONLY).
// Screenshots in test-results/truth-*.png. Skips loudly without chromium.
//
// The weak judge is test/fixtures/relay-judge-weak (the relay judge shipped before a better one), served
// at /fixtures/ because the server is started with MAPPA_SERVE_FIXTURES=1 (vite.config.ts; never built).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { chromiumAvailable, collectProblems, ensureBuilt, launchChromium, npmStart, resultsDir, type StartedSite } from '../helpers/browser.ts';
import { readState, until, waitFor } from '../helpers/page-state.ts';
import { warnIfSkipped } from '../helpers/webgpu.ts';
import { relayConfig } from '../../src/core/domains/relay/team.ts';
import { unserved } from './cited.ts';

const have = chromiumAvailable();
warnIfSkipped('the coach e2e (test/e2e/coach.test.ts)', have);

const withConfig = (base: string, config: unknown) => `${base}?config=${encodeURIComponent(JSON.stringify(config))}`;

describe.skipIf(!have.ok)('the coach says what it is, and a run ends in words (npm start, 1366x800)', () => {
  let site: StartedSite;
  let browser: Browser;
  const problems: string[] = [];

  beforeAll(async () => {
    await ensureBuilt('site');
    site = await npmStart({ env: { MAPPA_SERVE_FIXTURES: '1' } });
    browser = await launchChromium();
  }, 300_000);
  afterAll(async () => {
    await browser?.close();
    await site?.close();
  });

  describe('a run coached by a weak judge, then "⇄ Process vs outcome" on it', () => {
    let context: BrowserContext;
    let page: Page;
    const weak = {
      ...relayConfig(4), iterations: 15, evalEvery: 15, evalTasks: 100, checkpointEvery: 15,
      coach: { kind: 'model', model: './fixtures/relay-judge-weak', template: 'generic' },
    };
    afterAll(async () => context?.close());

    it('says what the coach is, and that the run ended below the untrained team, with the likely cause', async () => {
      context = await browser.newContext({ viewport: { width: 1366, height: 800 } });
      page = await context.newPage();
      collectProblems(page, problems);
      await page.goto(withConfig(site.url, weak), { waitUntil: 'load' });
      await waitFor(page, (s) => s.state === 'ready' && s.team === 'relay-4', 120_000, 'the weakly coached relay ready');
      const coach = (await page.getByTestId('coach-line').textContent()) ?? '';
      console.log(`[e2e] ${coach}`);
      expect(coach).toMatch(/judge fixtures\/relay-judge-weak \(AI\).*ranks 61\.7 % \[57\.3, 66\.0\].*fixtures\/relay-judge-weak\/report\.json.*below about 79 %/);
      expect(await unserved(page, site.url)).toEqual([]);
      const before = (await page.getByTestId('run-size').textContent()) ?? '';
      const started = Date.now();
      await page.getByTestId('btn-start').click();
      await waitFor(page, (s) => s.state === 'ready' && s.iteration === 15 && s.evals.some((e) => e.iteration === 15 && e.of === undefined), 400_000, 'the run finished');
      console.log(`[e2e] the weakly coached relay of 4: 15 iterations and its evaluations in ${((Date.now() - started) / 1000).toFixed(0)} s`);
      const verdict = (await page.getByTestId('run-verdict').textContent()) ?? '';
      console.log(`[e2e] ${verdict}`);
      expect(verdict).toMatch(/After iteration 15 \(the end of the run\), on 100 held-out problems/);
      expect(verdict).toMatch(/held-out greedy on 100 problems: untrained .* -> trained .* paired/);
      expect(verdict).toMatch(/held-out T=1 on 100 problems/);
      const warning = (await page.getByTestId('run-warning').textContent()) ?? '';
      expect(warning).toMatch(/The trained team is worse than the untrained one, beyond the interval .*Likely cause: the coach, judge fixtures\/relay-judge-weak \(AI\), ranks only 61\.7 %/);
      // The inspector colours each action by the rater's verdict, the judge's score beside it.
      const card = page.getByTestId('action').first();
      expect(await card.getAttribute('data-colour-by')).toBe('rater');
      expect(await page.getByTestId('judge-score').count()).toBeGreaterThan(0);
      // The time the page states comes from this run's iterations now.
      const after = (await page.getByTestId('run-size').textContent()) ?? '';
      console.log(`[e2e] size before: ${before} | after: ${after}`);
      expect(before).toMatch(/not timed on this machine yet/);
      expect(after).toMatch(/about [\d.]+ s an iteration here/);
      await page.screenshot({ path: `${resultsDir}/truth-weak-judge.png`, fullPage: true });
      await page.getByTestId('verdict').screenshot({ path: `${resultsDir}/truth-weak-judge-verdict.png` });
      await card.screenshot({ path: `${resultsDir}/truth-weak-judge-card.png` });
      expect(problems).toEqual([]);
    }, 500_000);

    it('⇄ on the finished run trains its twin and draws the twin\'s held-out line, with intervals, beside the run\'s', async () => {
      const started = Date.now();
      await page.getByTestId('btn-compare').click();
      await page.getByTestId('partner-state').waitFor({ timeout: 60_000 });
      const twin = () => page.evaluate(() => {
        const p = (window as unknown as { __mappa: { run: { partner: { iteration: number; evals: { iteration: number; result: { of?: number } }[] } | null } } }).__mappa.run.partner;
        return p && { iteration: p.iteration, done: p.evals.some((e) => e.iteration === 15 && e.result.of === undefined) };
      });
      await page.waitForFunction(() => /outcome twin · greedy/.test(document.querySelector('[data-testid=chart-accuracy]')?.textContent ?? ''), undefined, { timeout: 120_000 });
      await until(page, async () => ({ twin: await twin(), state: (await readState(page)).state }),
        (v) => Boolean(v.twin?.done) && v.state === 'ready', 400_000, 'the twin finished and the run ready', 1000);
      console.log(`[e2e] ⇄ on a finished run: the outcome twin trained and evaluated in ${((Date.now() - started) / 1000).toFixed(0)} s`);
      const legend = (await page.getByTestId('chart-accuracy').textContent()) ?? '';
      console.log(`[e2e] accuracy chart: ${legend.replace(/\s+/g, ' ').slice(0, 400)}`);
      expect(legend).toMatch(/outcome twin · greedy/);
      expect(await page.getByTestId('partner-state').textContent()).toMatch(/the outcome twin: iteration 15 \/ 15/);
      await page.getByTestId('chart-accuracy').screenshot({ path: `${resultsDir}/truth-twin-chart.png` });
      await page.screenshot({ path: `${resultsDir}/truth-twin.png`, fullPage: true });
      expect(problems).toEqual([]);
    }, 500_000);
  });
});
