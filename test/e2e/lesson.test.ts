// The lesson on the first screen, as a newcomer meets it: the README's `npm start`, the plain URL,
// a 1366x800 window. The lesson's button and its charts are above the fold; "Run the lesson" trains
// the relay team of 2, 4 and 6 agents under process and outcome reward (six runs, src/core/lab/experiments/lesson/lesson-maths.ts)
// and ends with the summary table: six final accuracies with their intervals and three paired gaps.
// A reload then shows the finished lesson from storage, without a click, with the date and its training
// time; every file its sentences cite is served. Prints the lesson's wall time. Skips loudly without chromium.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { chromiumAvailable, ensureBuilt, openUserPage, resultsDir, screenshot, type UserPage } from '../helpers/browser.ts';
import { waitFor } from '../helpers/page-state.ts';
import { warnIfSkipped } from '../helpers/webgpu.ts';
import type { LessonView } from '../../src/core/lab/experiments/lesson/lesson-maths.ts';
import { unserved } from './cited.ts';

const have = chromiumAvailable();
warnIfSkipped('the lesson e2e (test/e2e/lesson.test.ts)', have);

const WIDTH = 1366;
const HEIGHT = 800;

function lessonOf(page: Page): Promise<LessonView | null> {
  return page.evaluate(() => (window as unknown as { __mappa: { run: { lesson: LessonView | null } } }).__mappa.run.lesson);
}

async function waitLesson(page: Page, ok: (v: LessonView) => boolean, timeoutMs: number, what: string): Promise<LessonView> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await lessonOf(page);
    if (v && ok(v)) return v;
    if (v?.status === 'failed') throw new Error(`${what}: the lesson failed: ${v.message}`);
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs / 1000} s; lesson ${JSON.stringify(v?.runs)}`);
    await page.waitForTimeout(1000);
  }
}

describe.skipIf(!have.ok)('the lesson on the first screen (npm start, plain URL, 1366x800)', () => {
  let user: UserPage;
  let page: Page;
  let problems: string[];

  beforeAll(async () => {
    await ensureBuilt('site');
    user = await openUserPage({ viewport: { width: WIDTH, height: HEIGHT } });
    ({ page, problems } = user);
  }, 300_000);
  afterAll(async () => {
    await user?.close();
  });

  it('offers "Run the lesson" with its three charts above the fold', async () => {
    const button = page.getByTestId('btn-lesson');
    await button.waitFor({ timeout: 60_000 });
    expect(await button.textContent()).toContain('Run the lesson');
    for (const id of ['btn-lesson', 'lesson-chart-2', 'lesson-chart-4', 'lesson-chart-6']) {
      const box = (await page.getByTestId(id).boundingBox())!;
      expect(box.y + box.height, `${id} ends above the fold`).toBeLessThanOrEqual(HEIGHT);
    }
    await waitLesson(page, (v) => v.status === 'idle', 60_000, 'the idle lesson');
    // Nothing of the lesson is timed in this fresh browser: the page says its time will be measured, and quotes no figure.
    expect(await page.getByTestId('lesson-status').textContent()).toMatch(/Six runs, one after the other; the time left is measured from the first run's pace on this machine/);
    await page.screenshot({ path: `${resultsDir}/lesson-first-screen.png` });
  }, 120_000);

  it('runs the six runs and ends with the table: each run\'s accuracy with its interval, and the paired gaps', async () => {
    const started = Date.now();
    await page.getByTestId('btn-lesson').click();
    // The page loads the math team's model at boot; the lesson starts once it has.
    await waitFor(page, (s) => s.state === 'running', 240_000, 'the lesson running');
    const first = await waitLesson(page, (v) => v.runs.length >= 2 && v.remaining !== null, 600_000, 'the second run');
    console.log(`[e2e] lesson: first run done after ${((Date.now() - started) / 1000).toFixed(0)} s; estimate then: ${Math.round(first.remaining! / 60)} min left`);
    await waitLesson(page, (v) => v.runs.length >= 4, 900_000, 'the 4-agent runs');
    await page.waitForTimeout(3000);
    await page.screenshot({ path: `${resultsDir}/lesson-mid.png` });
    const done = await waitLesson(page, (v) => v.status === 'done', 1_200_000, 'the lesson done');
    const seconds = (Date.now() - started) / 1000;
    console.log(`[e2e] the whole lesson: ${seconds.toFixed(0)} s wall (${(seconds / 60).toFixed(1)} min) after "Run the lesson"; the page counted ${done.elapsed.toFixed(0)} s`);
    console.log(`[e2e] seconds per run: ${done.runs.map((r) => `${r.n} ${r.mode} ${r.seconds?.toFixed(0)} s`).join(', ')}`);
    expect(done.runs).toHaveLength(6);
    expect(done.runs.every((r) => r.done && r.iteration === done.plan.iterations)).toBe(true);
    for (const row of done.rows) {
      console.log(`[e2e] ${row.words}`);
      expect(row.final.process && row.final.outcome && row.gap).toBeTruthy();
      expect(row.curves.process[0].iteration).toBe(0);
      expect(row.curves.outcome[0].iteration).toBe(0);
      expect(row.agents.every((a) => a.base && a.process && a.outcome)).toBe(true);
    }
    // The table: one row per size, each with two accuracies and intervals and a paired gap.
    const summary = page.getByTestId('lesson-summary');
    await summary.waitFor();
    for (const n of [2, 4, 6]) {
      const text = (await page.getByTestId(`lesson-row-${n}`).textContent()) ?? '';
      expect(text).toMatch(/\d+\.\d % \[\d+\.\d, \d+\.\d\].*\d+\.\d % \[\d+\.\d, \d+\.\d\].*pts \[[-+]?\d+\.\d, [-+]?\d+\.\d\]/);
    }
    expect(await page.getByTestId('lesson-words').textContent()).toMatch(/6 agents: process .* vs outcome .*\(paired, the same 100 problems\)/);
    expect(await page.getByTestId('lesson-status').textContent()).toMatch(/^Trained on .* in \d+ (s|min \d\d s) of training on this machine\.$/);
    expect(await unserved(page, user.site.url)).toEqual([]);
    await page.getByTestId('lesson').screenshot({ path: `${resultsDir}/lesson-summary.png` });
    await screenshot(page, 'lesson-page');
    expect(problems).toEqual([]);
  }, 1_500_000);

  it('a reload shows the finished lesson from storage, without a click: its table, the date and its training time', async () => {
    const t0 = Date.now();
    await page.reload({ waitUntil: 'load' });
    const v = await waitLesson(page, (x) => x.status === 'done' && Boolean(x.readBack), 60_000, 'the lesson read back');
    await page.getByTestId('lesson-summary').waitFor({ timeout: 10_000 });
    console.log(`[e2e] after a reload the lesson's summary showed in ${((Date.now() - t0) / 1000).toFixed(1)} s; trained ${v.trained?.seconds.toFixed(0)} s`);
    expect(v.trained!.seconds).toBeGreaterThan(5); // the training time, not the read-back's
    const status = (await page.getByTestId('lesson-status').textContent()) ?? '';
    console.log(`[e2e] ${status}`);
    expect(status).toMatch(/^Trained on .* in \d+ (s|min \d\d s) of training on this machine, kept in this browser\.$/);
    expect(await page.getByTestId('btn-lesson').textContent()).toContain('Run the lesson again');
    for (const n of [2, 4, 6]) expect(await page.getByTestId(`lesson-row-${n}`).textContent()).toMatch(/pts \[/);
    await page.getByTestId('lesson').screenshot({ path: `${resultsDir}/lesson-reloaded.png` });
    expect(problems).toEqual([]);
  }, 120_000);
});
