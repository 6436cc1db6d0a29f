/**
 * `mappa train` as a user runs it, on the shipped models: one short iteration on two threads (this
 * one + a worker that shares the update, plays the second of the two rollout passes and the
 * evaluations' sampled pass) writes the same trajectories and adapters, byte for byte, and the
 * same held-out accuracies as with one thread (the reference),
 * prints its summary and exits (the worker does not keep the process alive); a bad --threads is
 * refused by name.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../../helpers/webgpu.ts';

const run = promisify(execFile);
const mappa = path.join(repoRoot, 'bin/mappa.js');

describe('mappa train', () => {
  it('--threads 2 trains the same adapters as --threads 1, and the process exits', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'mappa-train-'));
    const config = path.join(dir, 'short.json');
    writeFileSync(config, JSON.stringify({ iterations: 1, promptsPerIteration: 2, samplesPerPrompt: 2, evalEvery: 1, evalTasks: 3 }));
    const train = (threads: number) => run(process.execPath, [mappa, 'train', '--config', config, '--backend', 'wasm',
      '--threads', String(threads), '--json', '--out', path.join(dir, `t${threads}`)], { cwd: repoRoot, maxBuffer: 64 << 20, timeout: 280_000 });
    const [one, two] = [await train(1), await train(2)];
    expect(two.stderr).toMatch(/2 threads \(this one \+ 1 worker\)/);
    expect(one.stderr).not.toMatch(/\d threads \(/);
    expect(two.stderr).not.toMatch(/warning/); // no worker job fell back to this thread
    expect(JSON.parse(two.stdout)).toMatchObject({ iterations: 1, rollouts: 4 });
    // Both evaluations (untrained, after the iteration) agree; with 2 threads their sampled pass ran on the worker.
    const evals = (t: number) => readFileSync(path.join(dir, `t${t}`, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l).eval);
    expect(evals(2)).toEqual(evals(1));
    expect(evals(1)).toHaveLength(2);
    const trajectories = (t: number) => readFileSync(path.join(dir, `t${t}`, 'trajectories.jsonl'), 'utf8');
    expect(trajectories(2)).toBe(trajectories(1));
    for (const agent of ['solver', 'executor', 'verifier']) {
      const file = (t: number) => readFileSync(path.join(dir, `t${t}`, 'adapters', agent, 'adapter_model.safetensors'));
      expect(file(2).equals(file(1))).toBe(true);
    }
  }, 300_000);

  it('refuses --threads that is not a whole number of 1 or more', async () => {
    const err = await run(process.execPath, [mappa, 'train', '--threads', '0', '--out', mkdtempSync(path.join(os.tmpdir(), 'mappa-train-'))],
      { cwd: repoRoot }).catch((e: { stderr: string }) => e);
    expect((err as { stderr: string }).stderr).toMatch(/--threads must be a whole number of 1 or more, got "0"/);
  }, 300_000);
});
