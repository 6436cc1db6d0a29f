// Pyodide worker: runs agent Python inside a Node worker_thread or a browser module Web Worker.
//
// For: one interpreter per worker, reused across runs until the host kills it (timeout it could not
// interrupt, crash). Not for: packages (no micropip, no loadPackage), network, host files.
// Plain JavaScript (not TypeScript) on purpose: Node workers cannot load .ts files without a loader,
// and in the browser this file is served as-is. It has no bare imports: pyodide is loaded from the
// URL the host sends (node_modules/pyodide in Node, locally served assets in the browser).
//
// Protocol (host <-> worker, structured-clone messages):
//   host:   {type:'init', pyodideModuleUrl, indexURL, interruptBuffer?: SharedArrayBuffer, pyodideFiles?: {[name]: Uint8Array}}
//           (pyodideFiles: pyodide.mjs, pyodide.asm.mjs, pyodide.asm.wasm, python_stdlib.zip, pyodide-lock.json, in the
//           browser's opaque-origin frame, which cannot fetch them)
//   worker: {type:'ready', loadMs} | {type:'init-error', message}
//   host:   {type:'run', id, code, files: [{path, bytes}], timeoutMs, memoryLimitBytes, maxWorkspaceBytes, maxWorkspaceFiles}
//   worker: {type:'output', id, stdout: Clip, stderr: Clip}   (throttled snapshots while running)
//   worker: {type:'done', id, error?: {kind, message}, stdout: Clip, stderr: Clip, changed: [{path, bytes}], deleted: [path]}
//   where Clip = {head, tail, total}: first/last ~1000 characters and the total length.
//
// Defences, outermost first (the boundary is the first one; the rest are walls inside it):
// 0. Node: this runs in a jailed child process (src/core/tools/jail.ts): permission model, no code
//    generation from strings, empty env, own network/pid namespaces where the OS gives them. Browser:
//    the worker's Content-Security-Policy (no eval, no connection or script but the site's own).
// 1. Network globals (fetch, XMLHttpRequest, WebSocket, EventSource, importScripts) become throwing stubs.
// 2. WebAssembly memory growth past the run's memory limit fails, so Python raises MemoryError.
// 3. Pyodide gets an empty, prototype-less object as its `js` module; `js`/`pyodide_js` are
//    unregistered; NODEFS, mountNodeFS and NodeSockFS are removed so nothing can mount the host FS.
// 4. Node only: fs, child_process, net, tls, http(s), dgram, dns, worker_threads, inspector exports
//    and process.binding/dlopen/... become throwing stubs (after Pyodide has read its files).
// 5. The Function/AsyncFunction/GeneratorFunction constructors are replaced, and once Pyodide is up no
//    WebAssembly can be compiled (a dynamic library would have nothing to link).
// 6. Native code: every permitted built-in module is created at start-up, then _imp.create_builtin,
//    create_dynamic and exec_dynamic are replaced by refusals (no hand-made .so reaches emscripten's
//    dynamic linker, no second copy of _pyodide_core), and no extension suffix is searched.
// 7. A CPython audit hook (cannot be removed once installed) refuses: importing js, pyodide*,
//    micropip, ctypes, test modules (exact strings only: a str subclass is refused); sockets and
//    network clients; os.system/exec/spawn/fork/kill; gc object walking; files outside /workspace
//    (reads of the stdlib under /lib are allowed), paths normalised with str methods alone.
// 8. A run that leaves more than the workspace's caps in /workspace sends nothing back.

const IS_NODE = typeof process !== 'undefined' && !!process.versions?.node && typeof WorkerGlobalScope === 'undefined';
const WORKSPACE_DIR = '/workspace';
const CLIP_HALF = 1000;
const SNAPSHOT_INTERVAL_MS = 100;

let post; // (message) => void
let pyodide; // the loaded Pyodide instance
let runner; // PyProxy of the Python-side run function
let memoryLimitBytes = 256 * 1024 * 1024;

function blocked(what) {
  return function sandboxBlocked() {
    throw new Error(`${what} is disabled in the sandbox`);
  };
}

// --- 2. memory limit: emscripten grows the heap through Memory.prototype.grow and treats a throw as failure
const originalGrow = WebAssembly.Memory.prototype.grow;
WebAssembly.Memory.prototype.grow = function growWithinLimit(deltaPages) {
  if (this.buffer.byteLength + deltaPages * 65536 > memoryLimitBytes) {
    throw new RangeError('sandbox memory limit reached');
  }
  return originalGrow.call(this, deltaPages);
};

function stubNetworkGlobals() {
  for (const name of ['fetch', 'XMLHttpRequest', 'WebSocket', 'EventSource', 'importScripts', 'Request']) {
    if (name in globalThis) {
      try {
        Object.defineProperty(globalThis, name, { value: blocked(name), writable: false, configurable: false });
      } catch {
        globalThis[name] = blocked(name);
      }
    }
  }
}

async function hardenNode() {
  const { syncBuiltinESMExports } = await import('node:module');
  const names = ['fs', 'fs/promises', 'child_process', 'net', 'tls', 'http', 'https', 'http2', 'dgram', 'dns', 'inspector', 'worker_threads', 'cluster'];
  for (const name of names) {
    const mod = (await import(`node:${name}`)).default;
    for (const key of Object.keys(mod)) {
      if (typeof mod[key] === 'function') {
        try {
          mod[key] = blocked(`node:${name}.${key}`);
        } catch {
          /* read-only export: nothing reaches it without code generation anyway */
        }
      }
    }
  }
  syncBuiltinESMExports();
  for (const key of ['binding', '_linkedBinding', 'dlopen', 'getBuiltinModule', 'chdir', 'kill', 'setuid', 'setgid', 'abort', 'reallyExit']) {
    if (typeof process[key] === 'function') process[key] = blocked(`process.${key}`);
  }
  for (const key of Object.keys(process.env)) delete process.env[key];
}

function lockCodeGeneration() {
  const constructors = [function () {}, async function () {}, function* () {}, async function* () {}];
  for (const fn of constructors) {
    const proto = Object.getPrototypeOf(fn);
    const stub = blocked('creating functions from strings');
    stub.prototype = proto; // keep instanceof checks that Pyodide relies on working
    Object.defineProperty(proto, 'constructor', { value: stub, writable: false, configurable: false });
  }
  // Note: replacing globalThis.Function itself breaks Pyodide's type checks, and `js` (the only route from
  // Python to JS globals) is an empty object, so the global binding stays.
}

// No WebAssembly is compiled once Pyodide is up: a guest that reached emscripten's dynamic linker
// (loadDynamicLibrary, dlopen of a hand-made .so) gets no module to link. Under the jail's
// --disallow-code-generation-from-strings and the page's CSP the EM_JS eval it would run fails anyway.
function closeWasmCompilation() {
  for (const name of ['Module', 'Instance', 'compile', 'instantiate', 'compileStreaming', 'instantiateStreaming', 'validate']) {
    if (!(name in WebAssembly)) continue;
    Object.defineProperty(WebAssembly, name, { value: blocked(`WebAssembly.${name}`), writable: false, configurable: false });
  }
}

// --- time limit: Pyodide polls its "interrupt buffer" (reads [0], a 2 raises KeyboardInterrupt, then
// writes [0] = 0) every few bytecodes. This one says 2 once per run when the run's deadline has passed,
// so the interpreter stops itself without a second thread (Node's jailed process shares no memory with
// the host); where the host shares a buffer (cross-origin-isolated pages) it also says 2 when the host does.
let runDeadline = Infinity;
let interruptFired = false;
function interruptSignal(shared) {
  return {
    get 0() {
      if (shared && Atomics.load(shared, 0) === 2) {
        interruptFired = true;
        return 2;
      }
      if (!interruptFired && Date.now() > runDeadline) {
        interruptFired = true;
        return 2;
      }
      return 0;
    },
    set 0(value) {
      if (shared) Atomics.store(shared, 0, value);
    },
  };
}

function removeHostMounts(py) {
  const FS = py.FS;
  delete FS.filesystems.NODEFS;
  if (py._module) {
    delete py._module.NODEFS;
    if (py._module.FS_filesystems) delete py._module.FS_filesystems.NODEFS;
  }
  py.mountNodeFS = blocked('mountNodeFS');
  py.mountNativeFS = blocked('mountNativeFS');
  py.useNodeSockFS = blocked('useNodeSockFS');
  py.loadPackage = blocked('loadPackage');
  py.loadPackagesFromImports = blocked('loadPackagesFromImports');
  if (py._api) py._api.initializeNodeSockFS = blocked('NodeSockFS');
  py.unregisterJsModule('js');
  py.unregisterJsModule('pyodide_js');
}

// --- Python side: audit hook + runner. Constants are bound as default arguments so user code cannot
// rebind them (it can only see the hook's frame after the call has ended).
const PYTHON_SETUP = String.raw`
import sys, posix, posixpath, builtins, traceback

class SandboxViolation(PermissionError):
    pass

DENIED_IMPORT_ROOTS = frozenset({'js', 'pyodide_js', 'pyodide', '_pyodide', '_pyodide_core', 'micropip',
    'pyodide_http', 'ctypes', '_ctypes', '_posixsubprocess', 'webbrowser', '_testcapi', '_testinternalcapi',
    '_testlimitedcapi', '_testbuffer', '_testclinic', '_testclinic_limited', '_xxtestfuzz', '_remote_debugging'})

def _close_native_loading():
    # No native code but what is linked in: every permitted built-in module is created now, then
    # _imp.create_builtin and the shared-library loader (_imp.create_dynamic / exec_dynamic, which
    # reach emscripten's dynamic linker) are replaced by refusals that keep no reference to them.
    import _imp, importlib.machinery
    for name in sys.builtin_module_names:
        if name not in sys.modules and name not in DENIED_IMPORT_ROOTS:
            try:
                __import__(name)
            except ImportError:
                pass
    def refuse(*args, **kwargs):
        raise SandboxViolation('loading native modules is not allowed in the sandbox')
    for attr in ('create_builtin', 'create_dynamic', 'exec_dynamic'):
        setattr(_imp, attr, refuse)
    importlib.machinery.EXTENSION_SUFFIXES.clear()
    sys.path_importer_cache.clear()

_close_native_loading()
del _close_native_loading

def _make_hook():
    denied_import_roots = DENIED_IMPORT_ROOTS
    network_events = frozenset({'urllib.Request', 'http.client.connect', 'ftplib.connect', 'smtplib.connect',
        'poplib.connect', 'imaplib.open', 'nntplib.connect', 'telnetlib.Telnet.open'})
    process_events = frozenset({'os.system', 'os.exec', 'os.posix_spawn', 'os.spawn', 'os.fork', 'os.forkpty',
        'os.kill', 'os.killpg', 'subprocess.Popen', 'os.startfile', 'pty.spawn', 'os.add_dll_directory'})
    walk_events = frozenset({'gc.get_objects', 'gc.get_referrers', 'gc.get_referents', 'sys.addaudithook'})
    write_path_events = frozenset({'os.remove', 'os.rmdir', 'os.mkdir', 'os.chmod', 'os.chown', 'os.truncate',
        'os.utime', 'os.link', 'os.rename', 'os.chflags', 'os.lchflags', 'os.mkfifo', 'os.mknod', 'os.setxattr',
        'os.removexattr'})
    read_path_events = frozenset({'os.listdir', 'os.scandir', 'os.chdir'})

    def hook(event, args, _V=SandboxViolation, _cwd=posix.getcwd, _fspath=posix.fspath, _isinstance=isinstance, _type=type, _partition=str.partition, _str=str, _bytes=bytes, _int=int, _any=any, _hasattr=hasattr,
             _root='/workspace', _lib='/lib/', _dev=frozenset({'/dev/null', '/dev/urandom', '/dev/random', '/dev/zero'}),
             denied_import_roots=denied_import_roots, network_events=network_events, process_events=process_events,
             walk_events=walk_events, write_path_events=write_path_events, read_path_events=read_path_events):
        def resolve(p):
            # Plain str/bytes copies first: a subclass could answer startswith/join/== as it likes.
            p = _fspath(p)
            # Normalised here with str methods alone: posixpath and os can be monkeypatched by the guest.
            p = _bytes.decode(p, 'utf-8', 'replace') if _isinstance(p, _bytes) else _str.__str__(p)
            if not p.startswith('/'):
                p = _cwd() + '/' + p
            parts = []
            for part in p.split('/'):
                if part == '..':
                    if parts:
                        parts.pop()
                elif part and part != '.':
                    parts.append(part)
            return '/' + '/'.join(parts)
        def inside(p):
            return p == _root or p.startswith(_root + '/')
        if event == 'import':
            # Exact strings only: a str subclass could answer split/partition/== as it likes.
            name = args[0]
            if _type(name) is not _str:
                raise _V('import by a name that is not a plain string is not allowed in the sandbox')
            if _partition(name, '.')[0] in denied_import_roots:
                raise _V("import of '%s' is not allowed in the sandbox" % name)
        elif event == 'open':
            path, mode, flags = args
            if path is None or _isinstance(path, _int):
                return
            p = resolve(path)
            writing = (_isinstance(mode, _str) and _any(c in _str.__str__(mode) for c in 'wax+')) or (
                _isinstance(flags, _int) and _int.__and__(flags, 0o1103))  # O_WRONLY|O_RDWR|O_CREAT|O_TRUNC|O_APPEND (linux values)
            if inside(p) or p in _dev:
                return
            if not writing and p.startswith(_lib):
                return
            raise _V("access to '%s' is outside the workspace" % p)
        elif event.startswith('socket.') or event in network_events:
            raise _V('network access is disabled (%s)' % event)
        elif event in process_events or event.startswith('ctypes.'):
            raise _V('%s is not allowed in the sandbox' % event)
        elif event in walk_events:
            raise _V('%s is not allowed in the sandbox' % event)
        elif event in write_path_events or event in read_path_events or event == 'os.symlink':
            if event == 'os.symlink':
                raise _V('symbolic links are not allowed in the sandbox')
            for a in args[:2]:
                if _isinstance(a, (_str, _bytes)) or _hasattr(a, '__fspath__'):
                    if not inside(resolve(a)):
                        raise _V("'%s' on '%s' is outside the workspace" % (event, resolve(a)))
    return hook

for _name in [n for n in list(sys.modules) if n.split('.')[0] in ('js', 'pyodide_js', 'pyodide', '_pyodide', '_pyodide_core', 'micropip')]:
    del sys.modules[_name]
# Pyodide's own __main__ namespace (this one, which the guest reaches through frames and 'import __main__')
# held _pyodide_core: only the sandbox's names stay.
for _name in [n for n in list(globals()) if not n.startswith('__') and n not in ('sys', 'posix', 'posixpath', 'builtins', 'traceback')]:
    if _name in ('_pyodide_core', 'js', 'pyodide', 'pyodide_js', '_pyodide'):
        del globals()[_name]
del _name
sys.addaudithook(_make_hook())
del _make_hook

def _sandbox_run(code, _V=SandboxViolation, _tb=traceback, _sys=sys, _builtins=builtins):
    """Runs code in a fresh namespace; returns None or 'kind\nmessage'."""
    namespace = {'__name__': '__main__', '__builtins__': _builtins}
    try:
        compiled = compile(code, '<agent>', 'exec')
        exec(compiled, namespace)
    except SystemExit as e:
        if e.code not in (None, 0):
            return 'exception\nSystemExit: %s' % (e.code,)
    except KeyboardInterrupt:
        return 'timeout\ninterrupted'
    except BaseException as e:
        tb = e.__traceback__.tb_next if e.__traceback__ is not None else None
        if isinstance(e, SyntaxError):
            tb = None
        report = _tb.TracebackException(type(e), e, tb)
        # Hide the sandbox's own frames (audit hook, runner): they are compiled from '<exec>'.
        report.stack = _tb.StackSummary.from_list([f for f in report.stack if f.filename != '<exec>'])
        _sys.stderr.write(''.join(report.format()))
        violation = e
        while violation is not None and not isinstance(violation, _V):
            violation = (getattr(violation, 'reason', None) if isinstance(getattr(violation, 'reason', None), BaseException)
                         else (violation.__cause__ or violation.__context__))
        if violation is not None:
            return 'forbidden\n%s' % (violation,)
        if isinstance(e, MemoryError) or (isinstance(e, OverflowError) and 'index-sized' in str(e)):
            return 'memory\n%s' % (_tb.format_exception_only(type(e), e)[-1].strip(),)
        last = _tb.format_exception_only(type(e), e)[-1].strip()
        return 'exception\n%s' % (last,)
    finally:
        _sys.stdout.flush()
        _sys.stderr.flush()
    return None

_sandbox_run
`;

// --- output capture: head and tail of each stream, snapshots posted at most every 100 ms
function newClip() {
  return { head: '', tail: '', total: 0 };
}
function clipWrite(clip, text) {
  clip.total += text.length;
  if (clip.head.length < CLIP_HALF) {
    const take = Math.min(CLIP_HALF - clip.head.length, text.length);
    clip.head += text.slice(0, take);
    text = text.slice(take);
  }
  if (text.length > 0) clip.tail = (clip.tail + text).slice(-CLIP_HALF);
}

let current = null; // {id, stdout, stderr, lastPost}
function capture(stream) {
  const decoder = new TextDecoder();
  return {
    write(bytes) {
      if (current) {
        if (bytes.length > 4 * CLIP_HALF) {
          // A huge write: decode only its ends (a whole 120 MB print would be a 240 MB JS string here).
          const clip = current[stream];
          clipWrite(clip, decoder.decode(bytes.subarray(0, 2 * CLIP_HALF), { stream: true }));
          clip.total += bytes.length - 4 * CLIP_HALF;
          clipWrite(clip, new TextDecoder().decode(bytes.subarray(bytes.length - 2 * CLIP_HALF)));
        } else clipWrite(current[stream], decoder.decode(bytes, { stream: true }));
        const now = Date.now();
        if (now - current.lastPost > SNAPSHOT_INTERVAL_MS) {
          current.lastPost = now;
          post({ type: 'output', id: current.id, stdout: current.stdout, stderr: current.stderr });
        }
      }
      return bytes.length;
    },
  };
}

// In the browser's opaque-origin frame (src/platform/browser/tool-frame.ts) this worker can fetch none of
// the site's files: the host hands Pyodide's files in as bytes. Its two modules are imported from blob:
// URLs of this worker's own origin, and until Pyodide is up `fetch` answers for its wasm and standard
// library alone (then stubNetworkGlobals replaces it).
function scriptUrl(bytes) {
  return URL.createObjectURL(new Blob([bytes], { type: 'text/javascript' }));
}
async function fromBytes(indexURL, bytes) {
  const answers = new Map([
    [`${indexURL}pyodide.asm.wasm`, [bytes['pyodide.asm.wasm'], 'application/wasm']],
    [`${indexURL}python_stdlib.zip`, [bytes['python_stdlib.zip'], 'application/zip']],
  ]);
  globalThis.fetch = async (url) => {
    const answer = answers.get(String(url));
    if (!answer) throw new TypeError(`${url}: not one of Pyodide's files handed to the sandbox`);
    return new Response(answer[0], { headers: { 'content-type': answer[1] } });
  };
  const createPyodideModule = (await import(scriptUrl(bytes['pyodide.asm.mjs']))).default;
  return { createPyodideModule, lockFileContents: new TextDecoder().decode(bytes['pyodide-lock.json']) };
}

async function init(message) {
  const started = Date.now();
  if (IS_NODE) {
    stubNetworkGlobals(); // Node reads Pyodide's files with fs; the browser needs fetch until loaded
    // The permission model refuses process.binding; emscripten's NODEFS (removed below) reads its flag
    // constants through it at start-up, and gets them from the public API instead.
    const { constants } = await import('node:fs');
    process.binding = (name) => {
      if (name === 'constants') return { fs: constants };
      throw new Error(`process.binding('${name}') is disabled in the sandbox`);
    };
  }
  const bytes = message.pyodideFiles;
  const { loadPyodide } = await import(bytes ? scriptUrl(bytes['pyodide.mjs']) : message.pyodideModuleUrl);
  const py = await loadPyodide({
    indexURL: message.indexURL,
    ...(bytes && await fromBytes(message.indexURL, bytes)),
    jsglobals: Object.create(null),
    env: { HOME: WORKSPACE_DIR },
    stdout: () => {},
    stderr: () => {},
  });
  if (!IS_NODE) stubNetworkGlobals();
  py.setStdout(capture('stdout'));
  py.setStderr(capture('stderr'));
  py.setInterruptBuffer(interruptSignal(message.interruptBuffer && new Int32Array(message.interruptBuffer)));
  py.FS.mkdirTree(WORKSPACE_DIR);
  py.FS.chdir(WORKSPACE_DIR);
  runner = py.runPython(PYTHON_SETUP);
  removeHostMounts(py);
  if (IS_NODE) await hardenNode();
  lockCodeGeneration();
  closeWasmCompilation();
  pyodide = py;
  post({ type: 'ready', loadMs: Date.now() - started });
}

function clearWorkspace(FS, dir) {
  for (const name of FS.readdir(dir)) {
    if (name === '.' || name === '..') continue;
    const path = `${dir}/${name}`;
    const stat = FS.lstat(path);
    if (FS.isDir(stat.mode)) {
      clearWorkspace(FS, path);
      FS.rmdir(path);
    } else FS.unlink(path);
  }
}

function collectFiles(FS, dir, prefix, out) {
  for (const name of FS.readdir(dir)) {
    if (name === '.' || name === '..') continue;
    const path = `${dir}/${name}`;
    const stat = FS.lstat(path);
    if (FS.isDir(stat.mode)) collectFiles(FS, path, `${prefix}${name}/`, out);
    else if (FS.isFile(stat.mode)) out.set(`${prefix}${name}`, FS.readFile(path));
  }
  return out;
}

function sameBytes(a, b) {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function run(message) {
  const FS = pyodide.FS;
  memoryLimitBytes = message.memoryLimitBytes;
  current = { id: message.id, stdout: newClip(), stderr: newClip(), lastPost: Date.now() };
  let error;
  const before = new Map();
  try {
    FS.chdir('/');
    clearWorkspace(FS, WORKSPACE_DIR);
    for (const { path, bytes } of message.files) {
      const full = `${WORKSPACE_DIR}/${path}`;
      FS.mkdirTree(full.slice(0, full.lastIndexOf('/')));
      FS.writeFile(full, bytes);
      before.set(path, bytes);
    }
    FS.chdir(WORKSPACE_DIR);
    interruptFired = false;
    runDeadline = Date.now() + message.timeoutMs;
    const outcome = runner(message.code);
    if (typeof outcome === 'string') {
      const cut = outcome.indexOf('\n');
      error = { kind: outcome.slice(0, cut), message: outcome.slice(cut + 1) };
      // A KeyboardInterrupt that the deadline did not raise is the code's own.
      if (error.kind === 'timeout' && !interruptFired) error = { kind: 'exception', message: 'KeyboardInterrupt' };
    }
  } catch (e) {
    // A JS-level failure means the interpreter itself is broken (fatal error, abort): the host restarts us.
    const text = String(e && e.message ? e.message : e);
    error = { kind: /memory/i.test(text) ? 'memory' : 'crash', message: text.split('\n')[0], fatal: true };
  }
  const changed = [];
  const deleted = [];
  if (!error?.fatal) {
    try {
      const after = collectFiles(FS, WORKSPACE_DIR, '', new Map());
      let total = 0;
      for (const bytes of after.values()) total += bytes.length;
      if (after.size > message.maxWorkspaceFiles || total > message.maxWorkspaceBytes) {
        // Nothing goes back: the host never receives (or buffers) more than the workspace may hold.
        error ??= { kind: 'forbidden', message: `the workspace holds at most ${message.maxWorkspaceFiles} files and `
          + `${message.maxWorkspaceBytes / 2 ** 20} MB (the run left ${after.size} files, ${(total / 2 ** 20).toFixed(1)} MB); nothing was saved` };
        after.clear();
        for (const [path, bytes] of before) after.set(path, bytes);
      }
      for (const [path, bytes] of after) if (!before.has(path) || !sameBytes(before.get(path), bytes)) changed.push({ path, bytes });
      for (const path of before.keys()) if (!after.has(path)) deleted.push(path);
      FS.chdir('/');
      clearWorkspace(FS, WORKSPACE_DIR); // the next run (maybe another trajectory) starts empty
      FS.chdir(WORKSPACE_DIR);
    } catch (e) {
      error ??= { kind: 'crash', message: `could not read the workspace back: ${e}`, fatal: true };
    }
  }
  runDeadline = Infinity;
  const done = { type: 'done', id: message.id, error, stdout: current.stdout, stderr: current.stderr, changed, deleted };
  current = null;
  post(done);
}

async function handle(message) {
  try {
    if (message.type === 'init') await init(message);
    else if (message.type === 'run') run(message);
  } catch (e) {
    post({
      type: message.type === 'init' ? 'init-error' : 'done', id: message.id, message: String(e?.stack ?? e),
      error: { kind: 'crash', message: String(e), fatal: true },
    });
  }
}

if (IS_NODE) {
  // A jailed child process (src/core/tools/jail.ts): frames on stdin/stdout.
  const port = (await import('./jail-port.mjs')).openJailPort();
  post = (m) => port.post(m);
  port.onMessage(handle);
} else {
  post = (m) => self.postMessage(m);
  self.onmessage = (event) => handle(event.data);
}
