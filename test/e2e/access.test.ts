// The page for every student (WCAG 2.2 AA), checked where it runs: the README's `npm start`, the plain URL, headless
// Chromium at 1366x800. axe-core (@axe-core/playwright; the wcag2a, wcag2aa, wcag21aa, wcag22aa and best-practice rules)
// reads six states: the first screen, a finished lesson, Settings open, a banner, the weak judge's cards and a relay of
// 128 after an iteration; any serious or critical violation fails, and every violation found is printed (colour contrast
// on its own line). The same page is driven by the keyboard alone, and after each action the focus is asserted to be on
// the control that follows the work, never on <body>: "Run the lesson" -> "Pause the lesson" -> "Go on with the lesson"
// (whose words the paused status quotes); Settings' iterations keep the focus while the value applies, and "abc" there
// is said in the banner; a dismissed banner hands the focus to the content; the weak judge's first card takes the focus,
// a digit key answers it and the next card takes the focus; Start -> Pause -> Start; the trajectory tabs are one Tab stop
// moved with the arrow keys. A focused control is never under the pinned banners, and at 200 % zoom (683 x 400 CSS px)
// the banners scroll with the page and the header's details open over them.
// Minutes here (the lesson's six runs, the weak judge's run, a relay-128 iteration): in `npm run test:slow`
// (vite.config.ts SLOW_ONLY). Screenshots: test-results/access-*.png. Skips loudly without chromium.
import { AxeBuilder } from '@axe-core/playwright';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { chromiumAvailable, ensureBuilt, openUserPage, resultsDir, type UserPage } from '../helpers/browser.ts';
import { waitFor } from '../helpers/page-state.ts';
import { warnIfSkipped } from '../helpers/webgpu.ts';
import { relayRuleScore } from '../../src/core/domains/relay/team.ts';
import type { ActionContext } from '../../src/core/coach/coach-format.ts';
import { EXPERIMENT_WORDS } from '../../src/core/lab/experiments/experiment-names.ts';

const have = chromiumAvailable();
warnIfSkipped('the accessibility e2e (test/e2e/access.test.ts)', have);

const TAGS = ['wcag2a', 'wcag2aa', 'wcag21aa', 'wcag22aa', 'best-practice'];
const text = async (page: Page, id: string) => ((await page.getByTestId(id).first().textContent()) ?? '').replace(/\s+/g, ' ').trim();

/**
 * axe on the page as it stands: prints every violation (colour contrast apart) and returns the serious and critical
 * ones, contrast included, as "rule (n nodes)".
 */
async function axe(page: Page, state: string): Promise<string[]> {
  const { violations } = await new AxeBuilder({ page }).withTags(TAGS).analyze();
  const line = (v: (typeof violations)[number]) => `${v.impact} ${v.id} (${v.nodes.length} nodes): ${v.help}\n${v.nodes.slice(0, 6)
    .map((n) => `      ${n.target.join(' ')}: ${(n.failureSummary ?? '').split('\n').slice(1).join(' ').trim().slice(0, 220)}`).join('\n')}`;
  const contrast = violations.filter((v) => v.id === 'color-contrast');
  const rest = violations.filter((v) => v.id !== 'color-contrast');
  const none = contrast.length ? 'no violation but colour contrast' : 'no violation';
  console.log(`[e2e] axe, ${state}: ${rest.length ? '' : none}${rest.map((v) => `\n  ${line(v)}`).join('')}`);
  // Colour contrast, one line per colour pair: its ratio, how many nodes, the first of them.
  const pairs = new Map<string, { n: number; first: string }>();
  for (const node of contrast.flatMap((v) => v.nodes)) {
    const d = (node.any.find((c) => c.id === 'color-contrast')?.data ?? {}) as { fgColor?: string; bgColor?: string; contrastRatio?: number };
    const key = `${d.fgColor} on ${d.bgColor}: ${d.contrastRatio}:1`;
    const p = pairs.get(key) ?? { n: 0, first: node.target.join(' ') };
    p.n++;
    pairs.set(key, p);
  }
  if (pairs.size) console.log(`[e2e] axe, ${state}, colour contrast (serious):${[...pairs].map(([k, p]) => `\n  ${k}, ${p.n} nodes (${p.first})`).join('')}`);
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} (${v.nodes.length} nodes)`);
}

/** Where the keyboard's focus is: the element's test id, else its tag and id; "BODY" when it is lost. */
function focused(page: Page): Promise<string> {
  return page.evaluate(() => {
    const e = document.activeElement;
    if (!e || e === document.body) return 'BODY';
    return e.getAttribute('data-testid') ?? `${e.tagName}${e.id ? `#${e.id}` : ''}`;
  });
}

/** Presses Tab until the focus is on `testId` (a keyboard user's way there), at most `max` times. */
async function tabTo(page: Page, testId: string, max = 250): Promise<void> {
  for (let k = 0; k < max; k++) {
    if ((await focused(page)) === testId) return;
    await page.keyboard.press('Tab');
  }
  throw new Error(`${testId} is not reached within ${max} Tab presses`);
}

/** Waits until the focus is on `want` (the page may hand it on after a render), and fails naming where it is. */
async function focusOn(page: Page, want: string | RegExp, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let now = '';
  for (;;) {
    now = await focused(page);
    if (typeof want === 'string' ? now === want : want.test(now)) return;
    if (Date.now() > deadline) break;
    await page.waitForTimeout(100);
  }
  expect(now, what).toBe(String(want));
}

const lessonStatus = (page: Page) => page.getByTestId('lesson').getAttribute('data-status');
async function lessonIs(page: Page, status: string, timeoutMs: number): Promise<void> {
  await page.locator(`[data-testid="lesson"][data-status="${status}"]`).waitFor({ timeout: timeoutMs });
}

describe.skipIf(!have.ok)('every student can use it: axe and the keyboard alone (npm start, 1366x800)', () => {
  let user: UserPage;
  let page: Page;
  let problems: string[];
  /** Serious and critical violations per state, asserted at the end of each step. */
  const found: Record<string, string[]> = {};

  beforeAll(async () => {
    await ensureBuilt('site');
    user = await openUserPage();
    ({ page, problems } = user);
  }, 600_000);
  afterAll(async () => {
    await user?.close();
  });

  it('the first screen', async () => {
    await waitFor(page, (s) => s.state === 'ready', 300_000, 'the page ready');
    found.first = await axe(page, 'the first screen');
    await page.screenshot({ path: `${resultsDir}/access-first-screen.png` });
    expect(found.first).toEqual([]);
  }, 400_000);

  it('the keyboard runs the lesson, pauses it and goes on: the focus follows Run -> Pause -> Go on', async () => {
    await tabTo(page, 'btn-lesson', 12);
    expect(await text(page, 'btn-lesson')).toBe('Run the lesson');
    await page.keyboard.press('Enter');
    await lessonIs(page, 'running', 240_000);
    await focusOn(page, 'btn-lesson-pause', 'Run the lesson -> Pause the lesson');
    // Let the first run train a while, then pause from the keyboard.
    await page.waitForFunction(() => /iteration [1-9]/.test(document.querySelector('[data-testid="lesson-status"]')?.textContent ?? ''), null,
      { timeout: 300_000 });
    await page.keyboard.press('Enter');
    await lessonIs(page, 'paused', 300_000);
    await focusOn(page, 'btn-lesson', 'Pause the lesson -> Go on with the lesson');
    const goOn = EXPERIMENT_WORDS.lesson.goOn;
    expect(await text(page, 'btn-lesson')).toBe(goOn);
    // The paused status names the button as it reads.
    expect(await text(page, 'lesson-status')).toContain(`press "${goOn}"`);
    expect(await page.getByTestId('lesson-status').getAttribute('role')).toBe('status');
    await page.keyboard.press('Enter');
    await lessonIs(page, 'running', 120_000);
    await focusOn(page, 'btn-lesson-pause', 'Go on with the lesson -> Pause the lesson');
    await lessonIs(page, 'done', 1_500_000);
    await focusOn(page, 'btn-lesson', 'the finished lesson keeps the focus on its button');
    expect(await text(page, 'btn-lesson')).toBe('Run the lesson again');
  }, 1_800_000);

  it('a finished lesson', async () => {
    expect(await lessonStatus(page)).toBe('done');
    await page.getByTestId('lesson-summary').waitFor({ timeout: 30_000 });
    found.finished = await axe(page, 'a finished lesson');
    expect(found.finished).toEqual([]);
  }, 120_000);

  it('Settings open: iterations keep the focus while they apply, and "abc" is said in the banner', async () => {
    await waitFor(page, (s) => s.state === 'ready', 120_000, 'the page ready after the lesson');
    await page.getByTestId('settings').locator('summary').focus();
    await page.keyboard.press('Enter');
    expect(await page.getByTestId('settings').getAttribute('open')).not.toBeNull();
    found.settings = await axe(page, 'Settings open');
    await page.getByTestId('settings').screenshot({ path: `${resultsDir}/access-settings.png` });
    const iterations = page.getByTestId('cfg-iterations');
    const before = await iterations.inputValue();
    await iterations.focus();
    await page.keyboard.press('Control+A');
    await page.keyboard.type(String(Number(before) + 1));
    await page.keyboard.press('Enter');
    // The value applies (the run reopens); the field keeps the focus throughout.
    for (let k = 0; k < 15; k++) {
      expect(await focused(page), `iterations keep the focus ${k * 100} ms after Enter`).toBe('cfg-iterations');
      await page.waitForTimeout(100);
    }
    await waitFor(page, (s) => s.state === 'ready', 120_000, 'the new value applied');
    expect(await focused(page)).toBe('cfg-iterations');
    // Not a number: the field shows the value in force, and the banner says so in the same words.
    await page.keyboard.press('Control+A');
    await page.keyboard.type('abc');
    await page.keyboard.press('Enter');
    await page.getByTestId('config-error').waitFor({ timeout: 10_000 });
    expect(await text(page, 'config-error')).toMatch(/iterations: not a number; it accepts .*, and keeps \d+/);
    expect(await iterations.inputValue()).toBe(String(Number(before) + 1));
    expect(await page.getByTestId('config-error').getAttribute('role')).toBe('alert');
    expect(found.settings).toEqual([]);
  }, 300_000);

  it('a banner: axe, no focus under it, its dismiss button named, and the focus on the content once it is dismissed', async () => {
    found.banner = await axe(page, 'a banner');
    await page.screenshot({ path: `${resultsDir}/access-banner.png` });
    // Tab through the page's first stops from the top: none is hidden under the pinned strip.
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.locator('h1').click();
    const hidden: string[] = [];
    for (let k = 0; k < 40; k++) {
      await page.keyboard.press('Tab');
      const r = await page.evaluate(() => {
        const e = document.activeElement as HTMLElement | null;
        const strip = document.querySelector('[data-testid="banners"]')!;
        if (!e || strip.contains(e)) return null;
        const a = e.getBoundingClientRect();
        const b = strip.getBoundingClientRect();
        return { id: e.getAttribute('data-testid') ?? e.tagName, top: a.top, height: a.height, stripTop: b.top, stripBottom: b.bottom };
      });
      if (r && r.height > 0 && r.top < r.stripBottom - 1 && r.top + r.height > r.stripTop + 1) {
        hidden.push(`${r.id} at y ${r.top.toFixed(0)}-${(r.top + r.height).toFixed(0)} under the banners (y ${r.stripTop.toFixed(0)}-${r.stripBottom.toFixed(0)})`);
      }
    }
    expect(hidden).toEqual([]);
    // 200 % zoom: the banners scroll with the page, and the header's details open over them.
    await page.setViewportSize({ width: 683, height: 400 });
    expect(await page.getByTestId('banners').evaluate((e) => getComputedStyle(e).position)).toBe('static');
    const details = page.locator('details.more').first();
    if (await details.count()) {
      await details.locator('summary').click();
      const over = await details.evaluate((d) => {
        const pop = d.querySelector('.detail') as HTMLElement | null;
        if (!pop) return true;
        const r = pop.getBoundingClientRect();
        const hit = document.elementFromPoint(r.left + r.width / 2, Math.min(r.bottom - 2, r.top + 20));
        return Boolean(hit && pop.contains(hit));
      });
      await page.screenshot({ path: `${resultsDir}/access-zoom-200.png` });
      await details.locator('summary').click();
      expect(over, 'the details popup is on top').toBe(true);
    }
    await page.setViewportSize({ width: 1366, height: 800 });
    const dismiss = page.getByTestId('config-error').getByRole('button', { name: 'Dismiss: configuration refused' });
    await dismiss.focus();
    await page.keyboard.press('Enter');
    await page.getByTestId('config-error').waitFor({ state: 'detached', timeout: 10_000 });
    await focusOn(page, /^DIV#content$|^button$/i, 'a dismissed banner -> the content');
    expect(found.banner).toEqual([]);
  }, 300_000);

  it('the weak judge\'s cards: the first takes the focus, a digit key or a score button answers it, the next takes the focus', async () => {
    await page.getByTestId('guided-step').waitFor({ timeout: 30_000 });
    await tabTo(page, 'btn-guided');
    expect(await text(page, 'btn-guided')).toBe('Correct a weak judge');
    await page.keyboard.press('Enter');
    const step = page.getByTestId('guided-step');
    await step.getByTestId('ask-card').first().waitFor({ timeout: 900_000 });
    await focusOn(page, 'ask-card', 'the cards came -> the first card');
    found.cards = await axe(page, 'the weak judge\'s cards');
    await step.screenshot({ path: `${resultsDir}/access-cards.png` });
    const rubric = async () => {
      const card = page.locator('[data-testid="ask-card"]:focus');
      const input = (await card.getByTestId('ask-input').textContent()) ?? '';
      const reply = ((await card.getByTestId('ask-reply').textContent()) ?? '').replace(/^replied: /, '');
      return relayRuleScore({ input, output: reply, final: false } as ActionContext).score; // the rubric plays the person
    };
    const count = async () => text(page, 'guided-count');
    expect(await count()).toMatch(/^0 of 10$/);
    expect(await page.getByTestId('guided-count').getAttribute('role')).toBe('status');
    // A digit key on the focused card ("t" for 10).
    const first = await rubric();
    await page.keyboard.press(first === 10 ? 't' : String(first));
    await page.waitForFunction(() => document.querySelector('[data-testid="guided-count"]')?.textContent?.startsWith('1 of'), null, { timeout: 60_000 });
    await focusOn(page, 'ask-card', 'an answered card -> the next card');
    // A score button, named by what it acts on, pressed from the keyboard.
    const second = await rubric();
    const button = page.locator('[data-testid="ask-card"]:focus').getByTestId(`ask-score-${second}`);
    expect(await button.getAttribute('aria-label')).toMatch(new RegExp(`^Score ${second} for Relay agent \\d+$`));
    await button.focus();
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.querySelector('[data-testid="guided-count"]')?.textContent?.startsWith('2 of'), null, { timeout: 60_000 });
    await focusOn(page, 'ask-card', 'a card answered by its button -> the next card');
    expect(found.cards).toEqual([]);
  }, 1_200_000);

  it('a relay of 128 after an iteration: Start -> Pause -> Start from the keyboard, the tabs one Tab stop', async () => {
    await page.goto(`${new URL('/', page.url()).href}?team=relay&agents=128`, { waitUntil: 'load' });
    await waitFor(page, (s) => s.state === 'ready' && s.team === 'relay-128', 540_000, 'relay-128 open');
    await page.getByTestId('btn-start').focus();
    await page.keyboard.press('Enter');
    await waitFor(page, (s) => s.state === 'running', 120_000, 'training');
    await focusOn(page, 'btn-pause', 'Start -> Pause');
    await waitFor(page, (s) => s.metrics >= 1, 600_000, 'one relay-128 iteration');
    await page.keyboard.press('Enter');
    await waitFor(page, (s) => s.state === 'ready', 300_000, 'paused');
    await focusOn(page, 'btn-start', 'Pause -> Start');
    found.relay128 = await axe(page, 'a relay of 128 after an iteration');
    await page.screenshot({ path: `${resultsDir}/access-relay-128.png` });
    // The trajectory tabs: one Tab stop, the arrow keys move the selection and the focus.
    const tabs = page.getByTestId('trajectory-tab');
    expect(await tabs.count()).toBeGreaterThan(1);
    expect(await page.locator('[data-testid="trajectory-tab"][tabindex="0"]').count()).toBe(1);
    await page.locator('[data-testid="trajectory-tab"][tabindex="0"]').focus();
    await page.keyboard.press('ArrowRight');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('trajectory-tab-1');
    expect(await tabs.nth(1).getAttribute('aria-selected')).toBe('true');
    await page.keyboard.press('Tab');
    expect(await focused(page)).not.toBe('trajectory-tab');
    expect(problems).toEqual([]);
    expect(found.relay128).toEqual([]);
  }, 1_200_000);
});
