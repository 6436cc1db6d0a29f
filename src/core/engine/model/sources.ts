/**
 * The places a model's files can come from, each behind the `ModelSource` interface (source.ts).
 *
 * For: a local folder (Node only), a URL in the Hugging Face hub layout or a bare hub id (browser and
 * Node), files the user picked in the browser, and in-memory files (tests, generated models).
 * Not for: parsing the files (config.ts, safetensors.ts, weights.ts, tokenizer/ do that).
 *
 *   const src = urlSource('HuggingFaceTB/SmolLM2-135M-Instruct');
 *   // -> https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct/resolve/main/<file>
 *   const config = await src.readJson('config.json');
 *   for await (const chunk of src.stream('model.safetensors', ({ loaded, total }) => bar(loaded, total))) ...
 *
 * Every source streams a file in chunks (4 MiB for folders and picked files) and reports progress
 * after each chunk; nothing reads a whole weights file into memory.
 */
import { ModelSourceError, type ModelSource, type ProgressCallback } from './source.ts';

const CHUNK_BYTES = 4 << 20;

/** File names come from index files we do not control: refuse anything that walks out of the model. */
function checkFileName(file: string, source: string): void {
  if (!file || file.startsWith('/') || file.includes('\\') || file.split('/').some((s) => s === '..' || s === '')) {
    throw new ModelSourceError(`${source}: refusing file name ${JSON.stringify(file)}; model files must be plain relative paths like "model.safetensors".`);
  }
}

function parseJson<T>(text: string, file: string, source: string): T {
  try {
    return JSON.parse(text) as T;
  } catch (e) {
    throw new ModelSourceError(`${source}/${file} is not valid JSON (${(e as Error).message}); the file is damaged or is not what it claims to be.`);
  }
}

/** Re-yields chunks, reporting the running byte count after each one. */
async function* withProgress(
  chunks: AsyncIterable<Uint8Array>,
  file: string,
  total: number | null,
  onProgress?: ProgressCallback,
): AsyncGenerator<Uint8Array> {
  let loaded = 0;
  onProgress?.({ file, loaded, total });
  for await (const chunk of chunks) {
    loaded += chunk.length;
    onProgress?.({ file, loaded, total });
    yield chunk;
  }
}

/** Reads a web ReadableStream chunk by chunk; cancels it if the consumer stops early. */
async function* readableChunks(body: ReadableStream<Uint8Array>, onError: (e: unknown) => Error): AsyncGenerator<Uint8Array> {
  const reader = body.getReader();
  let done = false;
  try {
    for (;;) {
      let r: ReadableStreamReadResult<Uint8Array>;
      try {
        r = await reader.read();
      } catch (e) {
        done = true;
        throw onError(e);
      }
      if (r.done) {
        done = true;
        return;
      }
      yield r.value;
    }
  } finally {
    if (!done) await reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}

// ---------------------------------------------------------------------------------------------
// Local folder (Node).

type NodeFs = typeof import('node:fs/promises');
// A variable specifier keeps browser bundlers from trying to resolve node:fs.
const NODE_FS = 'node:fs/promises';
const loadFs = () => import(/* @vite-ignore */ NODE_FS) as Promise<NodeFs>;

/**
 * A model folder on disk (Node only).
 *   folderSource('test/fixtures/parity/llama').readJson('config.json')
 */
export function folderSource(dir: string, opts: { chunkBytes?: number } = {}): ModelSource {
  const root = dir.replace(/\/+$/, '') || '/';
  const name = root;
  const chunkBytes = opts.chunkBytes ?? CHUNK_BYTES;
  const pathOf = (file: string) => {
    checkFileName(file, name);
    return `${root}/${file}`;
  };
  const fail = (e: unknown, file: string): never => {
    const code = (e as { code?: string }).code;
    if (code === 'ENOENT') throw new ModelSourceError(`${file} not found in ${name}; the folder must hold the model's Hugging Face files.`, 'missing');
    throw new ModelSourceError(`could not read ${file} in ${name}: ${(e as Error).message}`);
  };
  const source: ModelSource = {
    name,
    async has(file) {
      const fs = await loadFs();
      try {
        return (await fs.stat(pathOf(file))).isFile();
      } catch (e) {
        if ((e as { code?: string }).code === 'ENOENT') return false;
        throw e;
      }
    },
    async readText(file) {
      const fs = await loadFs();
      try {
        return await fs.readFile(pathOf(file), 'utf8');
      } catch (e) {
        return fail(e, file);
      }
    },
    async readJson<T>(file: string) {
      return parseJson<T>(await source.readText(file), file, name);
    },
    async *stream(file, onProgress) {
      const fs = await loadFs();
      let handle: Awaited<ReturnType<NodeFs['open']>>;
      let size: number;
      try {
        handle = await fs.open(pathOf(file), 'r');
        size = (await handle.stat()).size;
      } catch (e) {
        return fail(e, file);
      }
      try {
        async function* chunks() {
          for (let pos = 0; ; ) {
            const buf = new Uint8Array(Math.min(chunkBytes, Math.max(size - pos, 1)));
            const { bytesRead } = await handle.read(buf, 0, buf.length, pos);
            if (bytesRead === 0) return;
            pos += bytesRead;
            yield bytesRead === buf.length ? buf : buf.subarray(0, bytesRead);
          }
        }
        yield* withProgress(chunks(), file, size, onProgress);
      } finally {
        await handle.close();
      }
    },
  };
  return source;
}

// ---------------------------------------------------------------------------------------------
// Hub-layout URL.

/**
 * A 200 with an HTML page for a file that is not HTML: a static host's single-page-app fallback
 * (vite preview's default, many hosts' default) answering for a file it does not have. Model files
 * are JSON, safetensors, jinja or text, never HTML, so this is "absent", decided by the content type
 * and never by trying to parse the page.
 *   isHtmlFallback(<200, text/html>, 'special_tokens_map.json') === true
 */
function isHtmlFallback(res: Response, file: string): boolean {
  const type = (res.headers.get('content-type') ?? '').toLowerCase();
  return type.startsWith('text/html') && !/\.html?$/i.test(file);
}

const HUB = 'https://huggingface.co';

export interface UrlSourceOptions {
  /** Defaults to the global fetch. */
  fetch?: typeof fetch;
  /** Branch, tag or commit; default "main". */
  revision?: string;
  /** Extra request headers, e.g. { Authorization: 'Bearer hf_...' } for a gated model. */
  headers?: Record<string, string>;
}

/**
 * Files at `<base>/resolve/<revision>/<file>`. `base` is a URL, or a bare hub id meaning
 * `https://huggingface.co/<id>`:
 *   urlSource('HuggingFaceTB/SmolLM2-135M-Instruct').name === 'https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct'
 */
export function urlSource(base: string, opts: UrlSourceOptions = {}): ModelSource {
  const site: UrlSite = {
    name: baseUrl(base),
    revision: opts.revision ?? 'main',
    fetch: opts.fetch ?? ((input: RequestInfo | URL, init?: RequestInit) => globalThis.fetch(input, init)),
    headers: opts.headers,
  };
  const source: ModelSource = {
    name: site.name,
    async has(file) {
      return urlHas(site, file);
    },
    async readText(file) {
      const [res] = await urlGet(site, file);
      return res.text();
    },
    async readJson<T>(file: string) {
      return parseJson<T>(await source.readText(file), file, site.name);
    },
    async *stream(file, onProgress) {
      const [res, url] = await urlGet(site, file);
      yield* responseChunks(res, url, file, onProgress);
    },
  };
  return source;
}

/** What urlSource's requests need: the base URL (its name), the revision, the fetch and the extra headers. */
interface UrlSite {
  name: string;
  revision: string;
  fetch: (url: string, init: RequestInit) => Promise<Response>;
  headers?: Record<string, string>;
}

/** `base` without trailing slashes; a bare hub id ("org/model") becomes https://huggingface.co/org/model. */
function baseUrl(base: string): string {
  const trimmed = base.trim().replace(/\/+$/, '');
  const isHubId = /^[A-Za-z0-9][\w.-]*\/[\w.-]+$/.test(trimmed) && !trimmed.includes('://');
  return isHubId ? `${HUB}/${trimmed}` : trimmed;
}

/** `<base>/resolve/<revision>/<file>`, each path segment URL-encoded; refuses file names that leave the model. */
function fileUrl(site: UrlSite, file: string): string {
  checkFileName(file, site.name);
  return `${site.name}/resolve/${encodeURIComponent(site.revision)}/${file.split('/').map(encodeURIComponent).join('/')}`;
}

/** fetch with the site's headers; a fetch that throws (offline, CORS) is a 'network' error with advice. Aborts pass through. */
async function request(site: UrlSite, url: string, init: RequestInit = {}): Promise<Response> {
  try {
    return await site.fetch(url, { ...init, headers: { ...site.headers, ...(init.headers as Record<string, string>) } });
  } catch (e) {
    if ((e as Error).name === 'AbortError') throw e;
    throw new ModelSourceError(
      `could not fetch ${url} (${(e as Error).message}): you may be offline, or the server does not allow this page to read it (CORS). ` +
        'Check the connection and the address, or download the files and pick them from disk instead.',
      'network',
    );
  }
}

/** The error for a non-2xx answer: 404 is 'missing'; 401/403 explain gated models; anything else says try later. */
function statusError(site: UrlSite, res: Response, url: string, file: string): ModelSourceError {
  if (res.status === 404) {
    return new ModelSourceError(
      `${url} was not found (HTTP 404): ${site.name} has no ${file} at revision "${site.revision}"; check the model id, the revision and the file name.`,
      'missing',
    );
  }
  if (res.status === 401 || res.status === 403) {
    return new ModelSourceError(
      `${url} refused access (HTTP ${res.status}): the model is private or gated, or does not exist. ` +
        'Accept its licence on the hub and pass an access token, or download the files and load them from disk.',
    );
  }
  return new ModelSourceError(`${url} failed with HTTP ${res.status} ${res.statusText}; try again later.`);
}

/** The 'missing' error for a file the server answered with its HTML index page (see isHtmlFallback). */
function htmlFallbackError(url: string, file: string): ModelSourceError {
  return new ModelSourceError(
    `${url} answered with an HTML page, not ${file}: the server sends its index page for files it does not have ` +
      '(a single-page-app fallback), so the file is missing there. Put the file on the server, or serve the site ' +
      'with real 404s (npm start does).',
    'missing',
  );
}

/** Drops a response body we will not read, so the connection is freed. */
async function discardBody(res: Response): Promise<void> {
  await res.body?.cancel().catch(() => {});
}

/** GETs `file`: the response (body unread) and its URL, or the error for a failed status or an HTML fallback. */
async function urlGet(site: UrlSite, file: string): Promise<[Response, string]> {
  const url = fileUrl(site, file);
  const res = await request(site, url);
  if (!res.ok) {
    await discardBody(res);
    throw statusError(site, res, url, file);
  }
  if (isHtmlFallback(res, file)) {
    await discardBody(res);
    throw htmlFallbackError(url, file);
  }
  return [res, url];
}

/** Whether `file` exists, by HEAD, or by a 1-byte GET on servers without HEAD; never downloads the file. */
async function urlHas(site: UrlSite, file: string): Promise<boolean> {
  const url = fileUrl(site, file);
  let res = await request(site, url, { method: 'HEAD' });
  if (res.status === 405 || res.status === 501) {
    // Server without HEAD: ask for one byte instead of the whole file.
    res = await request(site, url, { headers: { Range: 'bytes=0-0' } });
    await discardBody(res);
  }
  if (res.ok) return !isHtmlFallback(res, file);
  if (res.status === 404) return false;
  throw statusError(site, res, url, file);
}

/** The body's size in bytes from Content-Length, or null when absent, unparseable, or counting compressed bytes. */
function contentLength(res: Response): number | null {
  // With Content-Encoding, Content-Length counts compressed bytes, not the bytes we see.
  const encoded = (res.headers.get('content-encoding') ?? 'identity') !== 'identity';
  const length = Number(res.headers.get('content-length'));
  return !encoded && res.headers.has('content-length') && Number.isFinite(length) ? length : null;
}

/** A response's body as chunks with progress; a body that breaks off mid-download is a 'network' error. */
async function* responseChunks(res: Response, url: string, file: string, onProgress?: ProgressCallback): AsyncGenerator<Uint8Array> {
  const total = contentLength(res);
  if (!res.body) {
    // No body stream (a fetch without streams, or a test double): the whole file as one chunk.
    yield* withProgress((async function* () { yield new Uint8Array(await res.arrayBuffer()); })(), file, total, onProgress);
    return;
  }
  const broke = (e: unknown) =>
    new ModelSourceError(`the download of ${url} broke off (${(e as Error).message}); check the connection and load the model again.`, 'network');
  yield* withProgress(readableChunks(res.body, broke), file, total, onProgress);
}

// ---------------------------------------------------------------------------------------------
// Files the user picked (browser).

export type PickedFile = { name: string; webkitRelativePath?: string } & Blob;

/**
 * Files from an <input type="file" multiple> or a folder pick (`webkitdirectory`), where each
 * file's `webkitRelativePath` is "<folder>/<file>". A request is matched against the path inside
 * the picked folder first, then by basename; the shallowest file wins.
 *   filesSource(input.files).readJson('config.json')
 */
export function filesSource(files: Iterable<PickedFile>): ModelSource {
  const list = [...files].map((blob) => {
    const rel = blob.webkitRelativePath || blob.name;
    const parts = rel.split('/');
    return { blob, rel, inner: parts.length > 1 ? parts.slice(1).join('/') : rel, depth: parts.length };
  });
  const first = list[0]?.rel.split('/');
  const name = first && first.length > 1 ? first[0] : 'picked files';
  const find = (file: string) => {
    checkFileName(file, name);
    const base = file.split('/').pop()!;
    const byDepth = (a: { depth: number }, b: { depth: number }) => a.depth - b.depth;
    const exact = list.filter((f) => f.inner === file || f.rel === file).sort(byDepth);
    return (exact[0] ?? list.filter((f) => f.rel.split('/').pop() === base).sort(byDepth)[0])?.blob;
  };
  const need = (file: string): Blob => {
    const blob = find(file);
    if (!blob) {
      throw new ModelSourceError(`${file} is not among the picked files (${name}); pick the model folder, or include ${file} in the selection.`, 'missing');
    }
    return blob;
  };
  const source: ModelSource = {
    name,
    async has(file) {
      return find(file) !== undefined;
    },
    async readText(file) {
      return need(file).text();
    },
    async readJson<T>(file: string) {
      return parseJson<T>(await source.readText(file), file, name);
    },
    async *stream(file, onProgress) {
      const blob = need(file);
      const fail = (e: unknown) => new ModelSourceError(`could not read the picked file ${file}: ${(e as Error).message}; pick it again.`);
      async function* sliced() {
        for (let pos = 0; pos < blob.size; pos += CHUNK_BYTES) {
          yield new Uint8Array(await blob.slice(pos, pos + CHUNK_BYTES).arrayBuffer());
        }
      }
      const chunks = typeof blob.stream === 'function' ? readableChunks(blob.stream() as ReadableStream<Uint8Array>, fail) : sliced();
      yield* withProgress(chunks, file, blob.size, onProgress);
    },
  };
  return source;
}

// ---------------------------------------------------------------------------------------------
// In memory.

/**
 * Files held in memory; strings are stored as UTF-8. `chunkBytes` splits streams (tests use odd sizes
 * to exercise chunk boundaries).
 *   memorySource({ 'config.json': JSON.stringify(cfg), 'model.safetensors': bytes }, 'generated')
 */
export function memorySource(files: Record<string, Uint8Array | string>, name = 'memory', opts: { chunkBytes?: number } = {}): ModelSource {
  const chunkBytes = opts.chunkBytes ?? CHUNK_BYTES;
  const entry = (file: string): Uint8Array | string => {
    checkFileName(file, name);
    if (!Object.hasOwn(files, file)) throw new ModelSourceError(`${file} not found in ${name}.`, 'missing');
    return files[file];
  };
  const bytesOf = (file: string): Uint8Array => {
    const v = entry(file);
    return typeof v === 'string' ? new TextEncoder().encode(v) : v;
  };
  const source: ModelSource = {
    name,
    async has(file) {
      checkFileName(file, name);
      return Object.hasOwn(files, file);
    },
    async readText(file) {
      const v = entry(file);
      return typeof v === 'string' ? v : new TextDecoder().decode(v);
    },
    async readJson<T>(file: string) {
      return parseJson<T>(await source.readText(file), file, name);
    },
    async *stream(file, onProgress) {
      const bytes = bytesOf(file);
      async function* chunks() {
        for (let pos = 0; pos < bytes.length; pos += chunkBytes) yield bytes.subarray(pos, pos + chunkBytes);
      }
      yield* withProgress(chunks(), file, bytes.length, onProgress);
    },
  };
  return source;
}

/** Whether a model spec names a model shipped with the site ('models/agent', './models/judge'), not a hub id or URL. */
export function isEmbedded(spec: string): boolean {
  return spec.startsWith('models/') || spec.startsWith('./');
}
