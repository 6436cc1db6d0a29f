// The page at any team size, in front of a class, as a teacher meets it: the README's `npm start`, the plain
// URL, 1366x800, a fresh browser. With nothing stored the page fits in four screens; the team menu takes a
// relay of 128; the link is a few words (it was 44 KB, which `npm start` answered with HTTP 431) and reloads;
// two iterations train; while they do, a second tab on the plain URL can neither train nor delete, and says
// why; the charts are heat maps with the few agents that matter as lines, and the inspector shows the wrong
// steps only, the first wrong step first; a chart exports as a PNG that opens; the page at 128 agents stays
// within four screens with the settings right under the team; presenter mode makes the body text 16 px or more;
// "Reset all stored results" leaves nothing stored.
// Screenshots in test-results/team-size-*.png.
// About 3-5 minutes on 2 cores (two relay-128 iterations on wasm): in SLOW_TESTS. Skips loudly without chromium.

import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumAvailable, ensureBuilt, openUserPage, screenshot, type UserPage } from '../helpers/browser.ts';
import { readState, waitFor } from '../helpers/page-state.ts';
import { warnIfSkipped } from '../helpers/webgpu.ts';

const have = chromiumAvailable();
warnIfSkipped('team-size e2e suite (test/e2e/team-size.test.ts)', have);

/** Four screens of a 1366x800 laptop. */
const FOUR_SCREENS = 3200;
const height = (u: UserPage) => u.page.evaluate(() => document.documentElement.scrollHeight);

describe.skipIf(!have.ok)('the page at 128 agents, in front of a class', () => {
  let u: UserPage;
  beforeAll(async () => {
    await ensureBuilt('site');
    u = await openUserPage();
  }, 900_000);
  afterAll(async () => {
    await u?.close();
  });

  it('fits in four screens, reaches a relay of 128 from the menu, trains it, guards the other tabs, reloads, exports', async () => {
    const { page } = u;
    await waitFor(page, (s) => s.state === 'ready', 540_000, 'the default team ready');
    await page.screenshot({ path: 'test-results/team-size-first-screen.png' });
    await screenshot(page, 'team-size-fresh');
    const freshHeight = await height(u);
    expect(freshHeight).toBeLessThan(FOUR_SCREENS); // a fresh browser, nothing stored

    // The menu offers 128 agents (any other size goes in the number field beside it).
    await page.getByTestId('team-preset').selectOption('relay-128');
    await waitFor(page, (s) => s.state === 'ready' && s.team === 'relay-128', 540_000, 'relay-128 open');
    expect(await page.getByTestId('team-size').inputValue()).toBe('128');
    const link = page.url();
    expect(new URL(link).search).toBe('?team=relay&agents=128');
    expect(link.length).toBeLessThan(8 * 1024);
    expect(await page.getByTestId('team-strip').locator('button').count()).toBe(128);

    await page.getByTestId('btn-start').click();
    await waitFor(page, (s) => s.state === 'running', 120_000, 'training');

    // A second tab on the plain URL, while the first trains: nothing that trains or deletes is enabled, and it says why.
    const other = await page.context().newPage();
    await other.goto(new URL('/', link).href);
    await waitFor(other, (s) => s.state === 'ready', 540_000, 'the second tab ready');
    await other.getByTestId('elsewhere').waitFor({ timeout: 30_000 });
    expect(await other.getByTestId('elsewhere').textContent()).toMatch(/Another tab of this browser is training \(the run is training: relay-128\)/);
    for (const id of ['btn-start', 'btn-step', 'btn-reset', 'btn-compare', 'btn-lesson', 'btn-credit-methods', 'btn-scale', 'btn-reset-all']) {
      expect(await other.getByTestId(id).isDisabled(), id).toBe(true);
    }
    expect(await other.getByTestId('btn-start').getAttribute('title')).toMatch(/another tab of this browser is training/);
    await screenshot(other, 'team-size-second-tab');
    await other.close();

    await waitFor(page, (s) => s.metrics >= 2, 1_200_000, 'two iterations of relay-128');
    await page.getByTestId('btn-pause').click();
    await waitFor(page, (s) => s.state === 'ready', 600_000, 'paused');
    expect((await readState(page)).errors).toEqual([]);

    // The per-agent charts are heat maps (agent x iteration) with a value under the pointer and a few lines.
    const heat = page.getByTestId('chart-score');
    expect(await heat.getAttribute('data-agents')).toBe('128');
    await heat.locator('canvas').first().hover({ position: { x: 40, y: 30 } });
    expect(await page.getByTestId('chart-score-hover').textContent()).toMatch(/^agent\d+, iteration \d+: [\d.]+$/);
    expect(await page.getByTestId('chart-score-lines').count()).toBe(1);

    // The inspector: wrong steps only, the first wrong step first.
    await page.getByTestId('wrong-only').check();
    const cards = page.getByTestId('action');
    const shown = await cards.count();
    if (shown) {
      expect(await cards.first().getAttribute('data-first-wrong')).toBe('true');
      const verdicts = await cards.evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-verdict'))));
      expect(verdicts.every((v) => v < 5)).toBe(true); // wrong: the verdict that colours the card is below neutral
      expect(shown).toBeLessThanOrEqual(8);
    } else {
      expect(await page.getByTestId('inspector').textContent()).toMatch(/No wrong step in this trajectory/);
    }
    await page.getByTestId('inspector').screenshot({ path: 'test-results/team-size-inspector.png' });

    // Four screens at 128 agents, and the settings right under the team (no 128 boxes above them).
    const at128 = await height(u);
    const y = (id: string) => page.getByTestId(id).evaluate((e) => e.getBoundingClientRect().top + scrollY);
    expect(await y('settings')).toBeLessThan(1600);
    await screenshot(page, 'team-size-128');
    console.log(`[e2e] team-size: fresh page ${freshHeight} px, relay-128 after 2 iterations ${at128} px, Settings at y = ${Math.round(await y('settings'))}`);
    expect(at128).toBeLessThan(FOUR_SCREENS);

    // A chart as a PNG that opens.
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('chart-accuracy-png').click()]);
    const bytes = readFileSync((await download.path())!);
    expect(download.suggestedFilename()).toMatch(/\.png$/);
    expect([...bytes.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    const size = await page.evaluate(async (b64) => {
      const blob = await (await fetch(`data:image/png;base64,${b64}`)).blob();
      const img = await createImageBitmap(blob);
      return { w: img.width, h: img.height };
    }, bytes.toString('base64'));
    expect(size.w).toBeGreaterThan(300);
    expect(size.h).toBeGreaterThan(150);
    // The lesson's SVG charts as an SVG file that opens, caption included.
    const [svgFile] = await Promise.all([page.waitForEvent('download'), page.getByTestId('btn-svg').first().click()]);
    const svg = readFileSync((await svgFile.path())!, 'utf8');
    expect(svg).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    expect(svg).toContain('2 agents · held-out accuracy');
    const opened = await page.evaluate(async (text) => {
      const img = await createImageBitmap(await (await fetch(`data:image/svg+xml;charset=utf-8,${encodeURIComponent(text)}`)).blob()).catch(() => null);
      if (img) return img.width;
      const el = new Image();
      el.src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(text)}`;
      await el.decode();
      return el.naturalWidth;
    }, svg);
    expect(opened).toBeGreaterThan(200);

    // Reload: the same short link opens the same run with its two iterations.
    await page.reload();
    const back = await waitFor(page, (s) => s.state === 'ready' && s.metrics >= 2, 540_000, 'reloaded');
    expect(back.team).toBe('relay-128');
    expect(page.url()).toBe(link);

    // Presenter mode, for a projector: the lesson's body text 16 px or more on the screen.
    await page.getByTestId('presenter').check();
    const px = await page.getByTestId('mappa-line').evaluate((e) =>
      parseFloat(getComputedStyle(e).fontSize) * Number(getComputedStyle(document.body).zoom || 1));
    expect(px).toBeGreaterThanOrEqual(16);
    await page.screenshot({ path: 'test-results/team-size-presenter.png' });
    await page.getByTestId('presenter').uncheck();

    // Reset all stored results, for the next class: asked first, then every run is gone and the page opens afresh.
    page.once('dialog', (d) => void d.accept());
    await Promise.all([page.waitForEvent('load', { timeout: 120_000 }), page.getByTestId('btn-reset-all').click()]);
    const fresh = await waitFor(page, (s) => s.state === 'ready', 540_000, 'opened afresh after the reset');
    expect(fresh.metrics).toBe(0);
    const trained = await page.evaluate(async () => {
      type Lab = { saved(a: object): Promise<{ metrics: { iteration: number }[] }[]> };
      const lab = (window as unknown as { __mappa: { client: { lab: Lab } } }).__mappa.client.lab;
      return (await lab.saved({})).filter((r) => r.metrics.some((m) => m.iteration > 0)).length;
    });
    expect(trained).toBe(0); // the run opened again (its untrained team is measured anew), but none of its training is left
    expect(u.problems).toEqual([]);
  }, 2_400_000);
});
