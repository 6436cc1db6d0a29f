// JavaScript sandbox: agent code runs in QuickJS (WebAssembly) in the caller's thread, Node or browser.
//
// For: plain ES2023 snippets that compute and print. Not for: modules, npm packages, timers, network,
// DOM. The guest sees only the QuickJS built-ins plus what we inject:
//   console.log/info/warn/error          captured into stdout / stderr
//   readFile(path) -> string, writeFile(path, text), listFiles() -> string[]   bound to the Workspace
// Isolation comes from WebAssembly: the guest heap is a separate linear memory and the guest cannot
// name any host object we did not hand it. Limits: runtime.setMemoryLimit (allocation fails with
// "out of memory"), a stack limit, and an interrupt handler polled by the interpreter (time limit).
// A fresh runtime is made per run, so no guest state survives between runs except workspace files.
//
// Example: await createJsSandbox().run('console.log([1,2,3].map(x => x * 2).join(","))')
//   -> {ok: true, stdout: '2,4,6\n', stderr: '', durationMs: 3}

import {
  newQuickJSWASMModule, shouldInterruptAfterDeadline, type QuickJSContext, type QuickJSHandle, type QuickJSWASMModule,
} from 'quickjs-emscripten';
import {
  DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT_MS, OutputBuffer, describeError, type RunErrorKind, type RunOptions, type RunResult, type Sandbox,
} from './sandbox.ts';
import { normalizeWorkspacePath } from './workspace.ts';

// QuickJS recursion also uses the host's native stack: 512 KiB overflowed Node's ~1 MB stack, 256 KiB
// allows ~1500 nested JS calls and fails cleanly with a guest RangeError.
const STACK_LIMIT_BYTES = 256 * 1024;
// Host things agents commonly reach for; naming them gets a 'forbidden' observation instead of a bare ReferenceError.
const HOST_GLOBALS = [
  'fetch', 'require', 'process', 'XMLHttpRequest', 'WebSocket', 'window', 'document', 'Deno', 'Bun', 'module', 'importScripts', 'setTimeout', 'setInterval',
];

export function createJsSandbox(): Sandbox {
  // One WebAssembly module per sandbox; runtimes are cheap and made per run. If a run breaks the
  // module itself (a host-side stack overflow or an abort), the next run gets a fresh module.
  let quickjs: Promise<QuickJSWASMModule> | undefined;
  return {
    async run(code: string, opts: RunOptions = {}): Promise<RunResult> {
      quickjs ??= newQuickJSWASMModule();
      const { result, moduleBroken } = runInQuickJS(await quickjs, code, opts);
      if (moduleBroken) quickjs = undefined;
      return result;
    },
    async dispose() {
      quickjs = undefined;
    },
  };
}

function runInQuickJS(quickjs: QuickJSWASMModule, code: string, opts: RunOptions): { result: RunResult; moduleBroken: boolean } {
  const started = Date.now();
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const memoryMb = opts.memoryMb ?? DEFAULT_MEMORY_MB;
  const stdout = new OutputBuffer();
  const stderr = new OutputBuffer();
  const files = new Map<string, string>(); // working copy of the workspace, text only
  const written = new Set<string>();
  for (const { path, bytes } of opts.workspace?.snapshot() ?? []) files.set(path, new TextDecoder().decode(bytes));

  const runtime = quickjs.newRuntime();
  runtime.setMemoryLimit(memoryMb * 1024 * 1024);
  runtime.setMaxStackSize(STACK_LIMIT_BYTES);
  runtime.setInterruptHandler(shouldInterruptAfterDeadline(started + timeoutMs));
  const vm = runtime.newContext();
  let error: RunResult['error'];
  let moduleBroken = false;
  try {
    installConsole(vm, stdout, stderr);
    installFiles(vm, files, written);
    const result = vm.evalCode(code, 'agent.js');
    if (result.error) {
      error = classify(vm, result.error, code);
      result.error.dispose();
    } else {
      error = settle(vm, runtime, result.value, code);
      result.value.dispose();
    }
  } catch (e) {
    // Host-side failure: QuickJS ran out of memory while reporting an error, or the host stack overflowed.
    error = { kind: /memory/i.test(String(e)) ? 'memory' : 'crash', message: String(e) };
    moduleBroken = true;
  }
  try {
    vm.dispose();
    runtime.dispose();
  } catch {
    moduleBroken = true; // leaked guest objects abort JS_FreeRuntime; never reuse that module
  }
  if (opts.workspace && written.size > 0) {
    const changed = [...written].map((path) => ({ path, bytes: new TextEncoder().encode(files.get(path) ?? '') }));
    opts.workspace.applyChanges(changed, [], opts.owner ?? 'unknown');
  }
  // An exception's stack goes to stderr (as Python's traceback does); the error line stays one line.
  const detail = error?.kind === 'exception' ? error.message : undefined;
  if (error) error = { kind: error.kind, message: describeError(error.kind, error.message.split('\n')[0], { timeoutMs, memoryMb }) };
  if (detail) stderr.write(detail + '\n');
  const result = { ok: !error, stdout: stdout.text(), stderr: stderr.text(), error, durationMs: Date.now() - started };
  return { result, moduleBroken };
}

/** If the code evaluated to a promise (async IIFE), run its jobs until it settles. */
function settle(vm: QuickJSContext, runtime: QuickJSContext['runtime'], value: QuickJSHandle, code: string): RunResult['error'] {
  for (;;) {
    const jobs = runtime.executePendingJobs();
    if (jobs.error) {
      const err = classify(vm, jobs.error, code);
      jobs.error.dispose();
      return err;
    }
    if (jobs.value === 0) break;
  }
  if (vm.typeof(value) !== 'object') return undefined;
  const state = vm.getPromiseState(value);
  if (state.type === 'rejected') {
    const err = classify(vm, state.error, code);
    state.error.dispose();
    return err;
  }
  if (state.type === 'fulfilled' && !state.notAPromise) state.value.dispose();
  return undefined;
}

function classify(vm: QuickJSContext, handle: QuickJSHandle, code: string): { kind: RunErrorKind; message: string } {
  const dumped = vm.dump(handle) as { name?: string; message?: string; stack?: string } | string;
  const name = typeof dumped === 'object' && dumped ? String(dumped.name ?? 'Error') : 'Error';
  const message = typeof dumped === 'object' && dumped ? String(dumped.message ?? '') : String(dumped);
  if (name === 'InternalError' && /interrupted/.test(message)) return { kind: 'timeout', message };
  if (message.startsWith('forbidden: ')) return { kind: 'forbidden', message: message.slice('forbidden: '.length) };
  if (/out of memory/i.test(message)) return { kind: 'memory', message: `${name}: ${message}` };
  if (name === 'RangeError' && /invalid array length/i.test(message)) return { kind: 'memory', message: `${name}: ${message}` };
  const missing = /'?([A-Za-z_$][\w$]*)'? is not defined/.exec(message)?.[1];
  if (name === 'ReferenceError' && missing && HOST_GLOBALS.includes(missing)) {
    return { kind: 'forbidden', message: `'${missing}' is not available (no network, no host, no timers; use console.log, readFile, writeFile, listFiles)` };
  }
  if (/could not load module/.test(message) || (name === 'SyntaxError' && /\bimport\b/.test(code) && /import|module/i.test(message))) {
    return { kind: 'forbidden', message: `modules cannot be imported in the sandbox (${message})` };
  }
  const where = typeof dumped === 'object' && dumped?.stack ? `\n${String(dumped.stack).trim()}` : '';
  return { kind: 'exception', message: `${name}: ${message}${where}` };
}

function installConsole(vm: QuickJSContext, stdout: OutputBuffer, stderr: OutputBuffer): void {
  const consoleHandle = vm.newObject();
  for (const [method, sink] of [['log', stdout], ['info', stdout], ['debug', stdout], ['warn', stderr], ['error', stderr]] as const) {
    const fn = vm.newFunction(method, (...args) => {
      sink.write(args.map((a) => formatValue(vm, a)).join(' ') + '\n');
    });
    vm.setProp(consoleHandle, method, fn);
    fn.dispose();
  }
  vm.setProp(vm.global, 'console', consoleHandle);
  consoleHandle.dispose();
}

function formatValue(vm: QuickJSContext, handle: QuickJSHandle): string {
  const type = vm.typeof(handle);
  if (type === 'string') return vm.getString(handle);
  if (type === 'undefined') return 'undefined';
  if (type === 'function') return '[Function]';
  const value = vm.dump(handle);
  if (typeof value === 'object' && value !== null) {
    try {
      return JSON.stringify(value);
    } catch {
      return String(value);
    }
  }
  return String(value);
}

function installFiles(vm: QuickJSContext, files: Map<string, string>, written: Set<string>): void {
  const fail = (message: string) => ({ error: vm.newError(message) });
  /** The workspace path a script named, or the error to throw in the script (paths outside are forbidden). */
  const resolve = (raw: string): { path: string } | { error: ReturnType<typeof vm.newError> } => {
    try {
      return { path: normalizeWorkspacePath(raw) };
    } catch (e) {
      return fail(`forbidden: ${(e as Error).message}`);
    }
  };
  const readFile = vm.newFunction('readFile', (pathHandle) => {
    const raw = vm.getString(pathHandle);
    const r = resolve(raw);
    if ('error' in r) return r;
    const path = r.path;
    const text = files.get(path);
    if (text === undefined) return fail(`readFile: no file '${raw}' in the workspace (listFiles() shows what exists)`);
    return vm.newString(text);
  });
  const writeFile = vm.newFunction('writeFile', (pathHandle, textHandle) => {
    const r = resolve(vm.getString(pathHandle));
    if ('error' in r) return r;
    const path = r.path;
    files.set(path, textHandle ? vm.getString(textHandle) : '');
    written.add(path);
  });
  const listFiles = vm.newFunction('listFiles', () => {
    const array = vm.newArray();
    [...files.keys()].sort().forEach((name, i) => {
      const s = vm.newString(name);
      vm.setProp(array, i, s);
      s.dispose();
    });
    return array;
  });
  for (const [name, fn] of [['readFile', readFile], ['writeFile', writeFile], ['listFiles', listFiles]] as const) {
    vm.setProp(vm.global, name, fn);
    fn.dispose();
  }
}
