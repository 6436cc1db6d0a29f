// Model sources: folder, hub-layout URL (a local node:http server), picked files, memory.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import { filesSource, folderSource, isEmbedded, memorySource, urlSource } from '../../../src/core/engine/model/sources.ts';
import { ModelSourceError, type ModelSource } from '../../../src/core/engine/model/source.ts';
import { parseConfig } from '../../../src/core/engine/model/config.ts';
import { loadWeights } from '../../../src/core/engine/model/weights.ts';

const repoRoot = path.resolve(__dirname, '../../..');
const llamaDir = path.join(repoRoot, 'test/fixtures/parity/llama');
const llamaWeights = new Uint8Array(readFileSync(path.join(llamaDir, 'model.safetensors')));
const llamaConfigText = readFileSync(path.join(llamaDir, 'config.json'), 'utf8');

async function readAll(src: ModelSource, file: string, onProgress?: Parameters<ModelSource['stream']>[1]) {
  const parts: Uint8Array[] = [];
  for await (const c of src.stream(file, onProgress)) parts.push(c);
  return { bytes: new Uint8Array(Buffer.concat(parts)), chunks: parts.length };
}

/** Byte equality without vitest's slow element-by-element diff. */
const sameBytes = (a: Uint8Array, b: Uint8Array) => Buffer.from(a.buffer, a.byteOffset, a.length).equals(Buffer.from(b.buffer, b.byteOffset, b.length));

async function errorOf(p: Promise<unknown>): Promise<ModelSourceError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(ModelSourceError);
    return e as ModelSourceError;
  }
  throw new Error('expected a ModelSourceError');
}

describe('folderSource', () => {
  const src = folderSource(llamaDir, { chunkBytes: 100_000 });

  it('reads text, JSON and streams a file in chunks with progress', async () => {
    expect(src.name).toBe(llamaDir);
    expect(await src.has('config.json')).toBe(true);
    expect(await src.has('tokenizer.json')).toBe(false);
    expect((await src.readJson<{ model_type: string }>('config.json')).model_type).toBe('llama');
    const progress: { loaded: number; total: number | null }[] = [];
    const { bytes, chunks } = await readAll(src, 'model.safetensors', ({ loaded, total }) => progress.push({ loaded, total }));
    expect(sameBytes(bytes, llamaWeights)).toBe(true);
    expect(chunks).toBe(Math.ceil(llamaWeights.length / 100_000));
    expect(progress.at(-1)).toEqual({ loaded: llamaWeights.length, total: llamaWeights.length });
    expect(progress.length).toBe(chunks + 1);
  });

  it('reports a missing file as kind "missing" and refuses paths that leave the folder', async () => {
    const e = await errorOf(src.readText('tokenizer.json'));
    expect(e.kind).toBe('missing');
    expect(e.message).toContain(`tokenizer.json not found in ${llamaDir}`);
    const s = await errorOf(readAll(src, 'nope.safetensors'));
    expect(s.kind).toBe('missing');
    await expect(src.readText('../qwen2/config.json')).rejects.toThrow(/refusing file name/);
  });
});

describe('memorySource', () => {
  it('serves strings and bytes, in chunks of the given size', async () => {
    const src = memorySource({ 'config.json': '{"a":1}', 'w.bin': new Uint8Array([1, 2, 3, 4, 5]) }, 'mem', { chunkBytes: 2 });
    expect(await src.readJson('config.json')).toEqual({ a: 1 });
    expect(await src.has('w.bin')).toBe(true);
    expect(await src.has('toString')).toBe(false);
    const { bytes, chunks } = await readAll(src, 'w.bin');
    expect([...bytes]).toEqual([1, 2, 3, 4, 5]);
    expect(chunks).toBe(3);
    expect((await errorOf(src.readText('x.json'))).kind).toBe('missing');
    await expect(memorySource({ 'c.json': '{oops' }, 'mem').readJson('c.json')).rejects.toThrow(/mem\/c.json is not valid JSON/);
  });
});

describe('filesSource', () => {
  /** A File as a folder pick delivers it: webkitRelativePath "<folder>/<path>". */
  function picked(rel: string, content: BlobPart) {
    const f = new File([content], rel.split('/').pop()!);
    Object.defineProperty(f, 'webkitRelativePath', { value: rel });
    return f as File & { webkitRelativePath: string };
  }

  it('matches a folder pick by path inside the folder, then by basename (shallowest wins)', async () => {
    const src = filesSource([
      picked('SmolLM2/onnx/config.json', '{"which":"deep"}'),
      picked('SmolLM2/config.json', '{"which":"top"}'),
      picked('SmolLM2/model.safetensors', llamaWeights),
    ]);
    expect(src.name).toBe('SmolLM2');
    expect(await src.readJson('config.json')).toEqual({ which: 'top' });
    expect(await src.readJson('onnx/config.json')).toEqual({ which: 'deep' });
    expect(await src.has('tokenizer.json')).toBe(false);
    const totals: (number | null)[] = [];
    const { bytes } = await readAll(src, 'model.safetensors', ({ total }) => totals.push(total));
    expect(sameBytes(bytes, llamaWeights)).toBe(true);
    expect(totals.at(-1)).toBe(llamaWeights.length);
  });

  it('accepts plain picked files and names the missing ones', async () => {
    const src = filesSource([new File([llamaConfigText], 'config.json')]);
    expect(src.name).toBe('picked files');
    expect((await src.readJson<{ vocab_size: number }>('config.json')).vocab_size).toBe(97);
    const e = await errorOf(src.readText('model.safetensors'));
    expect(e.kind).toBe('missing');
    expect(e.message).toMatch(/model.safetensors is not among the picked files/);
  });
});

describe('urlSource against a local hub-layout server', () => {
  let server: http.Server;
  let base = '';
  const requests: string[] = [];
  let headAllowed = true;

  beforeAll(async () => {
    const files: Record<string, Buffer> = {
      'config.json': Buffer.from(llamaConfigText),
      'model.safetensors': Buffer.from(llamaWeights),
    };
    server = http.createServer((req, res) => {
      requests.push(`${req.method} ${req.url}${req.headers.range ? ` ${req.headers.range}` : ''}`);
      const m = /^\/org\/model\/resolve\/([^/]+)\/(.+)$/.exec(req.url ?? '');
      if (req.method === 'HEAD' && !headAllowed) return void res.writeHead(405).end();
      const body = m && (m[1] === 'main' || m[1] === 'v1') ? files[decodeURIComponent(m[2])] : undefined;
      if (!body) return void res.writeHead(404, { 'content-type': 'text/plain' }).end('Entry not found');
      if (req.headers.range === 'bytes=0-0') {
        return void res.writeHead(206, { 'content-length': '1', 'content-range': `bytes 0-0/${body.length}` }).end(body.subarray(0, 1));
      }
      res.writeHead(200, { 'content-length': String(body.length) });
      if (req.method === 'HEAD') return void res.end();
      // Send in several writes so the client sees several chunks.
      for (let i = 0; i < body.length; i += 65536) res.write(body.subarray(i, i + 65536));
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/org/model`;
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('turns a bare hub id into a huggingface.co base', () => {
    expect(urlSource('HuggingFaceTB/SmolLM2-135M-Instruct').name).toBe('https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct');
    expect(urlSource('https://example.org/org/model/').name).toBe('https://example.org/org/model');
  });

  it('reads files at <base>/resolve/main/<file> with progress', async () => {
    const src = urlSource(base);
    expect(await src.has('config.json')).toBe(true);
    expect(await src.has('tokenizer.json')).toBe(false);
    expect((await src.readJson<{ hidden_size: number }>('config.json')).hidden_size).toBe(64);
    const progress: { file: string; loaded: number; total: number | null }[] = [];
    const { bytes } = await readAll(src, 'model.safetensors', (p) => progress.push(p));
    expect(sameBytes(bytes, llamaWeights)).toBe(true);
    expect(progress.length).toBeGreaterThan(2);
    expect(progress.at(-1)).toEqual({ file: 'model.safetensors', loaded: llamaWeights.length, total: llamaWeights.length });
    expect(requests).toContain('HEAD /org/model/resolve/main/config.json');
    expect(requests).toContain('GET /org/model/resolve/main/model.safetensors');
  });

  it('uses the revision and falls back to a 1-byte GET when HEAD is not allowed', async () => {
    headAllowed = false;
    try {
      const src = urlSource(base, { revision: 'v1' });
      expect(await src.has('config.json')).toBe(true);
      expect(await src.has('missing.json')).toBe(false);
      expect(requests).toContain('GET /org/model/resolve/v1/config.json bytes=0-0');
    } finally {
      headAllowed = true;
    }
  });

  it('reports 404 as kind "missing" naming the URL', async () => {
    const e = await errorOf(urlSource(base).readText('tokenizer.json'));
    expect(e.kind).toBe('missing');
    expect(e.message).toContain(`${base}/resolve/main/tokenizer.json was not found (HTTP 404)`);
    const s = await errorOf(readAll(urlSource(base, { revision: 'nope' }), 'model.safetensors'));
    expect(s.kind).toBe('missing');
    expect(s.message).toContain('at revision "nope"');
  });

  it('reports a fetch that throws (offline, CORS) as kind "network" with advice', async () => {
    const failing = (async () => {
      throw new TypeError('Failed to fetch');
    }) as unknown as typeof fetch;
    const e = await errorOf(urlSource('org/model', { fetch: failing }).readText('config.json'));
    expect(e.kind).toBe('network');
    expect(e.message).toContain('https://huggingface.co/org/model/resolve/main/config.json (Failed to fetch)');
    expect(e.message).toMatch(/offline.*CORS/);
    // A real refused connection, through Node's own fetch.
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    expect((await errorOf(urlSource(`http://127.0.0.1:${port}/o/m`).has('config.json'))).kind).toBe('network');
  });

  it('loads weights through the URL equal to the folder load', async () => {
    await tf.setBackend('cpu');
    const config = parseConfig(JSON.parse(llamaConfigText));
    const before = tf.memory().numTensors;
    const viaUrl = await loadWeights(urlSource(base), config);
    const viaFolder = await loadWeights(folderSource(llamaDir), config);
    expect([...viaUrl.keys()].sort()).toEqual([...viaFolder.keys()].sort());
    for (const [name, t] of viaUrl) expect(Array.from(t.dataSync())).toEqual(Array.from(viaFolder.get(name)!.dataSync()));
    for (const t of [...viaUrl.values(), ...viaFolder.values()]) t.dispose();
    expect(tf.memory().numTensors).toBe(before);
  });
});

describe('model specs', () => {
  it('tells a model shipped with the site from a hub id or URL', () => {
    expect(['models/agent', './models/judge'].map(isEmbedded)).toEqual([true, true]);
    expect(['HuggingFaceTB/SmolLM2-135M-Instruct', 'https://example.org/m', '/hub/org/tiny', 'picked:tiny'].map(isEmbedded)).toEqual([false, false, false, false]);
  });
});
