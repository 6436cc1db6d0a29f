// A jailed interpreter process (Node only): the host's end of one child process that runs an
// interpreter of untrusted code (Pyodide, QuickJS) under OS- and runtime-level limits that do not
// depend on anything the interpreter itself stubs.
//
// For: python-sandbox.ts and js-sandbox.ts in Node (through worker-host.ts). Not for: the browser
// (there the interpreter runs in a Web Worker of an opaque origin) or trusted workers.
//
// What the child gets (docs/threat-model.md says what each holds against, and what was measured):
// - Node's permission model (`--experimental-permission`): it may read only `readPaths` (the worker
//   script and the interpreter's own package files); no file writes, child processes, worker threads,
//   native addons, WASI, inspector or process.binding.
// - `--disallow-code-generation-from-strings`: eval and the Function constructor throw, so no string
//   the guest controls can become host JavaScript (emscripten's EM_JS and run_script paths included).
// - an empty environment (env: {}), and `--max-old-space-size` for its JS heap.
// - no network: where the OS allows an unprivileged network namespace (`unshare -rnp`, Linux with user
//   namespaces), the child has only a loopback device of its own, down, and a pid namespace of its own
//   (it cannot signal the host or any other process). Where it does not, the child
//   runs without one and `netIsolation()` says so ('none'): the permission model does not cover the
//   network in Node 20, so then only the missing host objects stand between the guest and a socket
//   (MAPPA_JAIL_NAMESPACES=0 runs the jail that way here, to measure it).
// - its messages framed (4-byte length + v8.serialize, see worker/jail-port.mjs), each at most
//   `maxFrameBytes`; a larger frame kills the child before the host buffers it.
// - a resident-memory ceiling watched from the host (Linux: /proc/<pid>/statm every 25 ms); past it
//   the child is killed and the exit reason says 'memory'.
//
// Example:
//   const child = await startJail({ script: '/abs/worker/python-worker.mjs', readPaths: ['/abs/node_modules/pyodide'] });
//   child.onMessage((m) => ...); child.onExit((why) => ...); child.post({ type: 'init' });
//   child.setRssCeiling(600 * 2 ** 20); await child.terminate();

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import v8 from 'node:v8';

export type NetIsolation = 'namespace' | 'none';

export interface JailOptions {
  script: string; // absolute path of the child's entry (.mjs)
  readPaths: string[]; // files and folders the child may read, besides `script`
  maxHeapMb?: number; // V8 old-generation limit of the child (default 512)
  maxFrameBytes?: number; // largest message the child may send (default 64 MiB)
}

export interface JailedProcess {
  post(message: unknown): void;
  onMessage(listener: (message: any) => void): void;
  /** Called once when the child dies on its own (crash, memory ceiling, oversized frame). */
  onExit(listener: (reason: string) => void): void;
  /** Kills the child when its resident memory passes `bytes` (undefined: no ceiling). */
  setRssCeiling(bytes: number | undefined): void;
  /** The child's resident memory in bytes (Linux), or undefined where it cannot be read. */
  rssBytes(): number | undefined;
  readonly pid: number;
  terminate(): Promise<void>;
}

const PAGE = 4096;
let netProbe: { kind: NetIsolation; prefix: string[] } | undefined;

/**
 * How children are cut off the network here, probed once: 'namespace' when `unshare -rn` runs node
 * (an empty network namespace and a pid namespace, unprivileged through a user namespace), else 'none'.
 */
export function netIsolation(): NetIsolation {
  return probeNet().kind;
}

function probeNet(): { kind: NetIsolation; prefix: string[] } {
  if (netProbe) return netProbe;
  // MAPPA_JAIL_NAMESPACES=0: run as on a machine without them (to test that fallback here).
  const unshare = process.env.MAPPA_JAIL_NAMESPACES === '0' ? undefined : ['/usr/bin/unshare', '/bin/unshare'].find((p) => fs.existsSync(p));
  if (unshare && process.platform === 'linux') {
    // -r: a user namespace (unprivileged); -n: an empty network namespace; -p --fork: a pid namespace, so
    // the child cannot name (signal) any process outside it; --kill-child: it dies with unshare.
    const flags = ['-rnp', '--fork', '--kill-child'];
    const r = spawnSync(unshare, [...flags, process.execPath, '-e', '0'], { env: {}, timeout: 10_000, stdio: 'ignore' });
    if (r.status === 0) return (netProbe = { kind: 'namespace', prefix: [unshare, ...flags, '--'] });
  }
  return (netProbe = { kind: 'none', prefix: [] });
}

/** Node's permission-model switch: `--permission` from 22.13 / 23.5 on, `--experimental-permission` before (20.x here). */
function permissionFlag(): string {
  const [major, minor] = process.versions.node.split('.').map(Number);
  return major > 23 || (major === 23 && minor >= 5) || (major === 22 && minor >= 13) ? '--permission' : '--experimental-permission';
}

/** Starts the child; resolves once it is spawned (the interpreter inside loads on its first message). */
export async function startJail(options: JailOptions): Promise<JailedProcess> {
  const maxFrame = options.maxFrameBytes ?? 64 * 2 ** 20;
  const reads = [options.script, ...options.readPaths].map((p) => path.resolve(p));
  const nodeArgs = [
    permissionFlag(),
    ...reads.map((p) => `--allow-fs-read=${p}`), // one flag per path (Node 20.20 no longer splits on commas)
    '--disallow-code-generation-from-strings',
    `--max-old-space-size=${options.maxHeapMb ?? 512}`,
    '--no-warnings',
    options.script,
  ];
  const net = probeNet();
  const [command, ...args] = [...net.prefix, process.execPath, ...nodeArgs];
  const child = spawn(command, args, { env: {}, stdio: ['pipe', 'pipe', 'pipe'], cwd: path.dirname(options.script) });
  return wrap(child, maxFrame, net.kind === 'namespace');
}

/** The pid of `parent`'s child process (node under unshare --fork), found in /proc; undefined if none. */
function childOf(parent: number): number | undefined {
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === parent) return Number(name);
    } catch {
      /* gone meanwhile */
    }
  }
  return undefined;
}

function wrap(child: ChildProcess, maxFrame: number, forked: boolean): JailedProcess {
  let listener: (message: any) => void = () => {};
  let exitListener: ((reason: string) => void) | undefined;
  let ended = false;
  let terminating = false;
  let killedFor: string | undefined;
  let stderrTail = '';
  let ceiling: number | undefined;
  const pid = child.pid ?? -1;
  let nodePid: number | undefined = forked ? undefined : pid; // the interpreter's own process

  const readRss = (): number | undefined => {
    try {
      nodePid ??= childOf(pid);
      if (nodePid === undefined) return undefined;
      return Number(fs.readFileSync(`/proc/${nodePid}/statm`, 'utf8').split(' ')[1]) * PAGE;
    } catch {
      return undefined;
    }
  };
  const kill = (why: string) => {
    if (ended || killedFor) return;
    killedFor = why;
    child.kill('SIGKILL');
  };
  const watchdog = process.platform === 'linux' ? setInterval(() => {
    if (ceiling === undefined) return;
    const rss = readRss();
    if (rss !== undefined && rss > ceiling) kill(`memory: the interpreter process reached ${Math.round(rss / 2 ** 20)} MB`);
  }, 25) : undefined;
  watchdog?.unref();

  // Chunks are kept in a list until a whole frame is there (concatenating per chunk is quadratic).
  const chunks: Buffer[] = [];
  let queued = 0;
  let need = 4; // bytes wanted next: a header, then its body
  let bodySize = -1;
  const take = (n: number): Buffer => {
    const all = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, queued);
    chunks.length = 0;
    if (all.length > n) chunks.push(all.subarray(n));
    queued = all.length - n;
    return all.subarray(0, n);
  };
  child.stdout!.on('data', (chunk: Buffer) => {
    chunks.push(chunk);
    queued += chunk.length;
    while (!killedFor && queued >= need) {
      if (bodySize < 0) {
        bodySize = take(4).readUInt32LE(0);
        if (bodySize > maxFrame) {
          chunks.length = 0;
          kill(`the interpreter sent a message of ${bodySize} bytes, over the ${maxFrame}-byte limit`);
          return;
        }
        need = bodySize;
        continue;
      }
      const body = take(bodySize);
      bodySize = -1;
      need = 4;
      let message: unknown;
      try {
        message = v8.deserialize(body);
      } catch {
        kill('the interpreter sent a message that could not be read');
        return;
      }
      listener(message);
    }
  });
  child.stderr!.on('data', (chunk: Buffer) => (stderrTail = (stderrTail + chunk.toString()).slice(-2000)));
  child.stdin!.on('error', () => undefined); // a dead child's pipe: its exit is reported below
  const exited = new Promise<void>((resolve) => {
    child.on('exit', (code, signal) => {
      ended = true;
      if (watchdog) clearInterval(watchdog);
      resolve();
      if (terminating) return;
      const lines = stderrTail.trim().split('\n').filter((l) => l.trim() && !/^Node\.js v/.test(l));
      const last = [...lines].reverse().find((l) => /Error|error:/.test(l)) ?? lines[lines.length - 1];
      exitListener?.(killedFor ?? `interpreter process exited (${signal ?? `code ${code}`})${last ? `: ${last}` : ''}`);
    });
    child.on('error', (err) => {
      ended = true;
      resolve();
      if (!terminating) exitListener?.(`interpreter process failed to start: ${err.message}`);
    });
  });

  return {
    pid,
    post(message) {
      if (ended) return;
      const body = v8.serialize(message);
      const head = Buffer.alloc(4);
      head.writeUInt32LE(body.length, 0);
      child.stdin!.write(Buffer.concat([head, body]));
    },
    onMessage: (fn) => void (listener = fn),
    onExit: (fn) => void (exitListener = fn),
    setRssCeiling: (bytes) => void (ceiling = bytes),
    rssBytes: readRss,
    async terminate() {
      terminating = true;
      if (!ended) child.kill('SIGKILL');
      await exited;
    },
  };
}
