/*
 * mappa-sandbox's service worker (registered by src/ui/service-worker.ts, built pages only).
 *
 * 1. Offline: on install it stores every file of the build (dist/precache.json, written by the
 *    precacheManifest() plugin in vite.config.ts: the page, its scripts, /pyodide/ and the shipped
 *    /models/) in one Cache Storage cache per build. Same-origin GETs are served cache-first;
 *    navigations (the page itself) network-first, falling back to the cached page offline.
 * 2. Cross-origin isolation on hosts that cannot set headers: every same-origin response it serves
 *    gets COOP/COEP added (the headers `npm start` sets itself), so a page it controls is
 *    `crossOriginIsolated`. The page reloads once when this worker first takes control.
 * 3. The code tools' workers get their Content-Security-Policy (TOOL_CSP) the same way.
 *
 * Not for: cross-origin requests (hub model downloads; src/worker/models.ts caches those itself).
 * Plain JS, copied from public/ as is; the build only replaces the BUILD placeholder below.
 */
'use strict';

// The build id, stamped in by vite.config.ts. A new build changes this file's bytes, which is what
// makes the browser install the new worker (and with it the new build's cache).
const BUILD = '__MAPPA_BUILD__';
const PREFIX = 'mappa-site-';
const CACHE = PREFIX + BUILD;
const MANIFEST = 'precache.json'; // { version, files: { "assets/index-x.js": "<sha256/16>", ... } }
const SCOPE = new URL('./', self.location.href).href; // the site's root: sw.js sits next to index.html
const ISOLATION = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' };
// The agents' code tools run in workers whose scripts these are; the policy (the same one vite.config.ts
// sends) binds the worker: no eval or Function of strings, no script or connection but this origin's,
// no nested workers (docs/threat-model.md).
const TOOL_WORKER = /\/(python-worker|quickjs-worker)[^/]*\.m?js$/;
const TOOL_CSP = "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; connect-src 'self'; worker-src 'none'; base-uri 'none'";

self.addEventListener('install', (event) => {
  // skipWaiting: a new build takes over open pages at once (they are isolated already: no reload).
  event.waitUntil(precache().then(() => self.skipWaiting()));
});

self.addEventListener('activate', (event) => {
  event.waitUntil((async () => {
    for (const name of await caches.keys()) if (name.startsWith(PREFIX) && name !== CACHE) await caches.delete(name);
    await self.clients.claim(); // control the page that registered us: it then reloads, isolated
  })());
});

self.addEventListener('fetch', (event) => {
  const req = event.request;
  if (new URL(req.url).origin !== self.location.origin) return; // cross-origin: not ours
  if (req.method !== 'GET' && req.method !== 'HEAD') return;
  if (req.cache === 'only-if-cached' && req.mode !== 'same-origin') return; // a DevTools quirk fetch() rejects
  event.respondWith(respond(req).then((res) => isolate(res, req.url)));
});

/**
 * Fills this build's cache from the manifest. A file whose hash an older build's cache also lists
 * is copied from there (a new build does not download the models and Pyodide again). The manifest
 * goes in last: a cache holding it is complete. A network error fails the install (the browser
 * retries on a later visit); a file the host does not serve is skipped with a warning.
 */
async function precache() {
  const res = await fetch(MANIFEST, { cache: 'no-store' });
  if (!res.ok) throw new Error(`${MANIFEST}: HTTP ${res.status}`);
  const { files } = await res.clone().json();
  const cache = await caches.open(CACHE);
  const older = [];
  for (const name of await caches.keys()) {
    if (!name.startsWith(PREFIX) || name === CACHE) continue;
    const old = await caches.open(name);
    const list = await old.match(new URL(MANIFEST, SCOPE).href);
    if (list) older.push({ cache: old, files: (await list.json()).files });
  }
  await Promise.all(Object.entries(files).map(async ([file, hash]) => {
    const url = new URL(file, SCOPE).href;
    for (const old of older) {
      const hit = old.files[file] === hash && (await old.cache.match(url));
      if (hit) return cache.put(url, hit);
    }
    const got = await fetch(url, { cache: 'no-cache' });
    if (cacheable(got, url)) return cache.put(url, got);
    console.warn(`mappa service worker: ${file} not kept for offline use (HTTP ${got.status} ${got.headers.get('content-type') ?? ''})`);
  }));
  await cache.put(new URL(MANIFEST, SCOPE).href, res);
}

/** The answer to a same-origin GET or HEAD, before the isolation headers are added. */
async function respond(req) {
  const url = new URL(req.url);
  const cache = await caches.open(CACHE);
  if (req.mode === 'navigate') {
    // Network first, so an online visit always sees the host's current page (and a new build's
    // sw.js); offline, this build's copy. The query (the experiment's settings) is not part of the key.
    try {
      return await fetch(req);
    } catch (err) {
      const key = url.origin + url.pathname + (url.pathname.endsWith('/') ? 'index.html' : '');
      return (await cache.match(key, { ignoreVary: true })) ?? offlineMiss(cache, url, err);
    }
  }
  const key = url.origin + url.pathname + url.search;
  const range = req.headers.get('range');
  const hit = await cache.match(key, { ignoreVary: true });
  if (hit) {
    if (req.method === 'HEAD') return new Response(null, { status: hit.status, statusText: hit.statusText, headers: hit.headers });
    return range ? slice(hit, range) : hit;
  }
  let res;
  try {
    res = await fetch(req);
  } catch (err) {
    return offlineMiss(cache, url, err);
  }
  // A file the manifest did not list (none in a normal build): kept too, if it is a real file.
  if (req.method === 'GET' && !range && cacheable(res, url.href)) {
    cache.put(key, res.clone()).catch((e) => console.warn(`mappa service worker: could not cache ${url.pathname}: ${e.message}`));
  }
  return res;
}

/**
 * Whether a response may be stored: a whole 200 answer of our own origin, and not an HTML page for
 * a URL that is not a page (a host's single-page-app fallback for a missing file).
 */
function cacheable(res, url) {
  if (res.status !== 200 || res.type !== 'basic') return false;
  const html = (res.headers.get('content-type') ?? '').includes('text/html');
  return !html || /(\/|\.html?)$/.test(new URL(url).pathname);
}

/**
 * Offline and not cached: a file the build does not have is a real 404 (the model loader probes
 * optional files, e.g. special_tokens_map.json, and must read "absent", as online); anything else
 * stays a network error, as without this worker.
 */
async function offlineMiss(cache, url, err) {
  const list = await cache.match(new URL(MANIFEST, SCOPE).href);
  if (list && url.href.startsWith(SCOPE)) {
    const { files } = await list.json();
    const rel = decodeURIComponent(url.pathname.slice(new URL(SCOPE).pathname.length));
    if (!(rel in files) && !(rel === '' && 'index.html' in files)) {
      return new Response(`not found (offline): ${url.pathname} is not part of this build\n`, { status: 404, headers: { 'Content-Type': 'text/plain; charset=utf-8' } });
    }
  }
  throw err;
}

/** A `Range: bytes=a-b` request answered from a cached whole file (206, or 416 when out of range). */
async function slice(res, range) {
  const body = await res.blob();
  const m = /^bytes=(\d*)-(\d*)$/.exec(range.trim());
  const start = m && m[1] !== '' ? Number(m[1]) : m && m[2] !== '' ? Math.max(0, body.size - Number(m[2])) : NaN;
  const end = m && m[1] !== '' && m[2] !== '' ? Math.min(Number(m[2]), body.size - 1) : body.size - 1;
  if (!(start <= end)) return new Response(null, { status: 416, headers: { 'Content-Range': `bytes */${body.size}` } });
  const headers = new Headers(res.headers);
  headers.set('Content-Range', `bytes ${start}-${end}/${body.size}`);
  headers.set('Content-Length', String(end - start + 1));
  return new Response(body.slice(start, end + 1), { status: 206, statusText: 'Partial Content', headers });
}

/** The same response with COOP/COEP added, and a tool worker's CSP (opaque redirects and network errors cannot be rebuilt). */
function isolate(res, url) {
  if (res.status === 0) return res;
  const headers = new Headers(res.headers);
  for (const [name, value] of Object.entries(ISOLATION)) headers.set(name, value);
  if (TOOL_WORKER.test(new URL(url).pathname)) headers.set('Content-Security-Policy', TOOL_CSP);
  return new Response(res.body, { status: res.status, statusText: res.statusText, headers });
}
