/**
 * The wasm SIMD attention kernel (src/core/engine/kernels/attention-wasm.ts, ./c/attention.c):
 * the docstring's hand-worked case, a float64 JS reference on random caches with padding and
 * grouped-query heads (head sizes with and without a SIMD multiple of 4), and the committed bytes
 * against a fresh build from the C source (skipped, saying so, where the clang that built them is not
 * installed; .ci/run installs Debian's).
 */
import { describe, expect, it } from 'vitest';
import { AttentionArena, type ArenaLayout } from '../../../src/core/engine/kernels/attention-wasm.ts';
import { ATTENTION_WASM_COMPILER } from '../../../src/core/engine/kernels/attention-wasm-bytes.ts';
import { Rng } from '../../../src/core/stats/rng.ts';
import { committedBytesTest } from '../../helpers/kernel-bytes.ts';

/** softmax(q k^T * scale over real slots) v, in float64. */
function reference(a: AttentionArena, layer: number, rows: number, slots: number, scale: number): Float64Array {
  const { nh, nkv, hd, cap } = a.layout;
  const out = new Float64Array(rows * nh * hd);
  for (let b = 0; b < rows; b++) {
    for (let h = 0; h < nh; h++) {
      const base = (b * nkv + Math.floor(h / (nh / nkv))) * cap * hd;
      const z: number[] = [];
      for (let s = 0; s < slots; s++) {
        if (!a.mask[b * cap + s]) continue;
        let d = 0;
        for (let i = 0; i < hd; i++) d += a.q[(b * nh + h) * hd + i] * a.k[layer][base + s * hd + i];
        z.push(d * scale, s);
      }
      let max = -Infinity;
      for (let j = 0; j < z.length; j += 2) max = Math.max(max, z[j]);
      let sum = 0;
      for (let j = 0; j < z.length; j += 2) sum += Math.exp(z[j] - max);
      for (let j = 0; j < z.length; j += 2) {
        const p = Math.exp(z[j] - max) / sum;
        for (let i = 0; i < hd; i++) out[(b * nh + h) * hd + i] += p * a.v[layer][base + z[j + 1] * hd + i];
      }
    }
  }
  return out;
}

describe('the wasm SIMD attention kernel', () => {
  it('averages the V rows when every score is equal (the docstring example)', () => {
    const a = AttentionArena.create({ layers: 1, rows: 1, nh: 1, nkv: 1, hd: 4, cap: 2 })!;
    a.k[0].set([1, 0, 0, 0, 0, 1, 0, 0]);
    a.v[0].set([1, 2, 3, 4, 5, 6, 7, 8]);
    a.mask.set([1, 1]);
    a.q.set([0, 0, 0, 0]);
    a.attend(0, 1, 2, 0.5);
    expect(Array.from(a.out)).toEqual([3, 4, 5, 6]);
  });

  for (const layout of [
    { layers: 2, rows: 5, nh: 4, nkv: 2, hd: 32, cap: 70 },
    { layers: 1, rows: 3, nh: 6, nkv: 3, hd: 6, cap: 17 }, // hd not a multiple of 4: the scalar tail
  ] as ArenaLayout[]) {
    it(`matches a float64 reference within 1e-6 (hd ${layout.hd}, ${layout.nh} heads on ${layout.nkv} KV heads, padded rows)`, () => {
      const a = AttentionArena.create(layout)!;
      const rng = new Rng(layout.hd);
      const fill = (x: Float32Array, scale: number) => { for (let i = 0; i < x.length; i++) x[i] = scale * (2 * rng.next() - 1); };
      for (let l = 0; l < layout.layers; l++) { fill(a.k[l], 3); fill(a.v[l], 1); }
      fill(a.q, 3);
      const slots = layout.cap - 3;
      for (let b = 0; b < layout.rows; b++) for (let s = 0; s < layout.cap; s++) a.mask[b * layout.cap + s] = s >= b && s < slots && (s + b) % 5 !== 1 ? 1 : 0;
      const scale = 1 / Math.sqrt(layout.hd);
      const layer = layout.layers - 1;
      a.attend(layer, layout.rows, slots, scale);
      const want = reference(a, layer, layout.rows, slots, scale);
      let diff = 0;
      for (let i = 0; i < want.length; i++) diff = Math.max(diff, Math.abs(want[i] - a.out[i]));
      expect(diff).toBeLessThan(1e-6);
    });
  }

  committedBytesTest('attention', ATTENTION_WASM_COMPILER);
});
