// Red team, in Node: named attempts to get out of the agents' code tools (Python on Pyodide, JavaScript
// on QuickJS, SQL on DuckDB) and out of the jail their interpreters run in, each checked against what
// would show an escape: a listener on 127.0.0.1 (any TCP connection or UDP datagram), a canary file and
// a canary environment variable (their token must appear in no output), a host path that must not be
// created, and the host's resident memory and the caller's event loop (limits that hold).
// docs/threat-model.md lists every attempt with what it did before and what it does now.
// Cost: one Pyodide load (~3-8 s on a loaded 2-core machine) plus one reload after the timeout.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSandbox } from '../../../src/core/tools/code-sandbox.ts';
import { createSqlTool } from '../../../src/core/tools/sql.ts';
import { netIsolation, startJail } from '../../../src/core/tools/jail.ts';
import type { RunOptions, RunResult } from '../../../src/core/tools/sandbox.ts';
import { Workspace, WORKSPACE_MAX_BYTES } from '../../../src/core/tools/workspace.ts';
import { emJsLibrary, hostRssMb, loadLibraryPython, makeCanary, startListener, type Canary, type Listener } from '../../helpers/red-team.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '../../..');
let listener: Listener;
let canary: Canary;
const sandbox = createSandbox();
const sql = createSqlTool();
const outputs: string[] = []; // every observation, checked for the canary at the end

const py = async (code: string, opts: RunOptions = {}) => keep(await sandbox.run(code, { language: 'python', timeoutMs: 15_000, ...opts }));
const js = async (code: string, opts: RunOptions = {}) => keep(await sandbox.run(code, { language: 'javascript', timeoutMs: 5_000, ...opts }));
const q = async (code: string, opts: RunOptions = {}) => keep(await sql.run(code, { timeoutMs: 10_000, ...opts }));
function keep(r: RunResult): RunResult {
  outputs.push(JSON.stringify(r));
  return r;
}
/** Runs `fn` while counting the host's event-loop ticks (10 ms timer) and its peak resident memory. */
async function watched<T>(fn: () => Promise<T>): Promise<{ value: T; ticks: number; ms: number; peakRssMb: number }> {
  let ticks = 0;
  let peakRssMb = hostRssMb();
  const timer = setInterval(() => {
    ticks++;
    peakRssMb = Math.max(peakRssMb, hostRssMb());
  }, 10);
  const t0 = Date.now();
  try {
    const value = await fn();
    return { value, ticks, ms: Date.now() - t0, peakRssMb };
  } finally {
    clearInterval(timer);
  }
}

beforeAll(async () => {
  listener = await startListener();
  canary = makeCanary();
});
afterAll(async () => {
  await sandbox.dispose();
  await sql.dispose();
  // Nothing any attempt did may show anywhere.
  expect(listener.hits()).toEqual([]);
  expect(fs.existsSync(canary.writeTarget)).toBe(false);
  for (const o of outputs) expect(o).not.toContain(canary.token);
  await listener.close();
  canary.remove();
});

describe('python (Pyodide in a jailed process)', () => {
  it.each([
    ['reads /etc/passwd', "print(open('/etc/passwd').read())"],
    ['reads the canary file by its host path', 'print(open(CANARY).read())'],
    ['fools the import check with a str subclass', [
      'class S(str):',
      "    def split(self, *a, **k): return ['math']",
      "    def partition(self, *a, **k): return ('math', '', '')",
      '    def __eq__(self, other): return True',
      '    __hash__ = str.__hash__',
      "m = __import__(S('_pyodide_core'))",
      "print('GOT', m.to_js)",
    ].join('\n')],
    ['creates _pyodide_core through _imp.create_builtin', [
      'import _imp, importlib.machinery',
      "spec = importlib.machinery.ModuleSpec('_pyodide_core', importlib.machinery.BuiltinImporter)",
      "print('GOT', _imp.create_builtin(spec))",
    ].join('\n')],
    ['re-imports _imp to get create_builtin back', "import sys\ndel sys.modules['_imp']\nimport _imp\nprint('GOT', _imp)"],
    ['imports pyodide.ffi for to_js of memoryviews', 'from pyodide.ffi import to_js\nx = [to_js(memoryview(bytearray(100 * 2**20))) for _ in range(15)]'],
    ['imports js', 'import js\nprint(js.process.env)'],
    ['connects to the listener', 'import socket\nsocket.create_connection(("127.0.0.1", PORT)).send(b"escaped")'],
    ['sends UDP to the listener', 'import socket\nsocket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"escaped", ("127.0.0.1", PORT))'],
    ['fetches the listener with urllib', 'import urllib.request\nurllib.request.urlopen("http://127.0.0.1:%d/" % PORT)'],
    ['runs a process', "import os\nos.system('cat /etc/passwd')"],
    ['signals a process', 'import os\nos.kill(1, 9)'],
  ])('%s: refused', async (_name, code) => {
    const r = await py(`CANARY = ${JSON.stringify(canary.file)}\nPORT = ${listener.port}\n${code}`);
    expect(r.error?.kind, r.stderr).toBe('forbidden');
    expect(r.stdout).not.toContain('GOT');
  });

  it('loads a hand-made wasm shared library whose EM_JS would run as JavaScript: refused, nothing evaluated', async () => {
    // The EM_JS body runs when the dynamic linker evaluates it: it would write what it read into /workspace.
    const payload = `0, (() => { let r; try { r = 'EVAL-RAN ' + require('fs').readFileSync(${JSON.stringify(canary.file)}, 'utf8'); }`
      + ` catch (e) { r = 'EVAL-RAN ' + e; } FS.writeFile('/workspace/escaped.txt', r); })()`;
    const ws = new Workspace();
    const r = await py(loadLibraryPython(emJsLibrary(payload)), { workspace: ws });
    expect(r.error?.kind, r.stderr).toBe('forbidden');
    expect(r.stderr).toMatch(/loading native modules is not allowed/);
    expect(ws.has('escaped.txt')).toBe(false);
  });

  it('walks frames and __main__ for _pyodide_core: not there', async () => {
    const r = await py([
      'import sys, __main__',
      'f = sys._getframe()',
      'while f.f_back: f = f.f_back',
      "print('_pyodide_core' in f.f_globals, '_pyodide_core' in vars(__main__), [k for k in sys.modules if 'pyodide' in k or k == 'js'])",
    ].join('\n'));
    expect(r.stdout).toBe('False False []\n');
  });

  it("takes a JS function from Pyodide's internals (time.sleep's globals) and asks its constructor for the global object: nothing", async () => {
    const r = await py([
      'import time',
      "make = time.sleep.__globals__['create_once_callable']",
      'f = make(lambda: 1)',
      "g = f.constructor('return globalThis')()",
      "print('GOT', g.process, g.indexedDB)",
    ].join('\n'));
    expect(r.ok).toBe(false);
    expect(r.stdout).not.toContain('GOT');
  });

  it('sees no host environment variable', async () => {
    const r = await py('import os\nprint(sorted(os.environ.items()))');
    expect(r.ok).toBe(true);
    expect(r.stdout).not.toContain(canary.envName);
  });

  it('floods stdout with 120 MB: clipped, the host stays small', async () => {
    const before = hostRssMb();
    const { value: r, peakRssMb } = await watched(() => py("import sys\nsys.stdout.write('x' * (120 * 2**20))", { memoryMb: 512 }));
    expect(r.stdout.length).toBeLessThan(2100);
    expect(r.stdout).toMatch(/truncated 12582\d{4} chars/);
    expect(peakRssMb - before).toBeLessThan(64);
  });

  it('fills the workspace past its cap: nothing saved, the host never buffers it', async () => {
    const ws = new Workspace();
    const mb = WORKSPACE_MAX_BYTES / 2 ** 20 + 16;
    const r = await py(`for i in range(${mb / 4}):\n    open('f%d.bin' % i, 'wb').write(b'x' * (4 * 2**20))`, { workspace: ws, memoryMb: 512 });
    expect(r.error?.kind).toBe('forbidden');
    expect(r.error?.message).toMatch(/workspace holds at most/);
    expect(ws.list()).toEqual([]);
  });

  it('runs forever: stopped within 2x its time limit, the caller\'s event loop keeps turning', async () => {
    const { value: r, ms, ticks } = await watched(() => py('while True: pass', { timeoutMs: 1000 }));
    expect(r.error?.kind).toBe('timeout');
    expect(ms).toBeLessThan(2000);
    expect(ticks).toBeGreaterThan(20);
    expect((await py('print("alive")')).stdout).toBe('alive\n');
  });
});

describe('javascript (QuickJS in a jailed process)', () => {
  it('finds no host object among its globals, nor through the Function constructor', async () => {
    const r = await js([
      'const g = Function("return this")();',
      'console.log(typeof process, typeof require, typeof fetch, typeof globalThis.process, typeof g.process, typeof g.require);',
      'console.log(Object.getOwnPropertyNames(g).filter((k) => /process|require|fetch|module|import/i.test(k)).join(",") || "none");',
    ].join('\n'));
    expect(r.stdout).toBe('undefined undefined undefined undefined undefined undefined\nnone\n');
  });

  it('imports a URL: refused, nothing fetched', async () => {
    const r = await js(`import("http://127.0.0.1:${listener.port}/x.js").then(() => console.log("GOT"))`);
    expect(r.ok).toBe(false);
    expect(r.stdout).not.toContain('GOT');
  });

  it.each([['../../etc/passwd'], ['/etc/passwd'], ['CANARY']])('reads %s: refused or absent', async (p) => {
    const r = await js(`console.log(readFile(${JSON.stringify(p === 'CANARY' ? canary.file : p)}))`);
    expect(r.ok).toBe(false);
  });

  it('builds an array bomb: a memory error, the host within 1.5x the limit', async () => {
    const before = hostRssMb();
    const { value: r, peakRssMb } = await watched(() => js('const a = []; for (;;) a.push(new Array(1e6).fill(1.5));', { memoryMb: 128, timeoutMs: 10_000 }));
    expect(r.error?.kind).toBe('memory');
    expect(peakRssMb - before).toBeLessThan(1.5 * 128);
    expect((await js('console.log(1)')).stdout).toBe('1\n');
  });

  it('logs a 120 MB string: clipped inside the guest, the host stays small', async () => {
    const before = hostRssMb();
    const { value: r, peakRssMb } = await watched(() => js('console.log("x".repeat(120 * 2**20))', { memoryMb: 512, timeoutMs: 10_000 }));
    expect(r.stdout).toMatch(/truncated \d+ chars/);
    expect(r.stdout.length).toBeLessThan(2100);
    expect(peakRssMb - before).toBeLessThan(64);
  });

  it('writes 8 x 16 MB into the workspace: refused past the cap, the host stays small', async () => {
    const ws = new Workspace();
    const before = hostRssMb();
    const { value: r, peakRssMb } = await watched(() => js(
      'const s = "x".repeat(16 * 2**20); for (let i = 0; i < 8; i++) writeFile("f" + i + ".txt", s);', { workspace: ws, memoryMb: 512, timeoutMs: 10_000 },
    ));
    expect(r.error?.kind).toBe('forbidden');
    expect(ws.bytes()).toBeLessThanOrEqual(WORKSPACE_MAX_BYTES);
    expect(peakRssMb - before).toBeLessThan(1.5 * WORKSPACE_MAX_BYTES / 2 ** 20);
  });

  it('runs forever: stopped within 2x its time limit, off the caller\'s thread', async () => {
    const { value: r, ms, ticks } = await watched(() => js('while (true) {}', { timeoutMs: 1000 }));
    expect(r.error?.kind).toBe('timeout');
    expect(ms).toBeLessThan(2000);
    expect(ticks).toBeGreaterThan(20); // the old in-thread QuickJS let none through
  });
});

describe('sql (DuckDB-wasm in a jailed process)', () => {
  it('answers a plain query (so the refusals below are refusals, not a broken tool)', async () => {
    const ws = new Workspace();
    ws.write('data.csv', 'x\n1\n2\n', 'task');
    const r = await q('SELECT sum(x) AS s FROM data', { workspace: ws });
    expect(r.stdout).toContain('s\n3\n');
  });

  it.each([
    ['reads /etc/passwd', "SELECT * FROM read_csv('/etc/passwd')"],
    ['reads the canary file', "SELECT * FROM read_text('CANARY')"],
    ['writes a host file', "COPY (SELECT 'escaped' AS x) TO 'TARGET'"],
    ['turns external access back on', 'SET enable_external_access = true'],
    ['installs httpfs', 'INSTALL httpfs; LOAD httpfs'],
    ['fetches the listener', "SELECT * FROM read_csv('http://127.0.0.1:PORT/x.csv')"],
    ['attaches a host database', "ATTACH 'TARGET' AS x"],
  ])('%s: refused', async (_name, code) => {
    const r = await q(code.replace('CANARY', canary.file).replace('TARGET', canary.writeTarget).replace('PORT', String(listener.port)));
    expect(r.ok).toBe(false);
  });

  it('runs a recursive query forever: stopped within 2x its time limit', async () => {
    const { value: r, ms } = await watched(() => q('WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t) SELECT count(*) FROM t', { timeoutMs: 1500 }));
    expect(r.error?.kind).toBe('timeout');
    expect(ms).toBeLessThan(3000);
  });
});

describe('the jail itself (host JavaScript inside it, as if every wall in the interpreter had fallen)', () => {
  it('reads, writes, spawns, evaluates, signals and connects nothing', async () => {
    // Its own listener: without a network namespace (below) this attempt's packets are expected to arrive.
    const jailListener = await startListener();
    const script = path.join(repo, 'test/fixtures/jail-escape.mjs');
    const child = await startJail({ script, readPaths: [path.join(repo, 'src/core/tools/worker/jail-port.mjs')] });
    const results = await new Promise<Record<string, string>>((resolve, reject) => {
      child.onExit(reject);
      child.onMessage((m) => {
        if (m.type === 'ready') child.post({ type: 'go', canaryFile: canary.file, writeTarget: canary.writeTarget, envName: canary.envName, port: jailListener.port, hostPid: process.pid });
        if (m.type === 'results') resolve(m.results);
      });
    });
    await child.terminate();
    const escaped = Object.entries(results).filter(([, v]) => v.startsWith('OK'));
    const network = ['tcp to the listener', 'udp to the listener', 'fetch the listener', 'dns query to the listener'];
    if (netIsolation() === 'none') {
      // No network namespace on this OS: the permission model does not cover sockets (docs/threat-model.md).
      console.warn(`[red-team] no network namespace here: the jail's network attempts gave ${JSON.stringify(escaped)}, its listener ${JSON.stringify(jailListener.hits())}`);
      expect(escaped.filter(([k]) => !network.includes(k) && k !== 'signal the host')).toEqual([]);
    } else {
      expect(escaped).toEqual([]);
      expect(jailListener.hits()).toEqual([]);
    }
    await jailListener.close();
    expect(JSON.stringify(results)).not.toContain(canary.token);
  });

  it('grows past its memory ceiling: killed, the exit says memory', async () => {
    const script = path.join(repo, 'test/fixtures/jail-escape.mjs');
    const child = await startJail({ script, readPaths: [path.join(repo, 'src/core/tools/worker/jail-port.mjs')], maxHeapMb: 2048 });
    const reason = await new Promise<string>((resolve) => {
      child.onExit(resolve);
      child.onMessage((m) => {
        if (m.type === 'ready') {
          child.setRssCeiling((child.rssBytes() ?? 0) + 128 * 2 ** 20);
          child.post({ type: 'alloc', mb: 1024 });
        }
        if (m.type === 'allocated') resolve('allocated all 1024 MB');
      });
    });
    await child.terminate();
    expect(reason).toMatch(/^memory: the interpreter process reached \d+ MB/);
    expect(Number(/reached (\d+)/.exec(reason)![1])).toBeLessThan((1.5 * 128) + 100); // base (~50 MB) + 1.5 x the limit
  });
});
