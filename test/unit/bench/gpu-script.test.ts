/**
 * bench/gpu.sh's no-GPU path (what this project's machines have: no adapter, or SwiftShader's
 * software one) and the pieces of bench/machine.ts it prints with: options, the bytes a decode
 * step reads (worked by hand below) and one tiny measured run on cpu formatted as the table.
 * No timing checks.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { benchConfig } from '../../../bench/engine.ts';
import { decodeBytesPerToken, formatMachineReport, measureShape, parseMachineArgs } from '../../../bench/machine.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const script = path.join(root, 'bench/gpu.sh');

/** Whether this machine has a hardware WebGPU adapter in Node (then gpu.sh would really run). */
function hasHardwareAdapter(): boolean {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'bench/machine.ts', '--probe-adapter'], { cwd: root, encoding: 'utf8' });
  return r.status === 0;
}

describe('bench/gpu.sh', () => {
  it.skipIf(hasHardwareAdapter())('says there is no hardware WebGPU adapter and exits 2 without measuring', () => {
    const r = spawnSync('bash', [script], { cwd: root, encoding: 'utf8', timeout: 120_000 });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^bench\/gpu\.sh: no hardware WebGPU adapter found: (the only WebGPU adapter is a software one \(.*\)|no WebGPU adapter|.*Dawn found no)/m);
    expect(r.stderr).toContain('nothing was measured (exit 2)');
    expect(r.stdout).toBe(''); // no table
  }, 300_000);

  it('refuses an unknown option with exit 3', () => {
    const r = spawnSync('bash', [script, '--bogus'], { cwd: root, encoding: 'utf8' });
    expect(r.status).toBe(3);
    expect(r.stderr).toContain("unknown option '--bogus'");
  });
});

describe('bench machine', () => {
  it('parses options, with quick defaults', () => {
    expect(parseMachineArgs([])).toMatchObject({ shapes: ['smollm2-135m'], context: 128, decodeSteps: 16, samples: 4, promptLen: 64, actionLen: 64, steps: 2 });
    expect(parseMachineArgs(['--backend', 'auto']).backend).toBeUndefined();
    expect(parseMachineArgs(['--quick', '--shapes', 'smollm2-135m,qwen2.5-0.5b', '--backend', 'webgpu']))
      .toMatchObject({ backend: 'webgpu', shapes: ['smollm2-135m', 'qwen2.5-0.5b'], layers: 2, context: 16, decodeSteps: 4, steps: 1 });
    expect(parseMachineArgs(['--bandwidth-gbs', '4800'])).toMatchObject({ bandwidthGBs: 4800, bandwidthSource: '--bandwidth-gbs' });
    expect(() => parseMachineArgs(['--shapes', 'gpt2'])).toThrow(/unknown shape "gpt2"/);
    expect(() => parseMachineArgs(['--backend', 'tpu'])).toThrow(/unknown backend "tpu"/);
  });

  it('counts the weight bytes one decode step reads', () => {
    // SmolLM2-135M, 30 layers: layer = 2*576 + 576*576*2 + 576*192*2 + 3*576*1536 = 3,540,096 params;
    // 30 layers 106,202,880 + final norm 576 + tied output projection 49152*576 = 28,311,552 -> 134,515,008 params * 4 B
    expect(decodeBytesPerToken(benchConfig(30))).toBe(538_060_032);
    // Qwen2.5-0.5B (tied, q/k/v bias): layer = 2*896 + 896*896*2 + 896*128*2 + 896 + 128*2 + 3*896*4864 = 14,912,384;
    // 24 layers 357,897,216 + 896 + 151936*896 = 136,134,656 -> 494,032,768 params * 4 B
    expect(decodeBytesPerToken(benchConfig(24, 'qwen2.5-0.5b'))).toBe(1_976_131_072);
  });

  it('measures one tiny shape on cpu and prints the table row', async () => {
    const o = parseMachineArgs(['--backend', 'cpu', '--quick', '--layers', '1', '--context', '4', '--decode-steps', '2', '--samples', '1',
      '--prompt', '3', '--action', '3', '--bandwidth-gbs', '50']);
    const r = await measureShape('smollm2-135m', o);
    expect(r.skipped).toBeUndefined();
    const report = formatMachineReport([r, { shape: 'qwen2.5-0.5b', skipped: 'time budget of 1 s spent' }], o);
    expect(report).toContain('| shape | layers | backend | decode tok/s | decode GB/s (weights) | decode / bandwidth | matvec GB/s | decode / matvec |');
    expect(report).toMatch(/\| SmolLM2-135M \| 1 \| cpu \| [\d.]+ \| [\d.]+ \| [\d.]+% \| [\d.]+ \| [\d.]+% \| [\d.]+ \| [\d.]+ \| [\d.]+ \| [\d.]+% \|/);
    expect(report).toContain('50 GB/s (--bandwidth-gbs)');
    expect(report).toContain('qwen2.5-0.5b:  **skipped**: time budget of 1 s spent');
  }, 300_000);
});
