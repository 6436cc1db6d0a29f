// Test helper: the built site (or the test-only harness build) in Debian's headless Chromium with
// WebGPU on SwiftShader, driven by playwright-core. Used by test/e2e/*.test.ts.
//
// Not for: the Node WebGPU tests (helpers/webgpu.ts) or serving the app to users (scripts/start.js).
//
// Example:
//   const site = await ensureBuilt('site');                        // vite build into dist/ if stale
//   const server = await serveStatic(site, { '/fixtures/': fixturesDir });
//   const browser = await launchChromium();
//   const page = await openPage(browser, server.url);             // logs console errors
//   ...; await browser.close(); await server.close();

import { execFileSync } from 'node:child_process';
import type { HarnessOptions, HarnessResult, HarnessWindow } from '../e2e/harness-types.ts';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { repoRoot } from './webgpu.ts';
import { alive } from '../../src/platform/node/run-lock.ts';

export { repoRoot };
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const resultsDir = path.join(repoRoot, 'test-results');
export const fixturesDir = path.join(repoRoot, 'test/fixtures');

/** Flags measured to give a WebGPU adapter (SwiftShader) on this closed network; see WEBGPU-ON-CPU.md. */
export const CHROMIUM_ARGS = [
  '--enable-unsafe-webgpu',
  '--no-sandbox',
  '--headless=new',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
  '--disable-dev-shm-usage',
];

/** Whether Debian's chromium is installed; `why` says what to do when not. */
export function chromiumAvailable(): { ok: boolean; why?: string } {
  if (fs.existsSync(CHROMIUM_PATH)) return { ok: true };
  return { ok: false, why: `${CHROMIUM_PATH} not found (set CHROMIUM_PATH to use another build)` };
}

/** What ensureBuilt() can build: the shipped site, or the test-only harness pages. */
export type BuildKind = 'site' | 'harness';

/** Per kind: output folder, vite arguments, and the inputs whose change makes the build stale. */
const BUILDS: Record<BuildKind, { outDir: string; entry: string; args: string[]; sources: string[] }> = {
  site: {
    outDir: path.join(repoRoot, 'dist'),
    entry: 'index.html',
    args: ['build'],
    // The same inputs as scripts/start.js (npm start): with fewer, a cited note edited after the build made every
    // `npm start` of the e2e files rebuild dist/ on its own, each while the other files served it.
    sources: ['src', 'index.html', 'public', 'models', 'docs/credit.md', 'docs/judges.md', 'scripts/doc-page.ts', 'bench/results/luck-floor.svg', 'vite.config.ts', 'package-lock.json'],
  },
  harness: {
    outDir: path.join(resultsDir, 'harness-dist'),
    entry: 'harness.html',
    args: ['build', '--config', 'test/e2e/vite.harness.config.ts'],
    sources: ['src', 'test/e2e', 'package-lock.json'],
  },
};

function newestMtime(p: string): number {
  if (!fs.existsSync(p)) return 0;
  const st = fs.statSync(p);
  if (!st.isDirectory()) return st.mtimeMs;
  let newest = st.mtimeMs;
  for (const e of fs.readdirSync(p)) newest = Math.max(newest, newestMtime(path.join(p, e)));
  return newest;
}

/**
 * Runs `vite build` for `kind` unless its output is newer than every source. Safe when several
 * test files (separate processes) ask at once: a lock directory serializes them.
 * Returns the output folder.
 */
export async function ensureBuilt(kind: BuildKind): Promise<string> {
  const { outDir, entry, args, sources } = BUILDS[kind];
  const lock = `${outDir}.lock`;
  fs.mkdirSync(path.dirname(outDir), { recursive: true });
  // The lock holds its builder's pid: it is taken over only when that process is gone (a killed run), never
  // for its age (a build on a busy machine takes minutes); the wait is bounded by the caller's hook timeout.
  for (;;) {
    try {
      fs.mkdirSync(lock);
      fs.writeFileSync(path.join(lock, 'pid'), String(process.pid));
      break;
    } catch {
      let owner = NaN;
      try {
        owner = Number(fs.readFileSync(path.join(lock, 'pid'), 'utf8') || NaN);
      } catch { /* not written yet, or the lock was just released */ }
      const age = Date.now() - (fs.statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
      if (Number.isInteger(owner) ? !alive(owner) : age > 60_000) fs.rmSync(lock, { recursive: true, force: true });
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  try {
    // The entry page is written by every build (also a manual `npx vite build`): its time is the build's.
    const builtAt = fs.statSync(path.join(outDir, entry), { throwIfNoEntry: false })?.mtimeMs ?? 0;
    const newestSource = Math.max(...sources.map((s) => newestMtime(path.join(repoRoot, s))));
    if (builtAt <= newestSource) {
      const vite = path.join(repoRoot, 'node_modules/vite/bin/vite.js');
      try {
        // NODE_ENV=production: vitest sets NODE_ENV=test, and vite would then build with
        // import.meta.env.DEV true (dropping, e.g., the service worker's registration).
        execFileSync(process.execPath, [vite, ...args, '--logLevel', 'warn'], { cwd: repoRoot, stdio: 'pipe', env: { ...process.env, NODE_ENV: 'production' } });
      } catch (err) {
        const e = err as { stdout?: Buffer; stderr?: Buffer };
        throw new Error(`vite ${args.join(' ')} failed:\n${e.stdout ?? ''}${e.stderr ?? ''}`);
      }
    }
  } finally {
    fs.rmSync(lock, { recursive: true, force: true });
  }
  return outDir;
}

const MIME: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.wasm': 'application/wasm',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.txt': 'text/plain; charset=utf-8',
  '.safetensors': 'application/octet-stream',
};

export interface StaticServer {
  url: string; // e.g. "http://127.0.0.1:41234/"
  close(): Promise<void>;
}

/**
 * Serves `root` on 127.0.0.1 at a free port (a secure context, as WebGPU needs). `mounts` maps
 * URL prefixes to extra folders, e.g. { '/fixtures/': 'test/fixtures' }. `spaFallback` answers
 * missing files with index.html (status 200), `headers` are added to every answer (e.g. COOP/COEP).
 */
export function serveStatic(root: string, mounts: Record<string, string> = {},
  opts: { spaFallback?: boolean; headers?: Record<string, string> } = {}): Promise<StaticServer> {
  const server = http.createServer((req, res) => {
    const urlPath = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    let base = root;
    let rel = urlPath;
    for (const [prefix, dir] of Object.entries(mounts)) {
      if (urlPath.startsWith(prefix)) {
        base = path.resolve(repoRoot, dir);
        rel = urlPath.slice(prefix.length - 1);
        break;
      }
    }
    let file = path.join(base, path.normalize(rel));
    if (file !== base && !file.startsWith(base + path.sep)) return void res.writeHead(403).end('forbidden');
    if (fs.existsSync(file) && fs.statSync(file).isDirectory()) file = path.join(file, 'index.html');
    // spaFallback: answer a missing file with index.html and 200, as many static hosts do by default.
    if (!fs.existsSync(file) && opts.spaFallback) file = path.join(root, 'index.html');
    if (!fs.existsSync(file)) return void res.writeHead(404).end(`not found: ${urlPath}`);
    res.writeHead(200, {
      'Content-Type': MIME[path.extname(file)] ?? 'application/octet-stream',
      'Cache-Control': 'no-store',
      ...opts.headers,
    });
    fs.createReadStream(file).pipe(res);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        url: `http://127.0.0.1:${port}/`,
        close: () => new Promise<void>((r) => server.close(() => r())),
      });
    });
  });
}

/** Collects the page's uncaught errors and console errors into `problems` (each e2e test checks it stays empty). */
export function collectProblems(page: Page, problems: string[]): void {
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
}

/** Launches Debian's chromium headless with WebGPU enabled and a fresh temporary profile. */
export async function launchChromium(): Promise<Browser> {
  const have = chromiumAvailable();
  if (!have.ok) throw new Error(`launchChromium: ${have.why}`);
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: CHROMIUM_ARGS, timeout: 60_000 });
}

/**
 * Opens `url` in a new page; browser console errors and uncaught page errors are echoed to the
 * test log (prefixed [browser]) so a failing page explains itself.
 */
export async function openPage(browser: Browser, url: string): Promise<Page> {
  // The site's service worker reloads a page served without COOP/COEP once, to isolate it; tests that
  // drive the page right away block it (test/e2e/offline.test.ts and start.test.ts cover it).
  const context = await browser.newContext({ viewport: { width: 1000, height: 700 }, serviceWorkers: 'block' });
  const page = await context.newPage();
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') console.warn(`[browser ${m.type()}] ${m.text()}`);
  });
  page.on('pageerror', (e) => console.warn(`[browser pageerror] ${e.message}`));
  await page.goto(url, { waitUntil: 'load' });
  return page;
}

/**
 * Saves a full-page screenshot under test-results/ and returns its path, or null when Chromium could
 * not paint one in time. A screenshot is for people to look at, not an assertion: on a loaded CI
 * machine SwiftShader's compositor can take longer than Playwright's 30 s to paint a frame (seen
 * once, with every assertion of the test passed), so this waits 60 s and then says so loudly
 * instead of failing the test it documents.
 */
export async function screenshot(page: Page, name: string): Promise<string | null> {
  fs.mkdirSync(resultsDir, { recursive: true });
  const file = path.join(resultsDir, `${name}.png`);
  try {
    await page.screenshot({ path: file, fullPage: true, timeout: 60_000 });
  } catch (e) {
    console.warn(`[e2e] NO SCREENSHOT ${name}: ${(e as Error).message.split('\n')[0]}`);
    return null;
  }
  return file;
}

/** The test-only harness page (test/e2e/harness.html) open in headless Chromium, fixtures served at /fixtures/. */
export interface OpenHarness {
  page: Page;
  /** window.runHarness(name, opts) in the page: a registered check's JSON result. */
  run(name: string, opts?: HarnessOptions): Promise<HarnessResult>;
  close(): Promise<void>;
}

export async function openHarness(): Promise<OpenHarness> {
  const server = await serveStatic(await ensureBuilt('harness'), { '/fixtures/': fixturesDir });
  const browser = await launchChromium();
  const page = await openPage(browser, `${server.url}harness.html`);
  await page.waitForFunction(() => (window as unknown as HarnessWindow).harnessReady === true);
  return {
    page,
    run: (name, opts = {}) => page.evaluate(([n, o]) => (window as unknown as HarnessWindow).runHarness(n, o), [name, opts] as const),
    async close() {
      await browser.close();
      await server.close();
    },
  };
}

/** A page as the user meets it: `npm start`, Chromium at a laptop's viewport on the printed URL, its problems collected. */
export interface UserPage {
  site: StartedSite;
  browser: Browser;
  page: Page;
  /** Uncaught errors and console errors so far (collectProblems). */
  problems: string[];
  close(): Promise<void>;
}

/**
 * Starts the site with `npm start`, opens Chromium at `viewport` (default 1366x800) on the plain URL (or `url(base)`),
 * and collects the page's problems. Example: const u = await openUserPage(); ...; await u.close();
 */
export async function openUserPage(opts: { viewport?: { width: number; height: number }; url?: (base: string) => string; env?: Record<string, string> } = {})
  : Promise<UserPage> {
  const site = await npmStart({ env: opts.env });
  const browser = await launchChromium();
  const page = await (await browser.newContext({ viewport: opts.viewport ?? { width: 1366, height: 800 } })).newPage();
  const problems: string[] = [];
  collectProblems(page, problems);
  await page.goto(opts.url ? opts.url(site.url) : site.url, { waitUntil: 'load' });
  return { site, browser, page, problems, close: async () => { await browser.close(); await site.close(); } };
}

/** The site as a user starts it: the README's `npm start`, in its own process group. */
export interface StartedSite {
  url: string; // the URL `npm start` printed, e.g. "http://127.0.0.1:4173/"
  output(): string;
  close(): Promise<void>;
}

/**
 * Runs the README's `npm start` (scripts/start.js: builds dist/ if stale, then serves it) and waits
 * for the URL it prints. `close()` stops the whole process group.
 * Example: const site = await npmStart(); const page = await openPage(browser, site.url);
 */
export async function npmStart(opts: { timeoutMs?: number; env?: Record<string, string> } = {}): Promise<StartedSite> {
  const { spawn } = await import('node:child_process');
  const child = spawn('npm', ['start'], { cwd: repoRoot, detached: true, env: { ...process.env, ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`npm start printed no URL within ${opts.timeoutMs ?? 240_000} ms:\n${log}`)), opts.timeoutMs ?? 240_000);
    const onData = (d: Buffer) => {
      log += d.toString();
      const m = /open (http:\/\/[^\s]+)/.exec(log);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`npm start exited (code ${code}) before printing a URL:\n${log}`));
    });
  });
  return {
    url,
    output: () => log,
    close: () => new Promise<void>((resolve) => {
      if (child.exitCode !== null) return resolve();
      child.once('exit', () => resolve());
      try {
        process.kill(-child.pid!, 'SIGTERM');
      } catch {
        resolve();
      }
    }),
  };
}
