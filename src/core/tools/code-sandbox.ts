/**
 * The agents' code tool: one Sandbox for both languages, each interpreter started on first use.
 * Python goes to a Pyodide worker (python-sandbox.ts), JavaScript to QuickJS (js-sandbox.ts).
 *
 * For: the shells and the loop (`createSandbox()`); kept apart from sandbox.ts (the Sandbox
 * interface and helpers both interpreters import), so no module imports back the one that
 * loads it. Not for: SQL (sql.ts is its own Sandbox).
 * Example: const sb = createSandbox(); (await sb.run('print(6 * 7)')).stdout === '42\n'
 */
import type { Sandbox } from './sandbox.ts';

/**
 * One sandbox for both languages: Python goes to a lazily started Pyodide worker, JavaScript to
 * QuickJS. `pyodideIndexURL` is where pyodide.mjs and its assets are served (browser); in Node it
 * defaults to node_modules/pyodide.
 */
export function createSandbox(config: { pyodideIndexURL?: string } = {}): Sandbox {
  let python: Promise<Sandbox> | undefined;
  let javascript: Promise<Sandbox> | undefined;
  return {
    async run(code, opts = {}) {
      if ((opts.language ?? 'python') === 'javascript') {
        javascript ??= import('./js-sandbox.ts').then((m) => m.createJsSandbox());
        return (await javascript).run(code, opts);
      }
      python ??= import('./python-sandbox.ts').then((m) => m.createPythonSandbox(config));
      return (await python).run(code, opts);
    },
    async dispose() {
      await Promise.all([python, javascript].map(async (s) => (await s)?.dispose()));
      python = javascript = undefined;
    },
  };
}
