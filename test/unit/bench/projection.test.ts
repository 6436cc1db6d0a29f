/**
 * bench/projection.ts: one projected row worked by hand, and the flags refused by name.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULTS, parseProjectionArgs, project } from '../../../bench/projection.ts';
import { parseConfig } from '../../../src/core/engine/model/config.ts';

describe('bench projection', () => {
  it('adds the memory-bound time and the dispatches\' time, by hand', () => {
    // hidden 8, 2 heads of 4, 1 KV head, intermediate 16, vocab 10, 1 layer: 656 weights, 2624 bytes (bench decode's case).
    const c = parseConfig({ model_type: 'llama', hidden_size: 8, num_attention_heads: 2, num_key_value_heads: 1, intermediate_size: 16, vocab_size: 10, num_hidden_layers: 1, max_position_embeddings: 64 }, 'test');
    const o = { ...DEFAULTS, bandwidth: 1e-6, efficiency: 1, tflops: 1e6, dispatchUs: 1000, plainPerLayer: 70 };
    const [plain] = project(c, 'tiny', o);
    // 2624 bytes at 1e-6 GB/s = 1000 B/s -> 2624 ms; 70 + 10 dispatches at 1 ms -> 80 ms; 1000 / 2704 tok/s.
    expect(plain.memoryMs).toBeCloseTo(2624, 6);
    expect(plain.dispatches).toBe(80);
    expect(plain.dispatchMs).toBeCloseTo(80, 9);
    expect(plain.tokPerS).toBeCloseTo(1000 / 2704, 9);
  });

  it('refuses a bad flag by name', () => {
    expect(parseProjectionArgs(['--dispatch-us', '40']).dispatchUs).toBe(40);
    expect(() => parseProjectionArgs(['--dispatch-us', '-1'])).toThrow(/--dispatch-us must be a positive number, got "-1"/);
    expect(() => parseProjectionArgs(['--speed', '1'])).toThrow(/unknown flag --speed/);
  });
});
