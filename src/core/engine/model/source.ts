/**
 * Where a model's files come from: the one interface the loader reads through.
 *
 * For: a local folder (Node), a base URL in the Hugging Face hub layout
 * (`<base>/resolve/main/<file>`, browser and Node), or files the user picked (browser).
 * Not for: parsing what the files hold (config.ts, safetensors.ts, tokenizer/ do that).
 *
 * Only the files asked for are read, so a tokenizer-less fixture never fetches a tokenizer.
 *   const src = folderSource('models/agent');       // Node
 *   const cfg = await src.readJson('config.json');
 *   for await (const chunk of src.stream('model.safetensors', onProgress)) { ... }
 */

/** Bytes loaded so far and the total when known (for progress bars). */
export type ProgressCallback = (info: { file: string; loaded: number; total: number | null }) => void;

export class ModelSourceError extends Error {
  constructor(
    message: string,
    /** 'missing' (404 / no such file), 'network' (CORS, offline), 'other'. */
    readonly kind: 'missing' | 'network' | 'other' = 'other',
  ) {
    super(message);
    this.name = 'ModelSourceError';
  }
}

export interface ModelSource {
  /** Human-readable origin, used in error messages ("models/agent", "https://host/org/model"). */
  readonly name: string;
  /** True if the file exists. Must not download the whole file. */
  has(file: string): Promise<boolean>;
  /** Whole file as text; throws ModelSourceError(kind 'missing') naming the file and source. */
  readText(file: string): Promise<string>;
  /** Whole file parsed as JSON; a parse error names the file. */
  readJson<T = unknown>(file: string): Promise<T>;
  /** The file's bytes in order, as they arrive; progress is reported per chunk. */
  stream(file: string, onProgress?: ProgressCallback): AsyncIterable<Uint8Array>;
}

/** Read a whole file through `stream` into one buffer (for small files: adapters, shards in tests). */
export async function readAllBytes(source: ModelSource, file: string, onProgress?: ProgressCallback): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  for await (const c of source.stream(file, onProgress)) {
    chunks.push(c);
    total += c.length;
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}
