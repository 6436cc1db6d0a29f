/**
 * The safetensors file format: a streaming reader and a writer.
 *
 * For: reading Hugging Face checkpoints (F32 / F16 / BF16) into float32 arrays as the bytes arrive,
 * and writing the project's own files (adapters, small models).
 * Not for: deciding which tensors a model needs (weights.ts) or where the bytes come from (sources.ts).
 *
 * Layout of a file:  [u64 little-endian N] [N bytes of JSON header] [data section]
 *   header = { "__metadata__": {"format": "pt"},
 *              "model.norm.weight": {"dtype": "F32", "shape": [64], "data_offsets": [0, 256]}, ... }
 * `data_offsets` are [begin, end) byte offsets into the data section.
 *
 * Reading design: `readSafetensors(chunks, fileName)` is an async generator. It yields
 *   { kind: 'header', header }    once, before any tensor bytes are consumed, so a caller can
 *                                 validate names and shapes (and stop) before anything is built;
 *   { kind: 'tensor', tensor }    for each tensor, in data-offset order, as soon as its last byte arrived.
 * Each tensor is converted chunk by chunk straight into its Float32Array, so besides the tensors the
 * caller keeps, at most one tensor (the one being filled) and one input chunk are held.
 *   for await (const item of readSafetensors(src.stream('model.safetensors'), 'model.safetensors')) {
 *     if (item.kind === 'header') check(item.header); else build(item.tensor);
 *   }
 */

export type SafetensorsDtype = 'F32' | 'F16' | 'BF16';

const BYTES_PER_ELEMENT: Record<SafetensorsDtype, number> = { F32: 4, F16: 2, BF16: 2 };
/** The reference implementation refuses headers over 100 MB; a real one is a few hundred KB. */
const MAX_HEADER_BYTES = 100_000_000;

export interface SafetensorsEntry {
  name: string;
  dtype: SafetensorsDtype;
  shape: number[];
  /** [begin, end) byte offsets into the data section. */
  begin: number;
  end: number;
}

export interface SafetensorsHeader {
  file: string;
  /** `__metadata__` (string -> string), empty when absent. */
  metadata: Record<string, string>;
  /** Tensors sorted by `begin`. */
  tensors: SafetensorsEntry[];
  /** Bytes before the data section: 8 + the JSON length. */
  dataStart: number;
  /** Length of the data section (the largest `end`). */
  dataBytes: number;
}

export interface SafetensorsTensor {
  name: string;
  dtype: SafetensorsDtype;
  shape: number[];
  data: Float32Array;
}

export type SafetensorsItem = { kind: 'header'; header: SafetensorsHeader } | { kind: 'tensor'; tensor: SafetensorsTensor };

export class SafetensorsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SafetensorsError';
  }
}

// ---------------------------------------------------------------------------------------------
// Half-precision conversions.

let f16Table: Float32Array | null = null;

/** IEEE binary16 bits -> number. f16BitsToFloat(0x3c00) === 1; 0x0001 -> 2^-24; 0x7c00 -> Infinity. */
export function f16BitsToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24; // zero and subnormals
  if (exp === 31) return frac === 0 ? sign * Infinity : NaN;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

/** bfloat16 bits -> number: the top half of a float32. bf16BitsToFloat(0x3f80) === 1. */
export function bf16BitsToFloat(h: number): number {
  const u = new Uint32Array([(h & 0xffff) << 16]);
  return new Float32Array(u.buffer)[0];
}

const f32Scratch = new Float32Array(1);
const u32Scratch = new Uint32Array(f32Scratch.buffer);

/** number -> binary16 bits, rounding to nearest even. floatToF16Bits(65520) === 0x7c00 (overflow). */
export function floatToF16Bits(value: number): number {
  f32Scratch[0] = value;
  const x = u32Scratch[0];
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  const mant = x & 0x7fffff;
  if (exp === 255) return sign | (mant ? 0x7e00 : 0x7c00); // NaN (quiet) / Inf
  const e = exp - 127;
  if (e >= 16) return sign | 0x7c00;
  if (e >= -14) {
    // Normal: keep 10 of 23 mantissa bits; a carry out of the mantissa bumps the exponent (up to Inf).
    const h = sign | ((e + 15) << 10) | (mant >> 13);
    const rest = mant & 0x1fff;
    return rest > 0x1000 || (rest === 0x1000 && h & 1) ? h + 1 : h;
  }
  if (e < -25) return sign; // below half the smallest subnormal: signed zero
  // Subnormal: value = m * 2^(e-23) with the implicit bit; in units of 2^-24 that is m >> (-e-1).
  const m = mant | 0x800000;
  const shift = -e - 1;
  const h = m >> shift;
  const rest = m & ((1 << shift) - 1);
  const half = 1 << (shift - 1);
  return sign | (rest > half || (rest === half && h & 1) ? h + 1 : h);
}

/** number -> bfloat16 bits, rounding to nearest even; NaN stays NaN. floatToBf16Bits(1/3) === 0x3eab. */
export function floatToBf16Bits(value: number): number {
  f32Scratch[0] = value;
  const x = u32Scratch[0];
  if ((x & 0x7f800000) === 0x7f800000 && x & 0x7fffff) return (x >>> 16) | 0x0040;
  return ((x + 0x7fff + ((x >>> 16) & 1)) >>> 16) & 0xffff;
}

const HOST_LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/**
 * Fills one Float32Array from the tensor's raw bytes, which may arrive split at any byte.
 * F32 bytes are copied into the array's own buffer (no second buffer); F16/BF16 pairs are converted.
 */
class TensorFiller {
  readonly out: Float32Array;
  private readonly bytes: Uint8Array;
  private readonly words: Uint32Array;
  private pos = 0; // bytes consumed
  private carry = -1; // low byte of a half split across chunks

  constructor(readonly dtype: SafetensorsDtype, numel: number) {
    this.out = new Float32Array(numel);
    this.bytes = new Uint8Array(this.out.buffer);
    this.words = new Uint32Array(this.out.buffer);
    if (dtype === 'F16' && !f16Table) {
      f16Table = new Float32Array(65536);
      for (let h = 0; h < 65536; h++) f16Table[h] = f16BitsToFloat(h);
    }
  }

  push(chunk: Uint8Array): void {
    if (this.dtype === 'F32') {
      this.bytes.set(chunk, this.pos);
      this.pos += chunk.length;
      return;
    }
    let i = 0;
    let k = this.pos >> 1; // next element
    if (this.carry >= 0 && chunk.length > 0) {
      this.put(k++, this.carry | (chunk[0] << 8));
      this.carry = -1;
      i = 1;
    }
    for (; i + 1 < chunk.length; i += 2) this.put(k++, chunk[i] | (chunk[i + 1] << 8));
    if (i < chunk.length) this.carry = chunk[i];
    this.pos += chunk.length;
  }

  private put(k: number, h: number): void {
    if (this.dtype === 'BF16') this.words[k] = h << 16;
    else this.out[k] = f16Table![h];
  }

  finish(): Float32Array {
    if (this.dtype === 'F32' && !HOST_LITTLE_ENDIAN) {
      const view = new DataView(this.out.buffer);
      for (let k = 0; k < this.out.length; k++) this.out[k] = view.getFloat32(4 * k, true);
    }
    return this.out;
  }
}

// ---------------------------------------------------------------------------------------------
// Header.

const fmt = (shape: number[]) => `[${shape.join(',')}]`;

/** Explain bytes that are clearly not a safetensors file (an LFS pointer, an HTML error page). */
function notSafetensors(first: Uint8Array, file: string): SafetensorsError | null {
  const text = new TextDecoder().decode(first.subarray(0, 64));
  const lfs = 'version https://git-lfs';
  if (text.startsWith(lfs) || (text.length >= 8 && lfs.startsWith(text))) {
    return new SafetensorsError(`${file} is a Git LFS pointer, not the weights; run "git lfs pull" in the model folder or download the file itself.`);
  }
  if (/^\s*</.test(text)) {
    return new SafetensorsError(`${file} is an HTML/XML page, not a safetensors file; the server returned an error page instead of the weights.`);
  }
  return null;
}

/**
 * Parse and validate the JSON header bytes (the N bytes after the length prefix).
 * Refuses unknown dtypes by name, offsets outside the data section, overlaps and size mismatches.
 */
function parseSafetensorsHeader(json: Uint8Array, file: string): SafetensorsHeader {
  let raw: unknown;
  try {
    raw = JSON.parse(new TextDecoder().decode(json));
  } catch (e) {
    throw new SafetensorsError(`${file}: the header is not valid JSON (${(e as Error).message}); the file is damaged or not a safetensors file.`);
  }
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new SafetensorsError(`${file}: the header must be a JSON object of tensors.`);
  }
  const metadata: Record<string, string> = {};
  const tensors: SafetensorsEntry[] = [];
  for (const [name, v] of Object.entries(raw as Record<string, unknown>)) {
    if (name === '__metadata__') {
      if (v && typeof v === 'object') {
        for (const [k, s] of Object.entries(v)) if (typeof s === 'string') metadata[k] = s;
      }
      continue;
    }
    const where = `${file}: tensor "${name}"`;
    const info = v as { dtype?: unknown; shape?: unknown; data_offsets?: unknown } | null;
    if (!info || typeof info !== 'object') throw new SafetensorsError(`${where} has no {dtype, shape, data_offsets} entry.`);
    const dtype = info.dtype;
    if (typeof dtype !== 'string' || !(dtype in BYTES_PER_ELEMENT)) {
      throw new SafetensorsError(
        `${where} has dtype ${JSON.stringify(dtype)}, which this loader does not read (supported: F32, F16, BF16). ` +
          'Quantized or integer checkpoints are not supported; use the float32/float16/bfloat16 safetensors of the model.',
      );
    }
    const shape = info.shape;
    if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0)) {
      throw new SafetensorsError(`${where} has an invalid shape ${JSON.stringify(shape)} (expected a list of non-negative integers).`);
    }
    const offs = info.data_offsets;
    if (!Array.isArray(offs) || offs.length !== 2 || !offs.every((o) => Number.isSafeInteger(o) && o >= 0) || offs[1] < offs[0]) {
      throw new SafetensorsError(`${where} has invalid data_offsets ${JSON.stringify(offs)} (expected [begin, end] with 0 <= begin <= end).`);
    }
    const numel = shape.reduce((a: number, b: number) => a * b, 1);
    const want = numel * BYTES_PER_ELEMENT[dtype as SafetensorsDtype];
    if (offs[1] - offs[0] !== want) {
      throw new SafetensorsError(
        `${where}: data_offsets ${JSON.stringify(offs)} span ${offs[1] - offs[0]} bytes ` +
          `but shape ${fmt(shape)} of ${dtype} needs ${want}; the header is damaged.`,
      );
    }
    tensors.push({ name, dtype: dtype as SafetensorsDtype, shape: shape as number[], begin: offs[0], end: offs[1] });
  }
  tensors.sort((a, b) => a.begin - b.begin || a.end - b.end);
  for (let i = 1; i < tensors.length; i++) {
    const [p, t] = [tensors[i - 1], tensors[i]];
    if (t.begin < p.end) {
      throw new SafetensorsError(
        `${file}: tensors "${p.name}" [${p.begin}, ${p.end}) and "${t.name}" [${t.begin}, ${t.end}) overlap in the data section; the header is damaged.`,
      );
    }
  }
  const dataBytes = tensors.length ? tensors[tensors.length - 1].end : 0;
  return { file, metadata, tensors, dataStart: 8 + json.length, dataBytes };
}

// ---------------------------------------------------------------------------------------------
// Streaming reader.

/** Pulls exact byte counts out of an async chunk stream, keeping at most one chunk buffered. */
class ChunkReader {
  private it: AsyncIterator<Uint8Array>;
  private chunk: Uint8Array = new Uint8Array(0);
  private off = 0;
  consumed = 0;

  constructor(chunks: AsyncIterable<Uint8Array>) {
    this.it = chunks[Symbol.asyncIterator]();
  }

  /** Hands over `n` bytes as pieces (views of the input chunks); returns how many arrived (< n at end). */
  async take(n: number, sink: (piece: Uint8Array) => void): Promise<number> {
    let got = 0;
    while (got < n) {
      if (this.off >= this.chunk.length) {
        const r = await this.it.next();
        if (r.done) break;
        this.chunk = r.value;
        this.off = 0;
        continue;
      }
      const k = Math.min(n - got, this.chunk.length - this.off);
      sink(this.chunk.subarray(this.off, this.off + k));
      this.off += k;
      got += k;
    }
    this.consumed += got;
    return got;
  }

  async close(): Promise<void> {
    await this.it.return?.();
  }
}

/**
 * Stream a safetensors file: yields the validated header, then each tensor (data-offset order) as f32.
 * `skip(name)` true discards a tensor's bytes without allocating it (e.g. a tied lm_head).
 * A stream that ends early throws "<file> is truncated: expected N bytes of tensor data, got M; ...".
 */
export async function* readSafetensors(
  chunks: AsyncIterable<Uint8Array>,
  fileName: string,
  opts: { skip?: (name: string) => boolean } = {},
): AsyncGenerator<SafetensorsItem, void, undefined> {
  const reader = new ChunkReader(chunks);
  try {
    const prefix = new Uint8Array(8);
    let prefixFilled = 0;
    const gotPrefix = await reader.take(8, (p) => {
      prefix.set(p, prefixFilled);
      prefixFilled += p.length;
    });
    if (gotPrefix < 8) {
      throw new SafetensorsError(
        `${fileName} is truncated: it has ${gotPrefix} bytes, fewer than the 8-byte header length; the download or copy is incomplete, fetch the file again.`,
      );
    }
    const n = Number(new DataView(prefix.buffer).getBigUint64(0, true));
    if (n < 2 || n > MAX_HEADER_BYTES) {
      throw (
        notSafetensors(prefix, fileName) ??
        new SafetensorsError(
          `${fileName}: header length ${n} is not plausible (expected 2..${MAX_HEADER_BYTES} bytes); this is not a safetensors file or it is damaged.`,
        )
      );
    }
    const json = new Uint8Array(n);
    let filled = 0;
    const gotJson = await reader.take(n, (p) => {
      json.set(p, filled);
      filled += p.length;
    });
    if (gotJson < n) {
      throw new SafetensorsError(
        `${fileName} is truncated: expected a ${n}-byte header, got ${gotJson} bytes; the download or copy is incomplete, fetch the file again.`,
      );
    }
    if (json[0] !== 0x7b /* { */) {
      throw notSafetensors(prefix, fileName) ?? new SafetensorsError(`${fileName}: the header does not start with "{"; this is not a safetensors file.`);
    }
    const header = parseSafetensorsHeader(json, fileName);
    yield { kind: 'header', header };

    let at = 0; // position in the data section
    const truncated = (got: number) =>
      new SafetensorsError(
        `${fileName} is truncated: expected ${header.dataBytes} bytes of tensor data, got ${got}; the download or copy is incomplete, fetch the file again.`,
      );
    for (const t of header.tensors) {
      if (t.begin > at) {
        const gap = await reader.take(t.begin - at, () => {}); // unindexed padding: skipped
        if (gap < t.begin - at) throw truncated(at + gap);
        at = t.begin;
      }
      const size = t.end - t.begin;
      if (opts.skip?.(t.name)) {
        const got = await reader.take(size, () => {});
        if (got < size) throw truncated(at + got);
        at = t.end;
        continue;
      }
      const filler = new TensorFiller(t.dtype, size / BYTES_PER_ELEMENT[t.dtype]);
      const got = await reader.take(size, (p) => filler.push(p));
      if (got < size) throw truncated(at + got);
      at = t.end;
      yield { kind: 'tensor', tensor: { name: t.name, dtype: t.dtype, shape: t.shape, data: filler.finish() } };
    }
  } finally {
    await reader.close();
  }
}

/**
 * Whole-buffer convenience: every tensor of an in-memory file, by name (e.g. an uploaded adapter).
 *   const { tensors } = await decodeSafetensors(bytes); tensors.get('w')!.data // Float32Array
 */
export async function decodeSafetensors(bytes: Uint8Array, fileName = 'model.safetensors'):
  Promise<{ header: SafetensorsHeader; tensors: Map<string, SafetensorsTensor> }> {
  let header: SafetensorsHeader | null = null;
  const tensors = new Map<string, SafetensorsTensor>();
  async function* once() {
    yield bytes;
  }
  for await (const item of readSafetensors(once(), fileName)) {
    if (item.kind === 'header') header = item.header;
    else tensors.set(item.tensor.name, item.tensor);
  }
  return { header: header!, tensors };
}

// ---------------------------------------------------------------------------------------------
// Writer.

export interface TensorToEncode {
  name: string;
  /** Stored dtype; default F32. F16/BF16 round to nearest even. */
  dtype?: SafetensorsDtype;
  shape: number[];
  data: Float32Array;
}

/**
 * Write a safetensors file. Tensors are laid out in the given order; the header is padded with spaces
 * so the data section starts on an 8-byte boundary.
 *   encodeSafetensors([{ name: 'w', shape: [2], data: new Float32Array([1, 2]) }], { format: 'pt' })
 *   -> 8-byte length, '{"__metadata__":{"format":"pt"},"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}' + spaces, 8 data bytes
 */
export function encodeSafetensors(tensors: TensorToEncode[], metadata?: Record<string, string>): Uint8Array {
  const header: Record<string, unknown> = {};
  if (metadata && Object.keys(metadata).length) header.__metadata__ = metadata;
  let offset = 0;
  for (const t of tensors) {
    const dtype = t.dtype ?? 'F32';
    if (t.name === '__metadata__' || t.name in header) throw new SafetensorsError(`encodeSafetensors: duplicate or reserved tensor name "${t.name}".`);
    const numel = t.shape.reduce((a, b) => a * b, 1);
    if (numel !== t.data.length) {
      throw new SafetensorsError(`encodeSafetensors: tensor "${t.name}" has shape ${fmt(t.shape)} (${numel} elements) but ${t.data.length} values.`);
    }
    const size = numel * BYTES_PER_ELEMENT[dtype];
    header[t.name] = { dtype, shape: t.shape, data_offsets: [offset, offset + size] };
    offset += size;
  }
  let json = new TextEncoder().encode(JSON.stringify(header));
  const padded = Math.ceil(json.length / 8) * 8;
  if (padded !== json.length) {
    const p = new Uint8Array(padded).fill(0x20);
    p.set(json);
    json = p;
  }
  const out = new Uint8Array(8 + json.length + offset);
  const view = new DataView(out.buffer);
  view.setBigUint64(0, BigInt(json.length), true);
  out.set(json, 8);
  let at = 8 + json.length;
  for (const t of tensors) {
    const dtype = t.dtype ?? 'F32';
    for (let i = 0; i < t.data.length; i++) {
      if (dtype === 'F32') view.setFloat32(at + 4 * i, t.data[i], true);
      else view.setUint16(at + 2 * i, dtype === 'F16' ? floatToF16Bits(t.data[i]) : floatToBf16Bits(t.data[i]), true);
    }
    at += t.data.length * BYTES_PER_ELEMENT[dtype];
  }
  return out;
}
