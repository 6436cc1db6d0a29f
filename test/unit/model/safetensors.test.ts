// safetensors reader/writer: half-precision bit patterns worked by hand, hand-built files,
// and the transformers-written llama fixture read against a plain DataView parse.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  bf16BitsToFloat,
  decodeSafetensors,
  encodeSafetensors,
  f16BitsToFloat,
  floatToBf16Bits,
  floatToF16Bits,
  readSafetensors,
  type SafetensorsItem,
} from '../../../src/core/engine/model/safetensors.ts';

const repoRoot = path.resolve(__dirname, '../../..');
const llamaBytes = new Uint8Array(readFileSync(path.join(repoRoot, 'test/fixtures/parity/llama/model.safetensors')));

/** A safetensors file built by hand: header object as given, raw data bytes as given. */
function handFile(header: object, data: number[] | Uint8Array): Uint8Array {
  const json = new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(8 + json.length + data.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
  out.set(json, 8);
  out.set(data, 8 + json.length);
  return out;
}

async function* chunksOf(bytes: Uint8Array, size: number) {
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

async function collect(bytes: Uint8Array, chunk = 1 << 20, file = 'model.safetensors'): Promise<SafetensorsItem[]> {
  const items: SafetensorsItem[] = [];
  for await (const item of readSafetensors(chunksOf(bytes, chunk), file)) items.push(item);
  return items;
}

describe('half-precision bit patterns (worked by hand)', () => {
  it('F16 -> float', () => {
    expect(f16BitsToFloat(0x3c00)).toBe(1);
    expect(f16BitsToFloat(0xc000)).toBe(-2);
    expect(f16BitsToFloat(0x7bff)).toBe(65504); // (2 - 2^-10) * 2^15, the largest finite
    expect(f16BitsToFloat(0x3555)).toBe(0.333251953125); // (1 + 341/1024) / 4
    expect(f16BitsToFloat(0x0400)).toBe(2 ** -14); // smallest normal
    expect(f16BitsToFloat(0x0001)).toBe(2 ** -24); // smallest subnormal
    expect(f16BitsToFloat(0x03ff)).toBe(1023 * 2 ** -24); // largest subnormal
    expect(f16BitsToFloat(0x8001)).toBe(-(2 ** -24));
    expect(Object.is(f16BitsToFloat(0x8000), -0)).toBe(true);
    expect(f16BitsToFloat(0x7c00)).toBe(Infinity);
    expect(f16BitsToFloat(0xfc00)).toBe(-Infinity);
    expect(f16BitsToFloat(0x7e00)).toBeNaN();
    expect(f16BitsToFloat(0x7c01)).toBeNaN();
  });

  it('BF16 -> float', () => {
    expect(bf16BitsToFloat(0x3f80)).toBe(1);
    expect(bf16BitsToFloat(0xc040)).toBe(-3);
    expect(bf16BitsToFloat(0x3eab)).toBe(0.333984375); // (1 + 43/128) / 4
    expect(bf16BitsToFloat(0x7f7f)).toBe(3.3895313892515355e38); // (2 - 2^-7) * 2^127
    expect(bf16BitsToFloat(0x0001)).toBe(2 ** -133); // subnormal: 2^-149 * 2^16
    expect(Object.is(bf16BitsToFloat(0x8000), -0)).toBe(true);
    expect(bf16BitsToFloat(0x7f80)).toBe(Infinity);
    expect(bf16BitsToFloat(0xff80)).toBe(-Infinity);
    expect(bf16BitsToFloat(0x7fc0)).toBeNaN();
  });

  it('float -> F16 rounds to nearest even, overflows to Inf, underflows through subnormals', () => {
    expect(floatToF16Bits(1)).toBe(0x3c00);
    expect(floatToF16Bits(1 + 2 ** -11)).toBe(0x3c00); // halfway, even stays
    expect(floatToF16Bits(1 + 3 * 2 ** -11)).toBe(0x3c02); // halfway, odd rounds up
    expect(floatToF16Bits(0.1)).toBe(0x2e66);
    expect(floatToF16Bits(-0.1)).toBe(0xae66);
    expect(floatToF16Bits(65519)).toBe(0x7bff);
    expect(floatToF16Bits(65520)).toBe(0x7c00); // halfway to 2^16 rounds to even = Inf
    expect(floatToF16Bits(1e5)).toBe(0x7c00);
    expect(floatToF16Bits(-Infinity)).toBe(0xfc00);
    expect(floatToF16Bits(NaN) & 0x7c00).toBe(0x7c00);
    expect(floatToF16Bits(NaN) & 0x3ff).not.toBe(0);
    expect(floatToF16Bits(2 ** -24)).toBe(0x0001);
    expect(floatToF16Bits(2 ** -25)).toBe(0x0000); // half the smallest subnormal: ties to even 0
    expect(floatToF16Bits(1.5 * 2 ** -25)).toBe(0x0001);
    expect(floatToF16Bits(3 * 2 ** -25)).toBe(0x0002); // 1.5 units ties to even 2
    expect(floatToF16Bits(2 ** -14 * (1 - 2 ** -11))).toBe(0x0400); // rounds up into the normals
    expect(floatToF16Bits(1e-8)).toBe(0x0000);
    expect(floatToF16Bits(-1e-8)).toBe(0x8000);
  });

  it('float -> BF16 rounds to nearest even', () => {
    expect(floatToBf16Bits(1)).toBe(0x3f80);
    expect(floatToBf16Bits(1 + 2 ** -8)).toBe(0x3f80); // halfway, even stays
    expect(floatToBf16Bits(1 + 3 * 2 ** -8)).toBe(0x3f82); // halfway, odd rounds up
    expect(floatToBf16Bits(1 / 3)).toBe(0x3eab); // f32 0x3eaaaaab
    expect(floatToBf16Bits(0.1)).toBe(0x3dcd); // f32 0x3dcccccd
    expect(floatToBf16Bits(3.14159)).toBe(0x4049); // f32 0x40490fd0
    expect(floatToBf16Bits(-Infinity)).toBe(0xff80);
    expect(bf16BitsToFloat(floatToBf16Bits(NaN))).toBeNaN();
  });
});

describe('readSafetensors', () => {
  it('reads a hand-built F16 + BF16 + F32 file split into 1-byte chunks, in data-offset order', async () => {
    // Header lists "b" first but its data comes last.
    const data = [
      0x00, 0x3c, 0x01, 0x00, 0x00, 0xfc, 0x00, 0x80, // a: F16 [1, 2^-24, -Inf, -0]
      0x80, 0x3f, 0x40, 0xc0, 0xc0, 0x7f, // c: BF16 [1, -3, NaN]
      0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x20, 0xc1, // b: F32 [1, -10]
    ];
    const file = handFile(
      {
        b: { dtype: 'F32', shape: [2, 1], data_offsets: [14, 22] },
        __metadata__: { format: 'pt' },
        a: { dtype: 'F16', shape: [2, 2], data_offsets: [0, 8] },
        c: { dtype: 'BF16', shape: [3], data_offsets: [8, 14] },
      },
      data,
    );
    const items = await collect(file, 1);
    expect(items[0].kind).toBe('header');
    if (items[0].kind !== 'header') return;
    expect(items[0].header.metadata).toEqual({ format: 'pt' });
    expect(items[0].header.dataBytes).toBe(22);
    const tensors = items.slice(1).map((i) => (i.kind === 'tensor' ? i.tensor : null)!);
    expect(tensors.map((t) => t.name)).toEqual(['a', 'c', 'b']);
    expect([...tensors[0].data]).toEqual([1, 2 ** -24, -Infinity, -0]);
    expect(Object.is(tensors[0].data[3], -0)).toBe(true);
    expect(tensors[0].shape).toEqual([2, 2]);
    expect([...tensors[1].data.subarray(0, 2)]).toEqual([1, -3]);
    expect(tensors[1].data[2]).toBeNaN();
    expect([...tensors[2].data]).toEqual([1, -10]);
  });

  it('yields the header before any tensor byte is pulled, and each tensor as soon as its bytes arrived', async () => {
    const file = handFile(
      { x: { dtype: 'F32', shape: [2], data_offsets: [0, 8] }, y: { dtype: 'F32', shape: [1], data_offsets: [8, 12] } },
      [0, 0, 0x80, 0x3f, 0, 0, 0, 0x40, 0, 0, 0x40, 0x40],
    );
    const dataStart = file.length - 12;
    let pulled = 0;
    async function* counting() {
      for (let i = 0; i < file.length; i++) {
        pulled++;
        yield file.subarray(i, i + 1);
      }
    }
    const seen: [string, number][] = [];
    for await (const item of readSafetensors(counting(), 'm.safetensors')) {
      seen.push([item.kind === 'header' ? 'header' : item.tensor.name, pulled]);
    }
    expect(seen).toEqual([
      ['header', dataStart],
      ['x', dataStart + 8],
      ['y', dataStart + 12],
    ]);
  });

  it('closes the input when the consumer stops early', async () => {
    let closed = false;
    async function* source() {
      try {
        yield llamaBytes;
      } finally {
        closed = true;
      }
    }
    for await (const item of readSafetensors(source(), 'model.safetensors')) {
      expect(item.kind).toBe('header');
      break;
    }
    expect(closed).toBe(true);
  });

  it('reads the llama fixture (written by transformers) exactly', async () => {
    // Independent parse: length prefix, JSON.parse, DataView floats.
    const view = new DataView(llamaBytes.buffer, llamaBytes.byteOffset);
    const n = Number(view.getBigUint64(0, true));
    const header = JSON.parse(new TextDecoder().decode(llamaBytes.subarray(8, 8 + n)));
    const names = Object.keys(header).filter((k) => k !== '__metadata__');

    const { header: parsed, tensors } = await decodeSafetensors(llamaBytes);
    expect(parsed.metadata).toEqual({ format: 'pt' });
    expect(parsed.dataStart).toBe(8 + n);
    expect([...tensors.keys()].sort()).toEqual(names.sort());
    for (const name of ['model.layers.0.self_attn.k_proj.weight', 'model.norm.weight', 'lm_head.weight']) {
      const entry = header[name];
      const t = tensors.get(name)!;
      expect(t.shape).toEqual(entry.shape);
      const start = 8 + n + entry.data_offsets[0];
      const want = Array.from({ length: t.data.length }, (_, i) => view.getFloat32(start + 4 * i, true));
      expect(Array.from(t.data)).toEqual(want);
    }
    // Same values whatever the chunking.
    const odd = await collect(llamaBytes, 4093);
    const t = odd.find((i) => i.kind === 'tensor' && i.tensor.name === 'model.layers.2.mlp.up_proj.weight');
    expect(t && t.kind === 'tensor' && Array.from(t.tensor.data)).toEqual(Array.from(tensors.get('model.layers.2.mlp.up_proj.weight')!.data));
  });

  it('names a truncated file and how many bytes arrived', async () => {
    const cut = llamaBytes.subarray(0, llamaBytes.length - 100);
    const dataBytes = llamaBytes.length - 8 - Number(new DataView(llamaBytes.buffer).getBigUint64(0, true));
    await expect(collect(cut, 65536)).rejects.toThrow(
      `model.safetensors is truncated: expected ${dataBytes} bytes of tensor data, got ${dataBytes - 100}; ` +
        'the download or copy is incomplete, fetch the file again',
    );
    await expect(collect(llamaBytes.subarray(0, 100))).rejects.toThrow(/truncated: expected a \d+-byte header, got 92 bytes/);
    await expect(collect(llamaBytes.subarray(0, 5))).rejects.toThrow(/truncated: it has 5 bytes/);
  });

  it('refuses unsupported dtypes by name', async () => {
    const file = handFile({ 'model.embed_tokens.weight': { dtype: 'I8', shape: [4], data_offsets: [0, 4] } }, [1, 2, 3, 4]);
    await expect(collect(file)).rejects.toThrow(/tensor "model.embed_tokens.weight" has dtype "I8".*supported: F32, F16, BF16/);
  });

  it('refuses bad offsets, overlaps and size mismatches', async () => {
    const data = new Uint8Array(16);
    await expect(collect(handFile({ w: { dtype: 'F32', shape: [3], data_offsets: [0, 8] } }, data))).rejects.toThrow(
      /"w": data_offsets \[0,8\] span 8 bytes but shape \[3\] of F32 needs 12/,
    );
    await expect(collect(handFile({ w: { dtype: 'F32', shape: [2], data_offsets: [8, 0] } }, data))).rejects.toThrow(/invalid data_offsets \[8,0\]/);
    await expect(collect(handFile({ w: { dtype: 'F32', shape: [2], data_offsets: [-8, 0] } }, data))).rejects.toThrow(/invalid data_offsets/);
    await expect(
      collect(
        handFile(
          { a: { dtype: 'F32', shape: [2], data_offsets: [0, 8] }, b: { dtype: 'F32', shape: [2], data_offsets: [4, 12] } },
          data,
        ),
      ),
    ).rejects.toThrow(/"a" \[0, 8\) and "b" \[4, 12\) overlap/);
    await expect(collect(handFile({ w: { dtype: 'F32', shape: [2.5], data_offsets: [0, 8] } }, data))).rejects.toThrow(/invalid shape/);
    // Offsets past the end of the file show up as truncation.
    await expect(collect(handFile({ w: { dtype: 'F32', shape: [8], data_offsets: [0, 32] } }, data))).rejects.toThrow(
      /expected 32 bytes of tensor data, got 16/,
    );
  });

  it('refuses implausible header lengths and explains non-safetensors bytes', async () => {
    const huge = new Uint8Array(16);
    new DataView(huge.buffer).setBigUint64(0, 1n << 40n, true);
    await expect(collect(huge)).rejects.toThrow(/header length 1099511627776 is not plausible/);
    const lfs = new TextEncoder().encode('version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 5\n');
    await expect(collect(lfs)).rejects.toThrow(/Git LFS pointer/);
    const html = new TextEncoder().encode('<!DOCTYPE html><html><body>Not found</body></html>');
    await expect(collect(html)).rejects.toThrow(/HTML/);
    await expect(collect(handFile({}, []).fill(0x20, 8))).rejects.toThrow(/does not start with "\{"/);
    await expect(collect(handFile([1, 2] as unknown as object, []))).rejects.toThrow(/does not start with "\{"/);
    await expect(collect(handFile({ w: 1 }, []))).rejects.toThrow(/tensor "w" has no \{dtype, shape, data_offsets\} entry/);
  });
});

describe('encodeSafetensors', () => {
  it('writes the documented layout: u64 length, space-padded JSON, little-endian data', () => {
    const bytes = encodeSafetensors(
      [
        { name: 'w', shape: [2], data: new Float32Array([1, -2]) },
        { name: 'h', dtype: 'F16', shape: [1, 2], data: new Float32Array([1, 65504]) },
        { name: 'b', dtype: 'BF16', shape: [1], data: new Float32Array([1 / 3]) },
      ],
      { format: 'pt' },
    );
    const view = new DataView(bytes.buffer);
    const n = Number(view.getBigUint64(0, true));
    expect(n % 8).toBe(0);
    const text = new TextDecoder().decode(bytes.subarray(8, 8 + n));
    expect(text.trimEnd()).toBe(
      '{"__metadata__":{"format":"pt"},' +
        '"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},' +
        '"h":{"dtype":"F16","shape":[1,2],"data_offsets":[8,12]},' +
        '"b":{"dtype":"BF16","shape":[1],"data_offsets":[12,14]}}',
    );
    expect(/^ *$/.test(text.slice(text.trimEnd().length))).toBe(true);
    expect(bytes.length).toBe(8 + n + 14);
    const d = [...bytes.subarray(8 + n)];
    expect(d).toEqual([0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0, 0x00, 0x3c, 0xff, 0x7b, 0xab, 0x3e]);
  });

  it('round-trips through the reader', async () => {
    const data = new Float32Array([0.5, -0.25, 3, 1e-3, 7, 8]);
    const bytes = encodeSafetensors([
      { name: 'f32', shape: [2, 3], data },
      { name: 'empty', shape: [0, 4], data: new Float32Array(0) },
    ]);
    const { header, tensors } = await decodeSafetensors(bytes);
    expect(header.metadata).toEqual({});
    expect(Array.from(tensors.get('f32')!.data)).toEqual(Array.from(data));
    expect(tensors.get('empty')!.shape).toEqual([0, 4]);
  });

  it('refuses a shape that does not match the data', () => {
    expect(() => encodeSafetensors([{ name: 'w', shape: [3], data: new Float32Array(2) }])).toThrow(/shape \[3\] \(3 elements\) but 2 values/);
  });
});
