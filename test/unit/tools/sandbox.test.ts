// Sandbox tests: Python (Pyodide worker) and JavaScript (QuickJS), one shared sandbox per language.
// Pyodide loads once (~2-4 s) plus once more after each run that had to be killed.
import { afterAll, describe, expect, it } from 'vitest';
import { formatObservation, clipOutput, OUTPUT_LIMIT, type RunOptions } from '../../../src/core/tools/sandbox.ts';
import { createSandbox } from '../../../src/core/tools/code-sandbox.ts';
import { extractCodeBlocks } from '../../../src/core/tools/code-blocks.ts';
import { Workspace } from '../../../src/core/tools/workspace.ts';

const sandbox = createSandbox();
afterAll(() => sandbox.dispose());
// Time limits: a run that should end by itself gets 10x what it takes alone on a busy machine (a memory error or a
// refusal must not turn into a timeout when the cores are shared); a test of the time limit passes its own short one.
const py = (code: string, opts: RunOptions = {}) => sandbox.run(code, { language: 'python', timeoutMs: 15_000, ...opts });
const js = (code: string, opts: RunOptions = {}) => sandbox.run(code, { language: 'javascript', timeoutMs: 5_000, ...opts });

describe('extractCodeBlocks', () => {
  it('finds python, py, js, javascript and bare fences; skips other languages', () => {
    const text = 'Plan:\n```python\nprint(1)\n```\n```py\nx=2\n```\n```js\nconsole.log(3)\n```\n```javascript\n1\n```\n```\nprint(4)\n```\n```output\n1\n```\n```json\n{}\n```';
    expect(extractCodeBlocks(text)).toEqual([
      { language: 'python', code: 'print(1)' },
      { language: 'python', code: 'x=2' },
      { language: 'javascript', code: 'console.log(3)' },
      { language: 'javascript', code: '1' },
      { language: 'python', code: 'print(4)' },
    ]);
  });
  it('returns nothing for prose', () => expect(extractCodeBlocks('no code here, just `inline`')).toEqual([]));
});

describe('output clipping and observations', () => {
  it('keeps head and tail with a marker', () => {
    const text = 'a'.repeat(1500) + 'b'.repeat(1500);
    const clipped = clipOutput(text);
    expect(clipped).toBe('a'.repeat(1000) + '\n... [truncated 1000 chars]\n' + 'b'.repeat(1000));
    expect(clipOutput('short')).toBe('short');
  });
  it('formats output and errors', () => {
    expect(formatObservation({ ok: true, stdout: '42\n', stderr: '', durationMs: 1 })).toBe('```output\n42\n```');
    const timeout = formatObservation({ ok: false, stdout: '', stderr: '', durationMs: 1, error: { kind: 'timeout', message: 'Error: execution exceeded the 2000 ms time limit and was stopped.' } });
    expect(timeout).toBe('Error: execution exceeded the 2000 ms time limit and was stopped.');
  });
});

describe('python sandbox (Pyodide in a worker)', () => {
  it('prints and computes', async () => {
    const r = await py('import statistics\nprint(6 * 7, statistics.mean([1, 2, 3]))');
    expect(r).toMatchObject({ ok: true, stdout: '42 2\n', stderr: '' });
  });

  it('reports an exception with the traceback tail on stderr', async () => {
    const r = await py('def f():\n    raise ValueError("boom")\nf()');
    expect(r.ok).toBe(false);
    expect(r.error?.kind).toBe('exception');
    expect(r.stderr).toContain('line 2, in f');
    expect(r.stderr.trim().endsWith('ValueError: boom')).toBe(true);
    expect(r.stderr).not.toContain('<exec>'); // sandbox frames are hidden
  });

  it('stops an infinite loop and the next run works', async () => {
    const r = await py('while True: pass', { timeoutMs: 800 });
    expect(r.error?.kind).toBe('timeout');
    expect(formatObservation(r)).toContain('Error: execution exceeded the 800 ms time limit and was stopped.');
    expect((await py('print("alive")')).stdout).toBe('alive\n');
  });

  it('kills a loop that swallows the interrupt, then reloads', async () => {
    const r = await py('import time\nwhile True:\n    try:\n        time.sleep(10)\n    except BaseException:\n        pass', { timeoutMs: 500 });
    expect(r.error?.kind).toBe('timeout');
    expect((await py('print(1 + 1)')).stdout).toBe('2\n');
  });

  it('turns huge allocations into memory errors and keeps working', async () => {
    for (const code of ['x = bytearray(10**10)', 'x = [0] * 10**10', 'x = bytearray(300 * 1024 * 1024)', 'x = [bytearray(10**6) for _ in range(400)]']) {
      const r = await py(code, { memoryMb: 256 });
      expect(r.error?.kind, code).toBe('memory');
      expect(formatObservation(r)).toContain('256 MB memory limit');
    }
    expect((await py('print(sum(range(10)))')).stdout).toBe('45\n');
  });

  it.each([
    ['import js; print(js.process)', /import of 'js'/],
    ['from js import process', /import of 'js'/],
    ['import pyodide_js', /import of 'pyodide_js'/],
    ['from pyodide.code import run_js', /import of 'pyodide/],
    ["print(open('/etc/passwd').read())", /'\/etc\/passwd' is outside the workspace/],
    ["open('../../x', 'w').write('hi')", /outside the workspace/],
    ["import urllib.request; urllib.request.urlopen('http://127.0.0.1:9/')", /network access is disabled/],
    ["import socket; socket.create_connection(('127.0.0.1', 22))", /network access is disabled/],
    ["import os; os.system('ls /')", /os.system is not allowed/],
    ['import ctypes', /import of 'ctypes'/],
  ])('forbids %s', async (code, pattern) => {
    const r = await py(code);
    expect(r.error?.kind).toBe('forbidden');
    expect(r.error?.message).toMatch(pattern);
    expect(formatObservation(r)).toMatch(/^Error: forbidden: /m);
  });

  it('shares workspace files between runs and tags their owner', async () => {
    const ws = new Workspace();
    ws.write('input.csv', 'x\n1\n2\n', 'user');
    const w = await py("rows = open('input.csv').read().split()[1:]\nopen('sum.txt', 'w').write(str(sum(map(int, rows))))", { workspace: ws, owner: 'analyst' });
    expect(w.ok).toBe(true);
    expect(ws.list().map(({ path, owner }) => ({ path, owner }))).toEqual([
      { path: 'input.csv', owner: 'user' }, // only read, so it keeps its owner
      { path: 'sum.txt', owner: 'analyst' },
    ]);
    const r = await py("print(open('sum.txt').read())", { workspace: ws, owner: 'modeler' });
    expect(r.stdout).toBe('3\n');
    expect(ws.readText('sum.txt')).toBe('3');
    // Another trajectory's run does not see these files.
    expect((await py("import os; print(os.listdir('.'))")).stdout).toBe('[]\n');
  });

  it('clips long output to the limit with a marker', async () => {
    const r = await py("print('x' * 5000)");
    expect(r.stdout).toContain('... [truncated 3001 chars]');
    expect(r.stdout.length).toBeLessThan(OUTPUT_LIMIT + 40);
  });
});

describe('javascript sandbox (QuickJS)', () => {
  it('prints and computes', async () => {
    expect(await js('console.log([1, 2, 3].map((x) => x * 2).join(","), {a: 1})')).toMatchObject({ ok: true, stdout: '2,4,6 {"a":1}\n' });
  });
  it('stops an infinite loop and the next run works', async () => {
    const r = await js('while (true) {}', { timeoutMs: 500 });
    expect(r.error?.kind).toBe('timeout');
    expect((await js('console.log("alive")')).stdout).toBe('alive\n');
  });
  it('turns a huge allocation into a memory error', async () => {
    const r = await js('new Array(1e9).fill(0)', { memoryMb: 64, timeoutMs: 5000 });
    expect(r.error?.kind).toBe('memory');
    expect((await js('console.log(1)')).stdout).toBe('1\n');
  });
  it('survives deep recursion', async () => {
    const r = await js('function f() { return f(); } f()');
    expect(r.error?.kind).toBe('exception');
    expect(r.stderr).toContain('stack overflow');
  });
  it.each(['fetch("http://127.0.0.1/")', 'require("fs")', 'process.exit(1)', 'import("fs")'])('forbids %s', async (code) => {
    const r = await js(code);
    expect(r.error?.kind).toBe('forbidden');
  });
  it('reads and writes workspace files with owner tags', async () => {
    const ws = new Workspace();
    ws.write('a.txt', 'hello', 'analyst');
    const r = await js('writeFile("b.txt", readFile("a.txt").toUpperCase()); console.log(listFiles().join(","))', { workspace: ws, owner: 'coder' });
    expect(r.stdout).toBe('a.txt,b.txt\n');
    expect(ws.list().map((f) => [f.path, f.owner])).toEqual([['a.txt', 'analyst'], ['b.txt', 'coder']]);
    expect((await js('readFile("../etc/passwd")', { workspace: ws })).error?.kind).toBe('forbidden');
  });
  it('clips long output', async () => {
    expect((await js('console.log("y".repeat(5000))')).stdout).toContain('[truncated 3001 chars]');
  });
});
