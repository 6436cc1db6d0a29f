// What the red-team tests (test/unit/tools/red-team.test.ts, test/e2e/red-team.test.ts) detect escapes
// with: a listener on 127.0.0.1 that counts every TCP connection and UDP datagram, a canary file and
// a canary environment variable holding a random token, and a hand-made emscripten "shared library"
// whose only content is an EM_JS string (the dynamic linker evaluates it as JavaScript on load).
//
// Example:
//   const net = await startListener(); const canary = makeCanary();
//   ... run attacks that try to reach net.port, read canary.file, print process.env[canary.envName] ...
//   expect(net.hits()).toEqual([]); expect(output).not.toContain(canary.token); await net.close(); canary.remove();

import dgram from 'node:dgram';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';

export interface Listener {
  port: number; // the same port for TCP and UDP
  hits(): string[]; // one line per connection or datagram received
  close(): Promise<void>;
}

/** A TCP server and a UDP socket on one free port of 127.0.0.1, recording whatever reaches them. */
export async function startListener(): Promise<Listener> {
  const hits: string[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    hits.push(`tcp from ${s.remoteAddress}:${s.remotePort}`);
    sockets.add(s);
    s.on('data', (d) => hits.push(`tcp data ${d.toString('utf8', 0, 80)}`));
    s.on('close', () => sockets.delete(s));
    s.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  const udp = dgram.createSocket('udp4');
  udp.on('message', (m, r) => hits.push(`udp from ${r.address}:${r.port} ${m.toString('utf8', 0, 80)}`));
  await new Promise<void>((resolve, reject) => {
    udp.once('error', reject);
    udp.bind(port, '127.0.0.1', () => resolve());
  });
  return {
    port,
    hits: () => [...hits],
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await new Promise<void>((resolve) => udp.close(() => resolve()));
    },
  };
}

export interface Canary {
  token: string; // the secret; it must never appear in any output
  dir: string;
  file: string; // holds the token
  writeTarget: string; // a path that must never be created
  envName: string; // process.env[envName] === token in the host
  remove(): void;
}

/** A canary file and env var in this process (set before any interpreter starts). */
export function makeCanary(): Canary {
  const token = `CANARY-${randomBytes(8).toString('hex')}`;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mappa-canary-'));
  const file = path.join(dir, 'secret.txt');
  fs.writeFileSync(file, token);
  const envName = 'MAPPA_RED_TEAM_CANARY';
  process.env[envName] = token;
  return {
    token, dir, file, envName, writeTarget: path.join(dir, 'written-by-guest.txt'),
    remove() {
      delete process.env[envName];
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A minimal emscripten side module (wasm "shared library") carrying one EM_JS function whose body is
 * `js`: emscripten's dynamic linker evaluates `() => <js>` as soon as the library loads, inside the
 * runtime's closure (where `FS`, `Module` and, in Node, `require` and `process` are in scope).
 * Layout: custom section dylink.0 (mem info: `size` bytes of data), imports env.memory and
 * env.__memory_base, one exported immutable i32 global `__em_js__pwn` = 0 (relocated to the
 * library's memory base), and one data segment at __memory_base holding "()<::>" + js + NUL.
 */
export function emJsLibrary(js: string): Uint8Array {
  const enc = new TextEncoder();
  const leb = (n: number): number[] => {
    const out: number[] = [];
    do {
      let b = n & 0x7f;
      n >>>= 7;
      if (n) b |= 0x80;
      out.push(b);
    } while (n);
    return out;
  };
  const name = (s: string) => [...leb(enc.encode(s).length), ...enc.encode(s)];
  const section = (id: number, body: number[]) => [id, ...leb(body.length), ...body];
  const payload = [...enc.encode(`()<::>${js}`), 0];
  const memInfo = [...leb(payload.length), 0, 0, 0]; // memorySize, memoryAlign, tableSize, tableAlign
  const dylink = [...name('dylink.0'), 1, ...leb(memInfo.length), ...memInfo];
  const imports = [2, ...name('env'), ...name('memory'), 0x02, 0x00, 0x00, ...name('env'), ...name('__memory_base'), 0x03, 0x7f, 0x00];
  const globals = [1, 0x7f, 0x00, 0x41, 0x00, 0x0b];
  const exports = [1, ...name('__em_js__pwn'), 0x03, 0x01];
  const data = [1, 0x00, 0x23, 0x00, 0x0b, ...leb(payload.length), ...payload];
  return new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(0, dylink), ...section(2, imports), ...section(6, globals), ...section(7, exports), ...section(11, data),
  ]);
}

/** Python that writes `lib` to /workspace/pwn.so and loads it through importlib's extension loader. */
export function loadLibraryPython(lib: Uint8Array): string {
  const hex = Buffer.from(lib).toString('hex');
  return [
    'import importlib.machinery, importlib.util',
    `open('pwn.so', 'wb').write(bytes.fromhex('${hex}'))`,
    "loader = importlib.machinery.ExtensionFileLoader('pwn', '/workspace/pwn.so')",
    "spec = importlib.util.spec_from_file_location('pwn', '/workspace/pwn.so', loader=loader)",
    'try:',
    '    importlib.util.module_from_spec(spec)',
    'except ImportError as e:', // what a library without PyInit_pwn ends in once loaded
    "    print('loaded, then:', e)",
  ].join('\n');
}

/** Resident memory of this process in MB. */
export const hostRssMb = (): number => process.memoryUsage().rss / 2 ** 20;
