/**
 * Smoke test of the update-step benchmark: options, the analytic FLOP count (worked by hand below)
 * and one tiny measured step on cpu in-process, printed as the report's tables. No timing checks.
 */
import { describe, expect, it } from 'vitest';
import { benchConfig } from '../../../bench/engine.ts';
import { formatUpdateReport, measureUpdate, parseUpdateArgs, updateStepFlops } from '../../../bench/update.ts';

describe('bench update', () => {
  it('parses options, with quick defaults and forced webgpu when named', () => {
    expect(parseUpdateArgs([])).toMatchObject({ backends: ['wasm', 'webgpu'], layers: 30, samples: 4, promptLen: 128, actionLen: 128, rank: 8, microBatch: 1 });
    expect(parseUpdateArgs(['--quick', '--layers', '3'])).toMatchObject({ quick: true, layers: 3, samples: 2, promptLen: 8, actionLen: 8, steps: 1 });
    expect(parseUpdateArgs(['--backends', 'webgpu'])).toMatchObject({ backends: ['webgpu'], forceWebgpu: true });
    expect(() => parseUpdateArgs(['--backends', 'tpu'])).toThrow(/unknown backend "tpu"/);
    expect(() => parseUpdateArgs(['--samples', '0'])).toThrow(/positive integer/);
  });

  it('counts the FLOPs of a step by the documented formula', () => {
    // One SmolLM2 layer, one sample of 1 + 1 tokens, rank 8 on q, k, v, o. Per token:
    //   dense 2 * (576*576 + 2*576*192 + 576*576 + 3*576*1536 + 49152*576) = 63,700,992
    //   attention 4 * T(2) * 576 = 4,608;  LoRA 2*8*(1152 + 768 + 768 + 1152) = 61,440
    // forward = 2 tokens * 63,767,040 = 127,534,080; step = 4 * forward + 2 * 61,440 = 510,259,200.
    const f = updateStepFlops(benchConfig(1), { samples: 1, promptLen: 1, actionLen: 1, rank: 8 });
    expect(f).toEqual({ forward: 127_534_080, step: 510_259_200, tokens: 2 });
  });

  it('measures one tiny step on cpu and prints the tables', async () => {
    const o = parseUpdateArgs(['--quick', '--backends', 'cpu', '--layers', '1', '--samples', '1', '--prompt', '3', '--action', '3']);
    const r = await measureUpdate('cpu', o);
    expect(r.skipped).toBeUndefined();
    expect(r.leakedTensors).toBe(0);
    const report = formatUpdateReport([r, { backend: 'webgpu', skipped: 'software adapter', notes: [] }], o);
    expect(report).toContain('| backend | log-prob path | step s | update tok/s | no-grad forward s | step GFLOP/s | matmul GFLOP/s | step / matmul | tfjs peak MB | peak RSS MB | tensors leaked |');
    expect(report).toMatch(/\| cpu \| plain ops \| [\d.]+ \| [\d.]+ \| [\d.]+ \| [\d.]+ \| [\d.]+ \| [\d.]+% \| \d+ \| \d+ \| 0 \|/);
    expect(report).toMatch(/\| cpu \| [\d.]+ \| [\d.]+ \| n\/a \| n\/a \| n\/a \|/); // no fused kernel off webgpu
    expect(report).toContain('webgpu **skipped**: software adapter');
    expect(report).toMatch(/machine: \d+ cores/);
  }, 300_000);
});
