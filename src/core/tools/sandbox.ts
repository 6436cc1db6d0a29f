// Sandbox: runs the untrusted code that agents write in fenced blocks and turns the outcome into the
// tool observation the agent reads next.
//
// For: short stdlib-only Python (Pyodide) and plain JavaScript (QuickJS) snippets with a time limit,
// a memory limit, captured and clipped stdout/stderr, and a per-trajectory Workspace as the only
// file system. Not for: packages, network, the DOM, or anything that needs the host.
//
// Where it runs (the Node vs browser difference; docs/threat-model.md says what each layer holds):
// - Node: each interpreter (Pyodide, QuickJS) is a jailed child process (jail.ts): Node's permission
//   model (reads of its own files only, no writes, child processes, workers or addons), no code
//   generation from strings, an empty environment, its own network and pid namespaces where the OS
//   gives them unprivileged, framed messages of bounded size and a resident-memory ceiling.
// - Browser: each interpreter is a module Web Worker whose script carries a Content-Security-Policy
//   (no eval, no script or connection but the site's own, no nested workers).
// - Time, both: Python interrupts itself at its deadline (KeyboardInterrupt) and QuickJS's interrupt
//   handler stops it; a run still going past a grace period is killed with its worker, and the next run
//   starts a fresh one (QuickJS ~0.2 s, Pyodide ~2-8 s, loaded in the background right after the kill).
// - Inside both: Pyodide's audit hook and import checks compare exact strings, no native module can be
//   loaded, and no WebAssembly is compiled once Pyodide is up (worker/python-worker.mjs); QuickJS sees
//   no host object at all (worker/quickjs-worker.mjs). The Workspace is capped (workspace.ts).
//
// Example:
//   const sb = createSandbox();   // from code-sandbox.ts: both interpreters behind this interface
//   const r = await sb.run('print(6*7)', { language: 'python', timeoutMs: 2000 });
//   formatObservation(r) -> "```output\n42\n```"

import type { Workspace } from './workspace.ts';

export type SandboxLanguage = 'python' | 'javascript';

export interface RunOptions {
  language?: SandboxLanguage; // default 'python'
  timeoutMs?: number; // default 2000
  memoryMb?: number; // default 256
  workspace?: Workspace;
  owner?: string; // agent whose code this is; files it writes are tagged with it
}

export type RunErrorKind = 'timeout' | 'memory' | 'forbidden' | 'exception' | 'crash';

export interface RunResult {
  ok: boolean;
  stdout: string; // clipped to OUTPUT_LIMIT characters plus a truncation marker
  stderr: string;
  error?: { kind: RunErrorKind; message: string };
  durationMs: number;
}

export interface Sandbox {
  run(code: string, opts?: RunOptions): Promise<RunResult>;
  dispose(): Promise<void>;
}

export const OUTPUT_LIMIT = 2000; // characters kept per stream
export const DEFAULT_TIMEOUT_MS = 2000;
export const DEFAULT_MEMORY_MB = 256;

/**
 * Keeps the first and last OUTPUT_LIMIT/2 characters of a stream while counting the rest, so a
 * flood of prints costs constant memory. Example with limit 6: write('abcdefghij') ->
 * text() = 'abc\n... [truncated 4 chars]\nhij'.
 */
class OutputBuffer {
  private head = '';
  private tail = '';
  private total = 0;
  constructor(private readonly limit = OUTPUT_LIMIT) {}

  write(chunk: string): void {
    this.total += chunk.length;
    const half = Math.floor(this.limit / 2);
    if (this.head.length < half) {
      const take = Math.min(half - this.head.length, chunk.length);
      this.head += chunk.slice(0, take);
      chunk = chunk.slice(take);
    }
    if (chunk.length > 0) this.tail = (this.tail + chunk).slice(-(this.limit - half));
  }

  text(): string {
    return clipParts(this.head, this.tail, this.total);
  }
}

/** A stream clipped in a worker: its first and last characters and how many it had (`clipParts` joins them). */
export interface Clip {
  head: string;
  tail: string;
  total: number;
}

/** Joins a head and tail of a stream of `total` characters, marking what was dropped in between. */
export function clipParts(head: string, tail: string, total: number): string {
  const dropped = total - head.length - tail.length;
  if (dropped <= 0) return head + tail;
  return `${head}\n... [truncated ${dropped} chars]\n${tail}`;
}

/** Clips one whole string the same way OutputBuffer does. */
export function clipOutput(text: string, limit = OUTPUT_LIMIT): string {
  const buffer = new OutputBuffer(limit);
  buffer.write(text);
  return buffer.text();
}

/** A one-line, agent-readable explanation for each error kind. */
export function describeError(kind: RunErrorKind, message: string, limits: { timeoutMs?: number; memoryMb?: number } = {}): string {
  switch (kind) {
    case 'timeout':
      return `Error: execution exceeded the ${limits.timeoutMs ?? DEFAULT_TIMEOUT_MS} ms time limit and was stopped.`;
    case 'memory':
      return `Error: execution exceeded the ${limits.memoryMb ?? DEFAULT_MEMORY_MB} MB memory limit (${message}).`;
    case 'forbidden':
      return `Error: forbidden: ${message}. There is no network or host access; only files in the workspace (current directory).`;
    case 'crash':
      return `Error: the interpreter crashed (${message}); it was restarted, so state from earlier runs is gone.`;
    case 'exception':
      return `Error: ${message}`;
  }
}

/**
 * Renders the observation an agent sees after its code block ran.
 * Example: {ok: true, stdout: '42\n', stderr: ''} -> "```output\n42\n```";
 * a timeout adds "Error: execution exceeded the 2000 ms time limit and was stopped." after the block.
 */
export function formatObservation(result: RunResult): string {
  const parts: string[] = [];
  const stdout = result.stdout.replace(/\n$/, '');
  const stderr = result.stderr.replace(/\n$/, '');
  if (stdout) parts.push('```output\n' + stdout + '\n```');
  if (stderr) parts.push('```stderr\n' + stderr + '\n```');
  if (result.error) parts.push(result.error.message);
  if (parts.length === 0) parts.push('```output\n(no output)\n```');
  return parts.join('\n');
}

/**
 * A Sandbox over one interpreter whose runs never overlap: each run waits for the previous one,
 * and dispose waits for the last before shutting the interpreter down.
 * Example: return serialSandbox(runNow, () => worker.terminate());
 */
export function serialSandbox(runNow: (code: string, opts: RunOptions) => Promise<RunResult>, shutdown: () => Promise<void>): Sandbox {
  let queue: Promise<unknown> = Promise.resolve();
  return {
    run(code, opts = {}) {
      const result = queue.then(() => runNow(code, opts));
      queue = result.catch(() => undefined);
      return result;
    },
    async dispose() {
      await queue;
      await shutdown();
    },
  };
}
