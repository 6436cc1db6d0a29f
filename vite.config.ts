import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig, type Plugin } from 'vitest/config';
import { svelte } from '@sveltejs/vite-plugin-svelte';
import { LongestFirst } from './test/helpers/longest-first.ts';
import { docPageOf } from './scripts/doc-page.ts';

// One config for the app (vite) and the tests (vitest).
// Test suites: test/unit (Node, cpu/wasm), test/webgpu (Node + Dawn on SwiftShader),
// test/e2e (built site in Debian's chromium via playwright-core). The last two skip loudly
// when chromium (which ships the SwiftShader Vulkan driver) is missing.

const root = path.dirname(fileURLToPath(import.meta.url));

/**
 * Files the site serves as they are, so it runs offline from any static server (no CDN):
 *   /pyodide/  Pyodide's runtime for the agents' Python tool (node_modules/pyodide)
 *   /models/   the shipped tiny models (models/<name>/, HF folders), the page's embedded default
 *   /docs/     the notes the page cites (docs/credit.md: the lesson's prediction; docs/judges.md: the coaches)
 * Copied into the build (so the service worker keeps them for offline use), and served from the source
 * folders by `vite` (dev) and `vite preview`. test/e2e/truth.test.ts fetches every file the page cites.
 * Each cited note is also served as a readable page, /docs/<name>.html (scripts/doc-page.ts: rendered on
 * request by the servers, and written into the build so that the service worker keeps it offline); the
 * page's links go there.
 */
export const CITED_DOCS = ['credit.md', 'judges.md'];
const STATIC_DIRS: { url: string; dir: string; files?: string[] }[] = [
  { url: '/pyodide/', dir: path.join(root, 'node_modules/pyodide'), files: ['pyodide.mjs', 'pyodide.asm.mjs', 'pyodide.asm.wasm', 'python_stdlib.zip', 'pyodide-lock.json'] },
  { url: '/models/', dir: path.join(root, 'models') },
  { url: '/docs/', dir: path.join(root, 'docs'), files: CITED_DOCS },
];

/**
 * Served by `vite` and `vite preview` only when MAPPA_SERVE_FIXTURES=1 (the e2e tests), never built:
 *   /fixtures/  test/fixtures/ (e.g. a weak judge, test/fixtures/relay-judge-weak, named in a link as
 *               coach.model "./fixtures/relay-judge-weak")
 */
const TEST_DIRS: { url: string; dir: string; files?: string[] }[] = process.env.MAPPA_SERVE_FIXTURES === '1'
  ? [{ url: '/fixtures/', dir: path.join(root, 'test/fixtures') }] : [];

/** The Content-Type of a served file (a note is plain text, so a browser shows it rather than saving it). */
function contentType(file: string): string {
  if (file.endsWith('.mjs')) return 'text/javascript';
  if (file.endsWith('.wasm')) return 'application/wasm';
  if (file.endsWith('.json')) return 'application/json';
  if (file.endsWith('.md')) return 'text/plain; charset=utf-8';
  return 'application/octet-stream';
}

function listFiles(dir: string, prefix = ''): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? listFiles(path.join(dir, e.name), `${prefix}${e.name}/`) : e.name.startsWith('.') ? [] : [`${prefix}${e.name}`]);
}

function staticAssets(): Plugin {
  let outDir = path.join(root, 'dist');
  let building = false;
  const serve = (req: { url?: string }, res: import('node:http').ServerResponse, next: () => void) => {
    const url = decodeURIComponent((req.url ?? '').split('?')[0]);
    const note = /^\/docs\/([\w-]+)\.html$/.exec(url)?.[1];
    if (note && CITED_DOCS.includes(`${note}.md`)) {
      res.setHeader('Content-Type', 'text/html; charset=utf-8');
      res.end(docPageOf(path.join(root, 'docs'), `${note}.md`, CITED_DOCS));
      return;
    }
    for (const s of [...STATIC_DIRS, ...TEST_DIRS]) {
      if (!url.startsWith(s.url)) continue;
      const rel = url.slice(s.url.length);
      const file = path.join(s.dir, rel);
      if (!file.startsWith(s.dir + path.sep) || (s.files && !s.files.includes(rel)) || !fs.existsSync(file) || fs.statSync(file).isDirectory()) break;
      res.setHeader('Content-Type', contentType(file));
      fs.createReadStream(file).pipe(res);
      return;
    }
    next();
  };
  return {
    name: 'mappa-static-assets',
    configResolved(c) {
      outDir = path.resolve(c.root, c.build.outDir);
      building = c.command === 'build'; // vitest's server also closes bundles, with a dummy outDir
    },
    configureServer(server) {
      server.middlewares.use(serve);
    },
    configurePreviewServer(server) {
      server.middlewares.use(serve);
    },
    closeBundle() {
      if (!building) return;
      for (const s of STATIC_DIRS) {
        for (const rel of s.files ?? listFiles(s.dir)) {
          const from = path.join(s.dir, rel);
          if (!fs.existsSync(from)) continue;
          const to = path.join(outDir, s.url, rel);
          fs.mkdirSync(path.dirname(to), { recursive: true });
          fs.copyFileSync(from, to);
        }
      }
      for (const name of CITED_DOCS) {
        fs.writeFileSync(path.join(outDir, 'docs', name.replace(/\.md$/, '.html')), docPageOf(path.join(root, 'docs'), name, CITED_DOCS));
      }
    },
  };
}

/**
 * dist/precache.json for the service worker (public/sw.js): every file of the build with a content
 * hash, and a build id over all of them, which is also stamped into dist/sw.js (its `__MAPPA_BUILD__`)
 * so that a new build is a new worker to the browser and replaces the old cache (files whose hash is
 * unchanged, e.g. the models, are copied over rather than downloaded again). Runs after
 * staticAssets() has copied /pyodide/ and /models/ into the build ('post' closeBundle, listed after it).
 */
function precacheManifest(): Plugin {
  let outDir = path.join(root, 'dist');
  let building = false;
  const hash = (data: string | Buffer) => createHash('sha256').update(data).digest('hex').slice(0, 16);
  return {
    name: 'mappa-precache-manifest',
    enforce: 'post',
    configResolved(c) {
      outDir = path.resolve(c.root, c.build.outDir);
      building = c.command === 'build' && !c.build.ssr;
    },
    closeBundle: {
      order: 'post',
      handler() {
        const sw = path.join(outDir, 'sw.js');
        if (!building || !fs.existsSync(sw)) return;
        const files: Record<string, string> = {};
        for (const rel of listFiles(outDir).sort()) {
          if (rel !== 'sw.js' && rel !== 'precache.json') files[rel] = hash(fs.readFileSync(path.join(outDir, rel)));
        }
        if (!files['index.html']) throw new Error(`precacheManifest: ${outDir} has no index.html`);
        const version = hash(JSON.stringify(files));
        fs.writeFileSync(path.join(outDir, 'precache.json'), `${JSON.stringify({ version, files }, null, 1)}\n`);
        fs.writeFileSync(sw, fs.readFileSync(sw, 'utf8').replace('__MAPPA_BUILD__', version));
      },
    },
  };
}

/**
 * The JavaScript tool's worker for the page's opaque-origin frame (src/platform/browser/tool-frame.ts),
 * as the module `virtual:quickjs-frame-worker`:
 *   source   src/core/tools/worker/quickjs-worker.mjs and quickjs-emscripten bundled by esbuild into one
 *            script (their dynamic imports inlined): the frame starts it from a blob: URL, against which
 *            no relative import resolves, and its policy allows no script from any host anyway;
 *   wasmUrl  QuickJS's release-sync wasm, a file of the site: the host fetches it and hands the worker
 *            its bytes (quickjs-worker.mjs's 'init').
 * The same-origin worker (no frame: the harness pages) is vite's own build of the same file, as before.
 * esbuild is the one tsx (a dependency) brings, and vite's optional peer.
 */
function quickjsFrameWorker(): Plugin {
  const id = 'virtual:quickjs-frame-worker';
  const entry = path.join(root, 'src/core/tools/worker/quickjs-worker.mjs');
  const fromQuickjs = createRequire(createRequire(import.meta.url).resolve('quickjs-emscripten'));
  const wasm = fromQuickjs.resolve('@jitl/quickjs-wasmfile-release-sync/wasm');
  return {
    name: 'mappa-quickjs-frame-worker',
    resolveId: (source) => (source === id ? `\0${id}` : undefined),
    async load(resolved) {
      if (resolved !== `\0${id}`) return undefined;
      this.addWatchFile(entry);
      const { build } = await import('esbuild');
      const out = await build({
        entryPoints: [entry], bundle: true, format: 'esm', platform: 'browser', target: 'es2022', minify: true, write: false,
        external: ['./jail-port.mjs'], // Node's stdio port, imported only under Node
        logLevel: 'silent',
      });
      const source = out.outputFiles[0].text;
      if (/\bimport\(\s*["'`](?!\.\/jail-port\.mjs)/.test(source)) throw new Error('quickjsFrameWorker: the bundled QuickJS worker still imports a file by URL');
      return `import wasmUrl from ${JSON.stringify(`${wasm}?url`)};\nexport { wasmUrl };\nexport const source = ${JSON.stringify(source)};\n`;
    },
  };
}

/**
 * Cross-origin isolation for `npm start` (vite preview) and `vite` (dev): the page works with or
 * without it (the wasm backend runs single-threaded per worker either way), and a host that sets
 * these headers must not break it, so the project's own server sets them and the tests cover both.
 */
const ISOLATION_HEADERS = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' };

/**
 * The agents' code tools run in workers whose scripts match TOOL_WORKER (src/core/tools/worker/, built as
 * assets/python-worker-*.mjs and assets/quickjs-worker-*.js). Their Content-Security-Policy binds the
 * worker: no eval or Function of strings (a string the guest controls never becomes JavaScript), no
 * script or connection but this origin's (no fetch or import() of 127.0.0.1 or elsewhere), no nested
 * workers. `vite` and `vite preview` send it; public/sw.js adds the same one on any static host.
 */
const TOOL_WORKER = /\/(python-worker|quickjs-worker)[^/]*\.m?js$/;
export const TOOL_CSP = "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; connect-src 'self'; worker-src 'none'; base-uri 'none'";
function toolWorkerPolicy(): Plugin {
  const policy = (req: { url?: string }, res: import('node:http').ServerResponse, next: () => void) => {
    if (TOOL_WORKER.test((req.url ?? '').split('?')[0])) res.setHeader('Content-Security-Policy', TOOL_CSP);
    next();
  };
  return {
    name: 'mappa-tool-worker-policy',
    configureServer: (server) => void server.middlewares.use(policy),
    configurePreviewServer: (server) => void server.middlewares.use(policy),
  };
}

/**
 * Checks too slow for the everyday test command on a 2-core machine without a GPU, run by
 * `npm run test:slow` (and CI):
 *   test/e2e/shapes.test.ts   real SmolLM2-135M / Qwen2.5-0.5B shapes through the page on SwiftShader
 *                             (a [rows, 896] x [896, 151936] matmul takes 17-25 s there); the vocabulary
 *                             split under 128 MiB bindings stays in `npm test` (vocab-table, webgpu parity)
 *   test/unit/cli/run-safety.test.ts   the CLI's crash checks as real processes: a second writer, a stale lock, kill -9 at five
 *                             moments and --resume, a full disk (about 3 minutes; the resume pin in process: test/unit/loop/loop.test.ts)
 *   test/e2e/sandbox.test.ts  again with a training Step on the GPU restarted after a device loss (MAPPA_SLOW=1): a fresh
 *                             device compiles every pipeline again, about 3 minutes on SwiftShader
 *   test/e2e/coach.test.ts    a relay run coached by a weak judge, stated in words, and its "⇄" twin (about 50 s
 *                             with its own server; test/e2e/truth.test.ts keeps the citations and Pause in `npm test`)
 *   test/e2e/tiers.test.ts    a coach in tiers with a person in the page: cards answered with the mouse mid-run, the judge taught
 *                             in the worker and named in the record (about 50 s with its build and server; the person tier's rules,
 *                             the CLI's file and stdin as real processes, the worker's side: test/unit/coach/, cli/, lab/, in `npm test`)
 *   test/unit/cli/train-person.test.ts  `mappa train --tier-person -` as a real process answered on its stdin (about 15-30 s: a model load,
 *                             an iteration, two evaluations; the file and stdin reading alone: test/unit/cli/person-io.test.ts)
 *   test/e2e/corrections.test.ts  correcting a judge in the page, teaching it in the worker and a run coached by the taught
 *                             version (minutes: a training iteration, teaching with its folds, a 4-iteration run and a reload)
 *   test/e2e/credit.test.ts   the credit methods in the page: the reward setting, the side-by-side credit view and
 *                             "Compare credit methods" trained twice (about 1 minute; its maths: test/unit/lab/credit*.test.ts)
 *   test/e2e/scale.test.ts    "Scale the team" trained whole in the page: the relay of 8-64 agents, eight runs (about 3-4
 *                             minutes, more on a loaded machine; its maths: test/unit/lab/scale.test.ts), and a reload
 * and, to keep `npm test` within 7 minutes cold on 2 cores (docs/testing.md, "How long the suite takes"), the page's
 * fault and classroom checks, each a browser training its own runs (their headless logic stays in `npm test`:
 * test/unit/lab/, test/unit/loop/run-files.test.ts, test/unit/cli/run-record.test.ts):
 *   test/e2e/class.test.ts    a class's page: typed settings, pinned banners over a stored lesson, coach-free words, imports,
 *                             a read-only tab (about 110 s)
 *   test/e2e/storage.test.ts  storage full and a page closed mid-checkpoint (about 60 s)
 *   test/e2e/tabs.test.ts     two tabs on one run, Take over (about 30 s)
 *   test/e2e/offline.test.ts  the service worker: offline after one visit, isolation without headers (about 25 s)
 *   test/e2e/lesson.test.ts   the lesson as a newcomer runs it: six relay runs trained in the page, its table, a reload (about 110 s; its
 *                             maths and words: test/unit/lab/lesson.test.ts, in `npm test`)
 *   test/e2e/guided-step.test.ts  the lesson, then the guided step after it: a weak judge corrected, taught and coaching again
 *                             (minutes: the lesson's six runs and two more; its maths and words: test/unit/lab/guided-step.test.ts)
 *   test/e2e/hosts.test.ts    the build behind a single-page-app fallback and a plain host (about 25 s; `npm start`: start.test.ts)
 *   test/e2e/team-size.test.ts  the page at 128 agents before a class: the menu, a short link, two relay-128 iterations on wasm, a
 *                             second tab that cannot train, heat maps, wrong steps only, a PNG export, a reload (about 4 minutes;
 *                             the link, the step list, the signal between tabs: test/unit/ui/, in `npm test`)
 *   test/e2e/access.test.ts   axe-core and the keyboard alone on the page's states: the lesson's six runs, the weak judge's run and
 *                             a relay-128 iteration trained in the page (4.5-7.5 minutes on 2 loaded cores; the words the paused
 *                             lesson quotes: src/core/lab/experiments/experiment-names.ts, read by the page and the lab alike)
 *   test/unit/cli/train.test.ts  `mappa train --threads 2` against `--threads 1`, two processes each training (about 45 s; the lanes
 *                             against one thread, in process: test/unit/compute/lanes.test.ts, in `npm test`)
 *   test/webgpu/decode.test.ts  the fused WebGPU decoding step against the plain one on SwiftShader (about 70 s: each shape
 *                             compiles its pipelines; the plain WebGPU path against transformers stays in `npm test`: parity)
 *   test/unit/bench/{rollouts,engine,update}-smoke.test.ts, gpu-script.test.ts  the benches' tiny measured runs as they are
 *                             invoked (54 s of files on 2 quiet cores; `npm test` was at 417 s of its 420 with them; the
 *                             benches' report maths is checked by the other test/unit/bench files, in `npm test`)
 */
const SLOW = process.env.MAPPA_SLOW === '1';
const SLOW_ONLY = [
  'test/e2e/shapes.test.ts', 'test/e2e/coach.test.ts', 'test/e2e/credit.test.ts', 'test/e2e/corrections.test.ts',
  'test/e2e/class.test.ts', 'test/e2e/storage.test.ts', 'test/e2e/tabs.test.ts', 'test/e2e/offline.test.ts', 'test/webgpu/decode.test.ts',
  'test/e2e/scale.test.ts', 'test/e2e/hosts.test.ts', 'test/unit/cli/train.test.ts',
  'test/e2e/lesson.test.ts', 'test/unit/cli/run-safety.test.ts', 'test/e2e/guided-step.test.ts', 'test/e2e/team-size.test.ts',
  'test/e2e/tiers.test.ts', 'test/unit/cli/train-person.test.ts', 'test/e2e/access.test.ts',
  'test/unit/bench/rollouts-smoke.test.ts', 'test/unit/bench/engine-smoke.test.ts', 'test/unit/bench/update-smoke.test.ts',
  'test/unit/bench/gpu-script.test.ts',
];
const SLOW_TESTS = [...SLOW_ONLY, 'test/e2e/sandbox.test.ts'];

export default defineConfig({
  plugins: [svelte(), staticAssets(), precacheManifest(), toolWorkerPolicy(), quickjsFrameWorker()],
  // 'mpa': a missing file is a real 404, never index.html with status 200 (the 'spa' fallback made the
  // model loader read the page as special_tokens_map.json).
  appType: 'mpa',
  server: { host: '127.0.0.1', headers: ISOLATION_HEADERS },
  preview: { host: '127.0.0.1', headers: ISOLATION_HEADERS },
  // Worker bundles get only these plugins (and vite's own): the lab worker imports the frame's QuickJS worker.
  worker: { format: 'es', plugins: () => [quickjsFrameWorker()] },
  build: { target: 'es2022', chunkSizeWarningLimit: 8000 },
  test: {
    // `npm test` runs everything but SLOW_ONLY; `npm run test:slow` (MAPPA_SLOW=1) runs SLOW_TESTS alone
    // (.ci/run runs both). Each file's wall time is printed at the end (test/reporters/file-timings.ts).
    include: SLOW ? SLOW_TESTS : ['test/**/*.test.ts'],
    exclude: SLOW ? [] : [...SLOW_ONLY, '**/node_modules/**'],
    environment: 'node',
    pool: 'forks',
    // One temporary folder a run, removed at its end (test/helpers/temp-root.ts): tests leave nothing in /tmp.
    globalSetup: ['./test/helpers/temp-root.ts'],
    // Two files at a time on a 2-core machine (vitest's default is cores - 1 = one): the browser and
    // CLI tests wait on other processes much of their time, and the unit files use one core each.
    maxWorkers: 2,
    // Deadlines against hangs, not measures of speed (docs/testing.md, "On a busy machine"): at least ten times
    // what a test or a setup (a site build, a server and a browser start) takes alone.
    testTimeout: 300_000,
    hookTimeout: 600_000,
    reporters: ['default', './test/reporters/file-timings.ts'],
    // The longest files start first (test/helpers/longest-first.ts): on a fresh clone vitest has no durations to go by.
    sequence: { sequencer: LongestFirst },
  },
});
