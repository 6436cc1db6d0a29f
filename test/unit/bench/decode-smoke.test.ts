/**
 * bench/decode.ts: the analytic cost of a decode step (hand-worked on a small shape), the flags, and
 * one real measurement of the shipped agent on wasm (2 steps) that fills every column of the table,
 * for the plain step and the fused one.
 */
import { describe, expect, it } from 'vitest';
import { decodeStepCost, formatDecode, measureDecode, parseDecodeArgs } from '../../../bench/decode.ts';
import { parseConfig } from '../../../src/core/engine/model/config.ts';

describe('bench decode', () => {
  it('counts a step\'s FLOPs and weight bytes by hand', () => {
    // hidden 8, 2 heads of 4, 1 KV head, intermediate 16, vocab 10, 1 layer:
    // layer = 8*8 + 2*8*4 + 8*8 + 3*8*16 = 576; weights = 576 + 10*8 = 656
    const c = parseConfig({ model_type: 'llama', hidden_size: 8, num_attention_heads: 2, num_key_value_heads: 1, intermediate_size: 16, vocab_size: 10, num_hidden_layers: 1, max_position_embeddings: 64 }, 'test');
    const { flops, bytes } = decodeStepCost(c, 3, 5);
    expect(bytes).toBe(4 * 656);
    expect(flops).toBe(2 * 3 * 656 + 4 * 3 * 1 * 8 * 6);
  });

  it('refuses a bad flag by name', () => {
    expect(parseDecodeArgs(['--rows', '12', '--shapes', 'agent'])).toMatchObject({ rows: 12, shapes: ['agent'] });
    expect(() => parseDecodeArgs(['--rows', '0'])).toThrow(/--rows must be a whole number of 1 or more, got "0"/);
    expect(() => parseDecodeArgs(['--speed', '1'])).toThrow(/unknown flag --speed/);
  });

  it('measures the shipped agent on wasm, plain and fused, and prints two full rows', async () => {
    const o = { backend: 'wasm' as const, shapes: ['agent'], rows: 2, context: 8, steps: 2 };
    const [plain, fused] = await measureDecode('wasm', { ...o, shape: 'agent' });
    expect(plain.kernels).toBeGreaterThan(4 * 20); // a few dozen kernels a layer
    expect(fused.kernels).toBe(4 * (7 + 9) + 3); // per layer 7 matmuls and 9 JS passes; the embedding, final norm and head
    for (const r of [plain, fused]) {
      expect(r.stepMs).toBeGreaterThan(0);
      expect(r.boundMs! / r.stepMs!).toBeGreaterThan(0);
    }
    const table = formatDecode([plain, fused], o);
    for (const path of ['plain', 'fused']) expect(table).toMatch(new RegExp(`\\| agent \\| ${path} \\| 4 \\| [\\d.]+ \\| [\\d.]+ \\| [\\d.]+ \\| [\\d.]+ \\| [\\d.]+ \\| \\d+ \\| [\\d.]+ \\| \\d+ % \\|`));
  }, 300_000);
});
