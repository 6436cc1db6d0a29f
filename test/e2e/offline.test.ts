// The site's service worker (public/sw.js, registered by src/ui/service-worker.ts) in headless
// Chromium, on a plain static server that sets NO isolation headers (as a static host would):
//   1. the worker takes control, the page reloads once and is then crossOriginIsolated (the
//      worker adds COOP/COEP), with no reload loop; a page the user already acted on is not
//      reloaded under them: the reload is offered as a button;
//   2. with the network gone (context offline and the server closed), a reload still loads the
//      page, the embedded models (GET, HEAD, Range, a real 404 for an absent file) and a backend,
//      and the training worker loads the agent and judge models, all from the worker's cache.
// The lead's test of training offline lives elsewhere; this file is about the worker.
// Skips loudly without Debian's chromium.

import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, ConsoleMessage, Page } from 'playwright-core';
import {
  chromiumAvailable, ensureBuilt, launchChromium, resultsDir, screenshot, serveStatic, type StaticServer,
} from '../helpers/browser.ts';
import { warnIfSkipped } from '../helpers/webgpu.ts';

const have = chromiumAvailable();
warnIfSkipped('service worker e2e suite (test/e2e/offline.test.ts)', have);

/** What the page publishes for tests (src/ui/App.svelte), as far as this file reads it. */
type MappaWindow = {
  __mappa?: { backend?: { name: string }; error?: string; run?: { state: string; model: { name: string } | null; errors: string[] } };
  __swProbe?: number;
};

/** Size of models/agent/model.safetensors (the shipped tiny agent, 0.98M parameters in f32). */
const AGENT_WEIGHTS_BYTES = 3940800;

describe.skipIf(!have.ok)('service worker: isolation without headers, offline after one visit', () => {
  let server: StaticServer | undefined;
  let browser: Browser;
  let page: Page;
  let dist: string;
  let manifest: { version: string; files: Record<string, string> };

  beforeAll(async () => {
    ({ dist, manifest } = await snapshotOfBuild());
    server = await serveStatic(dist); // no COOP/COEP: isolation can only come from the worker
    browser = await launchChromium();
    // Its own context, not openPage()'s: service workers allowed whatever the other e2e files choose.
    const context = await browser.newContext({ serviceWorkers: 'allow', viewport: { width: 1000, height: 700 } });
    const echo = (from: string) => (m: ConsoleMessage) => {
      if (m.type() === 'error' || m.type() === 'warning') console.warn(`[${from} ${m.type()}] ${m.text()}`);
    };
    context.on('serviceworker', (w) => w.on('console', echo('service worker'))); // a failed precache says so there
    page = await context.newPage();
    page.on('console', echo('browser'));
    page.on('pageerror', (e) => console.warn(`[browser pageerror] ${e.message}`));
    await page.goto(server.url, { waitUntil: 'load' });
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('lists every file of the build, models and Pyodide included, and stamps its id into sw.js', () => {
    const files = Object.keys(manifest.files);
    expect(files).toContain('index.html');
    expect(files).toContain('models/agent/model.safetensors');
    expect(files).toContain('models/judge/model.safetensors');
    expect(files).toContain('pyodide/pyodide.asm.wasm');
    expect(files).toContain('docs/credit.md'); // the notes the page cites, readable offline too
    expect(files).toContain('docs/judges.md');
    expect(files).toContain('docs/credit.html'); // and as the pages the page links (scripts/doc-page.ts)
    expect(files).toContain('docs/judges.html');
    expect(files.some((f) => f.startsWith('assets/') && f.endsWith('.js'))).toBe(true);
    expect(files).not.toContain('sw.js');
    expect([...listed(dist)].filter((f) => f !== 'sw.js' && f !== 'precache.json').sort()).toEqual(files);
    const sw = fs.readFileSync(path.join(dist, 'sw.js'), 'utf8');
    expect(sw).toContain(`const BUILD = '${manifest.version}'`);
  });

  it('takes control and makes the page crossOriginIsolated with a single reload', async () => {
    await until(page, () => navigator.serviceWorker?.controller !== null && window.crossOriginIsolated, 90_000);
    await page.waitForLoadState('load');
    const state = await page.evaluate(() => ({
      isolated: window.crossOriginIsolated,
      sab: typeof SharedArrayBuffer === 'function',
      navigation: (performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming).type,
      flag: sessionStorage.getItem('mappa-sw-reloaded'),
      script: navigator.serviceWorker.controller?.scriptURL,
    }));
    // One reload (this document's navigation type), and the loop guard cleared once isolated.
    expect(state).toMatchObject({ isolated: true, sab: true, navigation: 'reload', flag: null });
    expect(state.script).toBe(`${server!.url}sw.js`);
    // The install finished before activation: this build's cache is complete.
    const cached = await page.evaluate(async (version) => {
      const cache = await caches.open(`mappa-site-${version}`);
      return { keys: (await cache.keys()).length, names: await caches.keys() };
    }, manifest.version);
    expect(cached.names).toEqual([`mappa-site-${manifest.version}`]);
    expect(cached.keys).toBe(Object.keys(manifest.files).length + 1); // + precache.json
    // No second reload: a marker set now is still there once the page has loaded its models.
    await page.evaluate(() => { (window as MappaWindow).__swProbe = 1; });
    await page.waitForFunction(() => {
      const m = (window as MappaWindow).__mappa;
      return Boolean(m?.error || m?.run?.errors.length || m?.run?.state === 'ready' || m?.run?.state === 'error');
    }, undefined, { timeout: 60_000 });
    expect(await page.evaluate(() => (window as MappaWindow).__swProbe)).toBe(1);
  });

  it('never reloads under the user: once they used the page, the reload is offered as a button', async () => {
    // A first visit in a fresh context, where the user acts (a key press) before the worker takes control.
    const context = await browser.newContext({ serviceWorkers: 'allow', viewport: { width: 1000, height: 700 } });
    try {
      const fresh = await context.newPage();
      await fresh.goto(server!.url, { waitUntil: 'load' });
      await fresh.evaluate(() => { (window as MappaWindow).__swProbe = 2; });
      await fresh.keyboard.press('Shift');
      await until(fresh, () => navigator.serviceWorker?.controller !== null, 90_000);
      await fresh.getByTestId('isolation-waits').waitFor({ timeout: 30_000 });
      expect(await fresh.evaluate(() => ({ probe: (window as MappaWindow).__swProbe, isolated: window.crossOriginIsolated })))
        .toEqual({ probe: 2, isolated: false });
      await screenshot(fresh, 'offline-isolation-offered');
      await fresh.getByTestId('btn-isolate').click();
      await until(fresh, () => window.crossOriginIsolated && (window as MappaWindow).__swProbe === undefined, 60_000);
    } finally {
      await context.close();
    }
  });

  it('reloads offline: the page, the embedded models and a backend come from the cache', async () => {
    // Playwright's offline mode does not reach the service worker's own fetches, so the server goes too.
    await page.context().setOffline(true);
    const closing = server!.close();
    server = undefined;
    await Promise.race([closing, new Promise((r) => setTimeout(r, 5_000))]);
    const url = page.url();
    await expect(fetch(url)).rejects.toThrow(); // nothing answers there any more

    await page.reload({ waitUntil: 'load' });
    expect(await page.title()).toBe('mappa-sandbox');
    const got = await page.evaluate(async () => {
      const config = await fetch('models/agent/config.json');
      const weights = await fetch('models/agent/model.safetensors');
      const head = await fetch('models/agent/model.safetensors', { method: 'HEAD' });
      const absent = await fetch('models/agent/special_tokens_map.json'); // logs a 404: expected
      const ranged = await fetch('models/agent/model.safetensors', { headers: { Range: 'bytes=0-7' } });
      const note = await fetch((document.querySelector('a[href="docs/credit.html"]') as HTMLAnchorElement | null)?.href ?? 'docs/credit.html'); // a citation's link
      return {
        note: { status: note.status, prediction: (await note.text()).includes('p^(N-1)') },
        isolated: window.crossOriginIsolated,
        config: { status: config.status, type: (await config.json()).model_type as string },
        weights: { status: weights.status, bytes: (await weights.arrayBuffer()).byteLength },
        head: { status: head.status, body: (await head.arrayBuffer()).byteLength },
        absent: absent.status,
        ranged: { status: ranged.status, range: ranged.headers.get('content-range'), bytes: (await ranged.arrayBuffer()).byteLength },
      };
    });
    expect(got).toEqual({
      note: { status: 200, prediction: true },
      isolated: true,
      config: { status: 200, type: 'llama' },
      weights: { status: 200, bytes: AGENT_WEIGHTS_BYTES },
      head: { status: 200, body: 0 }, // the loader's has() probe
      absent: 404,
      ranged: { status: 206, range: `bytes 0-7/${AGENT_WEIGHTS_BYTES}`, bytes: 8 },
    });

    // The page's own start-up, offline: a backend, and the training worker's loads of the agent and
    // judge models, after which the run is ready to start.
    await page.waitForFunction(() => {
      const m = (window as MappaWindow).__mappa;
      return Boolean(m?.error || m?.run?.errors.length || (m?.backend && (m.run?.state === 'ready' || m.run?.state === 'error')));
    }, undefined, { timeout: 90_000 });
    const app = await page.evaluate(() => {
      const m = (window as MappaWindow).__mappa!;
      return { error: m.error, backend: m.backend?.name, state: m.run?.state, model: m.run?.model?.name, errors: [...(m.run?.errors ?? [])] };
    });
    const shot = await screenshot(page, 'offline');
    console.log(`[e2e offline] ${JSON.stringify(app)}; screenshot: ${shot}`);
    expect(app.error).toBeUndefined();
    expect(app.errors).toEqual([]);
    expect(['webgpu', 'wasm', 'cpu']).toContain(app.backend);
    expect(app.state).toBe('ready');
    expect(app.model).toMatch(/models\/agent$/);
  });
});

/** Polls `fn` in the page until it is true; evaluations cut off by the page's reload are retried. */
async function until(page: Page, fn: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await page.evaluate(fn).catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`until: ${fn.toString()} still false after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * A private copy of dist/ whose files all match its precache.json: other test files rebuild dist/
 * whenever a source changes, and a rebuild during the worker's install would fail it here.
 */
async function snapshotOfBuild(): Promise<{ dist: string; manifest: { version: string; files: Record<string, string> } }> {
  const copy = path.join(resultsDir, 'offline-dist');
  for (let attempt = 1; ; attempt++) {
    const built = await ensureBuilt('site');
    fs.rmSync(copy, { recursive: true, force: true });
    fs.cpSync(built, copy, { recursive: true });
    try {
      const manifest = JSON.parse(fs.readFileSync(path.join(copy, 'precache.json'), 'utf8'));
      const bad = Object.entries(manifest.files as Record<string, string>).filter(([f, h]) =>
        createHash('sha256').update(fs.readFileSync(path.join(copy, f))).digest('hex').slice(0, 16) !== h);
      if (bad.length === 0) return { dist: copy, manifest };
      if (attempt >= 3) throw new Error(`dist/precache.json does not match dist/: ${bad.map(([f]) => f).join(', ')}`);
    } catch (e) {
      if (attempt >= 3) throw e;
    }
    await new Promise((r) => setTimeout(r, 2_000)); // a build was under way: take the next one
  }
}

/** Every file under `dir`, as paths relative to it. */
function* listed(dir: string, prefix = ''): Generator<string> {
  for (const e of fs.readdirSync(path.join(dir, prefix), { withFileTypes: true })) {
    if (e.isDirectory()) yield* listed(dir, `${prefix}${e.name}/`);
    else yield `${prefix}${e.name}`;
  }
}
