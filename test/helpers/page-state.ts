/**
 * Reading the page as the e2e tests drive it: its published state (window.__mappa.run, a RunState),
 * waiting for a condition on it, and opening a URL with every page and console error recorded.
 * Example: const { page, problems } = await open(browser, url);
 *          await waitFor(page, (s) => s.state === 'ready', 120_000, 'ready');
 */
import type { Browser, Page } from 'playwright-core';

export type PageState = { state?: string; team?: string; iteration: number; metrics: number; evals: { iteration: number; tasks: number; of?: number }[]; lanes?: number; errors: string[] };

/** What the page shows, read from its published state (window.__mappa.run: RunState). */
export function readState(page: Page): Promise<PageState> {
  return page.evaluate(() => {
    const run = (window as unknown as { __mappa?: { run?: Record<string, unknown> } }).__mappa?.run as
      { state: string; config?: { workflow?: { name: string } }; iteration: number; metrics: unknown[]; evals: { iteration: number; result: { tasks: number; of?: number } }[]; lanes?: number; errors: string[] } | undefined;
    return {
      state: run?.state, team: run?.config?.workflow?.name, iteration: run?.iteration ?? 0, metrics: run?.metrics.length ?? 0,
      evals: (run?.evals ?? []).map((e) => ({ iteration: e.iteration, tasks: e.result.tasks, of: e.result.of })),
      lanes: run?.lanes, errors: [...(run?.errors ?? [])],
    };
  });
}

/**
 * Reads `read()` every `stepMs` until `ok` holds, and returns that value; past `timeoutMs` it throws,
 * naming `what` and the last value read. Example: await until(page, () => views(page), (v) => v.done, 60_000, 'done')
 */
export async function until<T>(page: Page, read: () => Promise<T>, ok: (v: T) => boolean, timeoutMs: number, what: string, stepMs = 500): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if (ok(v)) return v;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs / 1000} s; last ${JSON.stringify(v).slice(0, 600)}`);
    await page.waitForTimeout(stepMs);
  }
}

export async function waitFor(page: Page, ok: (s: PageState) => boolean, timeoutMs: number, what: string): Promise<PageState> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    // The service worker's one isolating reload (plain hosts) destroys the context of a read in flight.
    const s = await readState(page).catch((e: Error) => {
      if (/context was destroyed|navigation/i.test(e.message)) return null;
      throw e;
    });
    if (!s) {
      await page.waitForTimeout(500);
      continue;
    }
    if (ok(s)) return s;
    if (s.errors.length) throw new Error(`${what}: the page shows errors: ${s.errors.join(' | ')}`);
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs / 1000} s; page state ${JSON.stringify(s)}`);
    await page.waitForTimeout(500);
  }
}

/** Opens `url` in a fresh context and records every page error and console error. */
export async function open(browser: Browser, url: string): Promise<{ page: Page; problems: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1000, height: 700 } });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  await page.goto(url, { waitUntil: 'load' });
  return { page, problems };
}
