// QuickJS worker: runs agent JavaScript in QuickJS (WebAssembly) off the caller's thread: in Node a
// jailed child process (src/core/tools/jail.ts), in the browser a Web Worker of the page's opaque-origin
// frame (else of the page's origin). Its time and memory limits hold there: the host kills it when a
// run outlives its deadline (or, in Node, its memory ceiling), and the next run starts a fresh one.
//
// For: plain ES2023 snippets that compute and print. The guest sees only the QuickJS built-ins plus
//   console.log/info/debug/warn/error   captured, each call clipped inside the guest first
//   readFile(path) -> string, writeFile(path, text), listFiles() -> string[]   over the run's workspace copy
// Not for: modules, timers, network, DOM. A fresh QuickJS runtime per run; the module is reused.
// Plain JavaScript (the jailed process loads no TypeScript); its one import, quickjs-emscripten, is
// read from node_modules, which the jail lets it read. The browser runs it in the page's opaque-origin
// frame as one self-contained script (vite.config.ts, quickjsFrameWorker(): no import of a URL), and
// hands it QuickJS's wasm as bytes in 'init'; without a frame, as a same-origin module worker (the
// bundler builds it, and the wasm loads beside it by URL).
//
// Protocol (host <-> worker):
//   host:   {type:'init', wasmBinary?: ArrayBuffer} first: the module is compiled (from these bytes where given)
//   host:   {type:'run', id, code, files: [{path, bytes}], timeoutMs, memoryBytes, maxWorkspaceBytes, maxWorkspaceFiles}
//   worker: {type:'done', id, stdout: Clip, stderr: Clip, error?: {kind, message}, written: [{path, bytes}], moduleBroken}
//   worker: {type:'ready'} once the module is compiled, or {type:'init-error', message}.
//   where Clip = {head, tail, total}: first/last 1000 characters and the total length.
//
// Example: host posts {type:'run', id: 1, code: 'console.log(6*7)', files: [], timeoutMs: 2000, memoryBytes: 2**28, ...}
//          -> {type:'done', id: 1, stdout: {head: '42\n', tail: '', total: 3}, ...}

import { RELEASE_SYNC, newQuickJSWASMModule, newVariant, shouldInterruptAfterDeadline } from 'quickjs-emscripten';

const IS_NODE = typeof process !== 'undefined' && !!process.versions?.node && typeof WorkerGlobalScope === 'undefined';

// QuickJS recursion also uses the host's native stack: 256 KiB allows ~1500 nested JS calls and fails
// cleanly with a guest RangeError.
const STACK_LIMIT_BYTES = 256 * 1024;
const CLIP_HALF = 1000;
const MAX_PATH_LENGTH = 200;
// Host things agents commonly reach for; naming them gets a 'forbidden' observation instead of a bare ReferenceError.
const HOST_GLOBALS = [
  'fetch', 'require', 'process', 'XMLHttpRequest', 'WebSocket', 'window', 'document', 'Deno', 'Bun', 'module', 'importScripts', 'setTimeout', 'setInterval',
];
// Installed in the guest before its code: console formats and clips in the guest (under its memory and
// time limits), so one call hands the host at most 2 x CLIP_HALF characters.
const GUEST_CONSOLE = `(() => {
  const out = globalThis.__out; delete globalThis.__out;
  const fmt = (v) => { if (typeof v === 'string') return v; if (typeof v === 'function') return '[Function]';
    if (v === undefined) return 'undefined'; if (typeof v === 'bigint') return String(v) + 'n';
    try { const s = JSON.stringify(v); return s === undefined ? String(v) : s; } catch { return String(v); } };
  const send = (stream) => (...args) => { const s = args.map(fmt).join(' ') + '\\n';
    out(stream, s.length > ${2 * CLIP_HALF} ? s.slice(0, ${CLIP_HALF}) : s, s.length > ${2 * CLIP_HALF} ? s.slice(-${CLIP_HALF}) : '', s.length); };
  globalThis.console = { log: send(1), info: send(1), debug: send(1), warn: send(2), error: send(2) };
})();`;

function newClip() {
  return { head: '', tail: '', total: 0 };
}
/** Adds `text` to the clip, counting `total` characters (more than text.length when the caller already cut some). */
function clipWrite(clip, text, total = text.length) {
  clip.total += total;
  if (clip.head.length < CLIP_HALF) {
    const take = Math.min(CLIP_HALF - clip.head.length, text.length);
    clip.head += text.slice(0, take);
    text = text.slice(take);
  }
  if (text.length > 0) clip.tail = (clip.tail + text).slice(-CLIP_HALF);
}

/** The same normalisation as workspace.ts's normalizeWorkspacePath (relative, no '..' past the root). */
function normalizePath(path) {
  const parts = [];
  for (const part of String(path).replace(/\\/g, '/').split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (parts.length === 0) throw new Error(`path '${path}' leaves the workspace; use a relative path inside it`);
      parts.pop();
      continue;
    }
    parts.push(part);
  }
  const normalized = parts.join('/');
  if (normalized === '') throw new Error(`path '${path}' names no file; give a file name such as 'out.txt'`);
  if (normalized.length > MAX_PATH_LENGTH) throw new Error(`path '${String(path).slice(0, 40)}...' is longer than ${MAX_PATH_LENGTH} characters`);
  return normalized;
}

let quickjs;

// QuickJS's own limit counts its allocations; this one caps the WebAssembly memory under them (emscripten
// grows it in large steps): growth past the run's limit + 16 MiB fails, and QuickJS reports out of memory.
let growCap = Infinity;
const originalGrow = WebAssembly.Memory.prototype.grow;
WebAssembly.Memory.prototype.grow = function growWithinLimit(deltaPages) {
  if (this.buffer.byteLength + deltaPages * 65536 > growCap) throw new RangeError('sandbox memory limit reached');
  return originalGrow.call(this, deltaPages);
};

function run(message) {
  const started = Date.now();
  growCap = message.memoryBytes + 16 * 2 ** 20;
  const stdout = newClip();
  const stderr = newClip();
  const files = new Map();
  const written = new Set();
  const decoder = new TextDecoder();
  for (const { path, bytes } of message.files) files.set(path, decoder.decode(bytes));
  const runtime = quickjs.newRuntime();
  runtime.setMemoryLimit(message.memoryBytes);
  runtime.setMaxStackSize(STACK_LIMIT_BYTES);
  runtime.setInterruptHandler(shouldInterruptAfterDeadline(started + message.timeoutMs));
  const vm = runtime.newContext();
  let error;
  let moduleBroken = false;
  try {
    installConsole(vm, stdout, stderr);
    installFiles(vm, files, written, message);
    const result = vm.evalCode(message.code, 'agent.js');
    if (result.error) {
      error = classify(vm, result.error, message.code);
      result.error.dispose();
    } else {
      error = settle(vm, runtime, result.value, message.code);
      result.value.dispose();
    }
  } catch (e) {
    // Host-side failure: QuickJS ran out of memory while reporting an error, or the stack overflowed.
    error = { kind: /memory/i.test(String(e)) ? 'memory' : 'crash', message: String(e) };
    moduleBroken = true;
  }
  try {
    vm.dispose();
    runtime.dispose();
  } catch {
    moduleBroken = true; // leaked guest objects abort JS_FreeRuntime; never reuse that module
  }
  if (error?.kind === 'exception') clipWrite(stderr, error.message + '\n');
  const encoder = new TextEncoder();
  const changed = [...written].map((path) => ({ path, bytes: encoder.encode(files.get(path) ?? '') }));
  return { type: 'done', id: message.id, stdout, stderr, error, written: changed, moduleBroken };
}

/** If the code evaluated to a promise (async IIFE), run its jobs until it settles. */
function settle(vm, runtime, value, code) {
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

function classify(vm, handle, code) {
  const name = readString(vm, handle, 'name') ?? 'Error';
  const message = readString(vm, handle, 'message') ?? clipString(vm, handle);
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
  const stack = readString(vm, handle, 'stack');
  return { kind: 'exception', message: `${name}: ${message}${stack ? `\n${stack.trim()}` : ''}` };
}

/** A string property of a guest value, clipped to 2000 characters, or undefined when it is not a string. */
function readString(vm, handle, key) {
  if (vm.typeof(handle) !== 'object') return undefined;
  const prop = vm.getProp(handle, key);
  try {
    return vm.typeof(prop) === 'string' ? clipString(vm, prop) : undefined;
  } finally {
    prop.dispose();
  }
}

/** A guest value as text, at most 2 x CLIP_HALF characters copied out of the guest. */
function clipString(vm, handle) {
  if (vm.typeof(handle) !== 'string') return vm.typeof(handle);
  const length = vm.getProp(handle, 'length');
  const n = vm.getNumber(length);
  length.dispose();
  if (n <= 2 * CLIP_HALF) return vm.getString(handle);
  const slice = vm.getProp(handle, 'slice');
  const head = vm.unwrapResult(vm.callFunction(slice, handle, vm.newNumber(0), vm.newNumber(CLIP_HALF)));
  slice.dispose();
  const text = vm.getString(head);
  head.dispose();
  return `${text}... [${n - CLIP_HALF} more chars]`;
}

function installConsole(vm, stdout, stderr) {
  const out = vm.newFunction('__out', (stream, head, tail, total) => {
    // Only strings the guest-side console clipped are copied out; anything else is dropped.
    if (vm.typeof(head) !== 'string' || vm.typeof(tail) !== 'string') return;
    const h = clipString(vm, head);
    const t = clipString(vm, tail);
    const sink = vm.getNumber(stream) === 2 ? stderr : stdout;
    const n = Math.min(Math.max(vm.getNumber(total) || 0, h.length + t.length), 2 ** 40);
    clipWrite(sink, h, n - t.length);
    if (t) clipWrite(sink, t, t.length);
  });
  vm.setProp(vm.global, '__out', out);
  out.dispose();
  vm.unwrapResult(vm.evalCode(GUEST_CONSOLE, 'console.js')).dispose();
}

function installFiles(vm, files, written, limits) {
  const fail = (message) => ({ error: vm.newError(message) });
  const resolve = (raw) => {
    try {
      return { path: normalizePath(raw) };
    } catch (e) {
      return fail(`forbidden: ${e.message}`);
    }
  };
  const readFile = vm.newFunction('readFile', (pathHandle) => {
    const raw = clipString(vm, pathHandle);
    const r = resolve(raw);
    if ('error' in r) return r;
    const text = files.get(r.path);
    if (text === undefined) return fail(`readFile: no file '${raw}' in the workspace (listFiles() shows what exists)`);
    return vm.newString(text);
  });
  const writeFile = vm.newFunction('writeFile', (pathHandle, textHandle) => {
    const r = resolve(clipString(vm, pathHandle));
    if ('error' in r) return r;
    let size = 0;
    if (textHandle && vm.typeof(textHandle) === 'string') {
      const length = vm.getProp(textHandle, 'length');
      size = vm.getNumber(length);
      length.dispose();
    }
    let total = size;
    for (const [p, text] of files) if (p !== r.path) total += text.length;
    const count = files.size + (files.has(r.path) ? 0 : 1);
    if (total > limits.maxWorkspaceBytes || count > limits.maxWorkspaceFiles) {
      return fail(`forbidden: the workspace holds at most ${limits.maxWorkspaceFiles} files and ${limits.maxWorkspaceBytes / 2 ** 20} MB`);
    }
    files.set(r.path, textHandle ? vm.getString(textHandle) : '');
    written.add(r.path);
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
  for (const [name, fn] of [['readFile', readFile], ['writeFile', writeFile], ['listFiles', listFiles]]) {
    vm.setProp(vm.global, name, fn);
    fn.dispose();
  }
}

// Node: a jailed child process (frames on stdio); browser: a module Web Worker (in the frame or not).
const port = IS_NODE
  ? (await import(/* @vite-ignore */ './jail-port.mjs')).openJailPort()
  : { post: (m) => self.postMessage(m), onMessage: (fn) => void (self.onmessage = (e) => fn(e.data)) };

let wasmBinary; // the host's bytes of QuickJS's wasm (in the opaque-origin frame, which can fetch nothing)
/** QuickJS's release-sync build, from `wasmBinary` where the host gave it, else loaded beside this script. */
function loadQuickJs() {
  if (!wasmBinary) return newQuickJSWASMModule();
  // locateFile: emscripten would otherwise resolve the wasm's name against this script's blob: URL, which throws.
  return newQuickJSWASMModule(newVariant(RELEASE_SYNC, { wasmBinary, locateFile: (name) => name }));
}

port.onMessage(async (message) => {
  if (message.type === 'init') {
    wasmBinary = message.wasmBinary;
    try {
      quickjs = await loadQuickJs();
      port.post({ type: 'ready' });
    } catch (e) {
      port.post({ type: 'init-error', message: String(e) });
    }
    return;
  }
  if (message.type !== 'run') return;
  try {
    quickjs ??= await loadQuickJs();
    const done = run(message);
    if (done.moduleBroken) quickjs = undefined;
    port.post(done);
  } catch (e) {
    port.post({ type: 'done', id: message.id, stdout: newClip(), stderr: newClip(), error: { kind: 'crash', message: String(e) }, written: [], moduleBroken: true });
  }
});
