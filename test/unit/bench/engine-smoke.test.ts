/**
 * Smoke test of the engine benchmark: `npm run bench -- engine --quick` on cpu with one layer runs
 * end to end (dispatcher, child worker, report) and prints the expected tables. No timing checks:
 * the figures depend on the machine and its load.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parseEngineArgs, peakWithoutViews } from '../../../bench/engine.ts';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

describe('bench engine', () => {
  it('parses options, with quick defaults and forced webgpu when named', () => {
    const quick = parseEngineArgs(['--quick']);
    expect(quick).toMatchObject({ quick: true, layers: 2, contexts: [8, 32], forceWebgpu: false });
    const named = parseEngineArgs(['--backends', 'webgpu', '--contexts', '16,512', '--layers', '3', '--decode-steps', '4']);
    expect(named).toMatchObject({ backends: ['webgpu'], forceWebgpu: true, contexts: [16, 512], layers: 3, decodeSteps: 4 });
    expect(() => parseEngineArgs(['--backends', 'tpu'])).toThrow(/unknown backend "tpu"/);
    expect(() => parseEngineArgs(['--contexts', '16,abc'])).toThrow(/positive integer/);
  });

  it('the tfjs memory peak does not count reshape views again', () => {
    // weights 10, then a 4-byte matmul output, its reshape (a view, counted again by numBytes), a 4-byte add
    const kernels = [
      { name: 'BatchMatMul', bytesAdded: 4, totalBytesSnapshot: 14 },
      { name: 'Reshape', bytesAdded: 4, totalBytesSnapshot: 18 },
      { name: 'Add', bytesAdded: 4, totalBytesSnapshot: 22 },
    ];
    expect(peakWithoutViews(kernels)).toBe(18);
  });

  it('--quick on cpu with 1 layer prints the speed and memory tables', async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', 'bench/run.ts', 'engine', '--quick', '--layers', '1', '--backends', 'cpu', '--contexts', '4,8'],
      { cwd: repoRoot, timeout: 90_000 },
    );
    expect(stdout).toContain('| backend | context | prefill tok/s | decode tok/s (KV cache) | decode tok/s (recompute) | KV / recompute |');
    expect(stdout).toMatch(/\| cpu \| 4 \| [\d.]+ \| [\d.]+ \| [\d.]+ \| [\d.]+x \| 2 \/ 1 \|/);
    expect(stdout).toMatch(/\| cpu \| 8 \| /);
    expect(stdout).toContain('| backend | weights MB | peak RSS MB (process) | tfjs peak MB (forward at ctx 8, views excluded) | tensors leaked |');
    expect(stdout).toMatch(/\| cpu \| \d+ \| \d+ \| \d+ \| 0 \|/); // no tensor leaked
    expect(stdout).toMatch(/KV-cache decode speed \/ recompute decode speed at context 8/);
    expect(stdout).toMatch(/machine: \d+ cores/);
  });

  it('the dispatcher names the known benchmarks on an unknown name', async () => {
    const run = promisify(execFile)(process.execPath, ['--import', 'tsx', 'bench/run.ts', 'nope'], { cwd: repoRoot });
    await expect(run).rejects.toMatchObject({ stderr: expect.stringMatching(/unknown benchmark "nope"[\s\S]*engine/) });
  });
});
