/**
 * What the code tools' opaque-origin frame (src/platform/browser/tool-frame.ts) costs the Python tool in
 * the browser: the built site in headless Chromium starts Pyodide's worker (its built
 * assets/python-worker-*.mjs) alternately as a worker of the page's origin (the path before the frame)
 * and in the frame with Pyodide's files handed in as bytes, then times 20 runs of `print(6*7)` on each.
 *
 * For: docs/threat-model.md's cost table. Not for: the red team (test/e2e/red-team.test.ts).
 *
 * Method: paired rounds, alternating which side goes first; each side's start-up is a fresh worker up
 * to 'ready', its run time the mean of 20 runs. Pyodide's files are fetched once (as the lab worker
 * keeps them) and timed apart. Intervals: Student's t over the rounds' differences.
 *
 * Example: npm run -s bench -- tool-frame --rounds 5
 */
import fs from 'node:fs';
import path from 'node:path';
import { ensureBuilt, launchChromium, serveStatic } from '../test/helpers/browser.ts';

interface Round { worker: { startMs: number; runMs: number }; frame: { startMs: number; runMs: number } }

/** Mean and 95 % Student's t interval, as "m [lo, hi]". */
function interval(xs: number[], digits = 1): string {
  const n = xs.length;
  const t = [0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262][n - 1] ?? 2.0;
  const m = xs.reduce((a, b) => a + b, 0) / n;
  const h = (t * Math.sqrt(xs.reduce((a, b) => a + (b - m) ** 2, 0) / (n - 1))) / Math.sqrt(n);
  return `${m.toFixed(digits)} [${(m - h).toFixed(digits)}, ${(m + h).toFixed(digits)}]`;
}

export async function main(argv: string[]): Promise<void> {
  const i = argv.indexOf('--rounds');
  const rounds = Number(i >= 0 ? argv[i + 1] : 5);
  if (!Number.isInteger(rounds) || rounds < 2 || rounds > 10) throw new Error(`bench tool-frame: --rounds must be an integer from 2 to 10, got ${argv[i + 1]}`);
  const dist = await ensureBuilt('site');
  const workerFile = fs.readdirSync(path.join(dist, 'assets')).find((f) => /^python-worker-.*\.mjs$/.test(f));
  if (!workerFile) throw new Error(`bench tool-frame: no assets/python-worker-*.mjs in ${dist}; run npm run build`);
  const server = await serveStatic(dist);
  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    await page.addInitScript('globalThis.__name = (f) => f'); // the TypeScript runner names the evaluated function's inner ones
    await page.goto(`${server.url}?backend=wasm`, { waitUntil: 'load' });
    await page.waitForFunction(() => crossOriginIsolated, undefined, { timeout: 120_000, polling: 250 }); // the service worker's reload
    const result = await page.evaluate(async ({ workerUrl, rounds }) => {
      const RUN = { type: 'run', code: 'print(6*7)', files: [], timeoutMs: 2000, memoryLimitBytes: 256 * 2 ** 20, maxWorkspaceBytes: 2 ** 26, maxWorkspaceFiles: 1000 };
      type Port = { postMessage(m: unknown): void; onmessage: ((e: MessageEvent) => void) | null };
      const over = (port: Port) => {
        const waiters: { types: string[]; resolve: (d: any) => void }[] = [];
        port.onmessage = (e) => {
          const k = waiters.findIndex((w) => w.types.includes(e.data?.type));
          if (k >= 0) waiters.splice(k, 1)[0].resolve(e.data);
        };
        return { send: (m: unknown) => port.postMessage(m), wait: (...types: string[]) => new Promise<any>((resolve) => waiters.push({ types, resolve })) };
      };
      const indexURL = `${location.origin}/pyodide/`;
      const t0 = performance.now();
      const files: Record<string, Uint8Array> = {};
      for (const n of ['pyodide.mjs', 'pyodide.asm.mjs', 'pyodide.asm.wasm', 'python_stdlib.zip', 'pyodide-lock.json']) {
        files[n] = new Uint8Array(await (await fetch(indexURL + n)).arrayBuffer());
      }
      const fetchMs = performance.now() - t0;
      const source = await (await fetch(workerUrl)).text();
      const mappa = (window as unknown as { __mappa: { openToolFrame(): Promise<{ spawn(s: string): { port: MessagePort; terminate(): void }; close(): void }> } }).__mappa;
      const frame = await mappa.openToolFrame();
      const session = async (kind: 'worker' | 'frame') => {
        const start = performance.now();
        let io: ReturnType<typeof over>;
        let end: () => void;
        if (kind === 'frame') {
          const tool = frame.spawn(source);
          io = over(tool.port);
          end = () => tool.terminate();
          io.send({ type: 'init', indexURL, pyodideFiles: files });
        } else {
          const w = new Worker(workerUrl, { type: 'module' });
          io = over(w as unknown as Port);
          end = () => w.terminate();
          io.send({ type: 'init', pyodideModuleUrl: `${indexURL}pyodide.mjs`, indexURL });
        }
        const ready = await io.wait('ready', 'init-error');
        if (ready.type !== 'ready') throw new Error(`${kind}: ${ready.message}`);
        const startMs = performance.now() - start;
        const t1 = performance.now();
        for (let r = 0; r < 20; r++) {
          const done = io.wait('done');
          io.send({ ...RUN, id: r });
          const d = await done;
          if (d.stdout.head !== '42\n') throw new Error(`${kind}: run ${r} printed ${JSON.stringify(d.stdout.head)}`);
        }
        const runMs = (performance.now() - t1) / 20;
        end();
        return { startMs, runMs };
      };
      const out: Round[] = [];
      for (let r = 0; r < rounds; r++) {
        const pair = {} as Round;
        for (const kind of (r % 2 ? ['frame', 'worker'] : ['worker', 'frame']) as ('worker' | 'frame')[]) pair[kind] = await session(kind);
        out.push(pair);
      }
      frame.close();
      return { fetchMs, rounds: out };
    }, { workerUrl: `/assets/${workerFile}`, rounds });
    const r = result.rounds;
    const col = (side: 'worker' | 'frame', k: 'startMs' | 'runMs') => r.map((x) => x[side][k]);
    console.log(`Python tool in the built site, headless Chromium, ${rounds} paired rounds; mean [95 % t interval]; Pyodide's files fetched as bytes once: ${result.fetchMs.toFixed(0)} ms\n`);
    console.log('| measure | same-origin worker | opaque-origin frame | frame - worker |\n|---|---:|---:|---:|');
    for (const [k, label, d] of [['startMs', 'start-up (load Pyodide), ms', 0], ['runMs', 'one run, ms', 1]] as const) {
      const w = col('worker', k);
      const f = col('frame', k);
      console.log(`| ${label} | ${interval(w, d)} | ${interval(f, d)} | ${interval(f.map((v, j) => v - w[j]), d)} |`);
    }
  } finally {
    await browser.close();
    await server.close();
  }
}
