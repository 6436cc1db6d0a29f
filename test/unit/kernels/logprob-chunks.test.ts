// Row chunking of the fused log-prob kernel (planRowChunks), hand-worked; no GPU needed.

import { describe, expect, it } from 'vitest';
import { planRowChunks } from '../../../src/core/engine/kernels/logprob-webgpu.ts';

const MiB = 2 ** 20;

describe('planRowChunks', () => {
  it('aligns binding starts down to 256 bytes and skips the slack with base (V=97, 3 rows/chunk)', () => {
    // Row r starts at byte 388 r: 0, 1164 = 1024 + 140, 2328 = 2304 + 24.
    expect(planRowChunks(8, 97, { maxBindingBytes: 2 ** 30, alignment: 256, maxRows: 3 })).toEqual([
      { rowStart: 0, rows: 3, byteOffset: 0, byteSize: 1164, base: 0 },
      { rowStart: 3, rows: 3, byteOffset: 1024, byteSize: 2328 - 1024, base: 35 },
      { rowStart: 6, rows: 2, byteOffset: 2304, byteSize: 3104 - 2304, base: 6 },
    ]);
  });

  it('fits 146 MB of Qwen logits (240 x 151936) into 128 MiB bindings: 220 + 20 rows', () => {
    // (134217728 - 252) / 607744 = 220.8 rows; 607744 is a multiple of 256, so base stays 0.
    const plan = planRowChunks(240, 151936, { maxBindingBytes: 128 * MiB, alignment: 256, maxRows: 65535 });
    expect(plan.map((c) => [c.rowStart, c.rows, c.base])).toEqual([[0, 220, 0], [220, 20, 0]]);
    for (const c of plan) expect(c.byteSize).toBeLessThanOrEqual(128 * MiB);
    expect(plan[1].byteOffset + plan[1].byteSize).toBe(240 * 151936 * 4);
  });

  it('one chunk when everything fits; none for zero rows', () => {
    expect(planRowChunks(4, 151936, { maxBindingBytes: 2 ** 30, alignment: 256, maxRows: 65535 })).toHaveLength(1);
    expect(planRowChunks(0, 97, { maxBindingBytes: 2 ** 30, alignment: 256, maxRows: 65535 })).toEqual([]);
  });

  it('says what to do when a single row does not fit a binding', () => {
    expect(() => planRowChunks(2, 1000, { maxBindingBytes: 3000, alignment: 256, maxRows: 10 })).toThrow(
      /one row of 1000 logits \(4000 bytes\) does not fit a storage binding of 3000 bytes.*selectedLogProbsPlain/,
    );
  });
});
