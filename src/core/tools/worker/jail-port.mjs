// The child's end of a jailed interpreter process (Node only; the host's end is src/core/tools/jail.ts).
//
// For: python-worker.mjs and quickjs-worker.mjs when they run as a child process under Node's
// permission model: messages in on stdin, out on stdout, each one frame = 4-byte little-endian length
// + v8.serialize(message) (structured clone: Uint8Array, Map... survive). Not for: the browser (a Web
// Worker uses postMessage) or worker_threads.
// Anything else the process would print (a stray console.log of the runtime) goes to stderr, which the
// host drains and drops, so it can never be taken for a frame.
// Plain JavaScript, no bare imports: the permission model lets this process read only its own files.
//
// Example (in a worker): const port = await openJailPort(); port.onMessage(handle); port.post({ type: 'ready' });

import v8 from 'node:v8';

/** The stdio channel to the host, as { post(message), onMessage(listener) }. */
export function openJailPort() {
  for (const k of ['log', 'info', 'debug', 'warn', 'error', 'trace']) console[k] = (...args) => stderr.write(args.join(' ') + '\n');
  const stdout = process.stdout; // made now, before the worker may stub node:net (the pipe is a net.Socket)
  const stderr = process.stderr;
  let listener = () => {};
  const chunks = []; // kept until a whole frame is there (concatenating per chunk is quadratic)
  let queued = 0;
  let bodySize = -1;
  const take = (n) => {
    const all = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, queued);
    chunks.length = 0;
    if (all.length > n) chunks.push(all.subarray(n));
    queued = all.length - n;
    return all.subarray(0, n);
  };
  process.stdin.on('data', (chunk) => {
    chunks.push(chunk);
    queued += chunk.length;
    for (;;) {
      if (bodySize < 0) {
        if (queued < 4) break;
        bodySize = take(4).readUInt32LE(0);
      }
      if (queued < bodySize) break;
      const message = v8.deserialize(take(bodySize));
      bodySize = -1;
      listener(message);
    }
  });
  // The host closing our stdin means it is gone: nothing left to do.
  process.stdin.on('end', () => process.exit(0));
  return {
    post(message) {
      const body = v8.serialize(message);
      const head = Buffer.alloc(4);
      head.writeUInt32LE(body.length, 0);
      stdout.write(Buffer.concat([head, body]));
    },
    onMessage(fn) {
      listener = fn;
    },
  };
}
