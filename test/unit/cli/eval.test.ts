/**
 * `mappa eval` as a user runs it, on the shipped models: the JSON result on stdout, and with
 * --trajectories every held-out task's greedy and sampled trajectory in trajectories.jsonl's format,
 * agreeing with the accuracies it printed, and each accuracy's 95 % Wilson interval (JSON and stderr).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { formatPercent, wilson } from '../../../src/core/stats/intervals.ts';
import { repoRoot } from '../../helpers/webgpu.ts';

const run = promisify(execFile);

describe('mappa eval', () => {
  it('--trajectories writes what the team did on each held-out task, matching the printed accuracy', async () => {
    const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'mappa-eval-')), 'eval.jsonl');
    const { stdout, stderr } = await run(process.execPath, [path.join(repoRoot, 'bin/mappa.js'), 'eval', '--tasks', '2', '--backend', 'wasm', '--trajectories', file],
      { cwd: repoRoot, maxBuffer: 64 << 20 });
    const result = JSON.parse(stdout);
    expect(result).toMatchObject({ tasks: 2 });
    for (const mode of ['greedy', 'sampled'] as const) {
      const k = result.perTask[mode].filter(Boolean).length;
      expect(k / 2).toBe(result[mode]);
      const w = wilson(k, 2);
      expect(result[`${mode}Interval`]).toEqual([w.low, w.high]);
      const label = mode === 'greedy' ? 'greedy' : `sampled (T=${result.temperature})`;
      expect(stderr).toContain(`${label} ${formatPercent(w)} on 2 problems\n`); // e.g. "greedy 50.0 % [9.5, 90.5] on 2 problems"
    }
    const lines = readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(lines.map((l) => l.eval)).toEqual(['greedy', 'greedy', 'sampled', 'sampled']);
    for (const mode of ['greedy', 'sampled'] as const) {
      const mine = lines.filter((l) => l.eval === mode);
      expect(mine.filter((l) => l.correct).length / mine.length).toBe(result[mode]);
    }
    const first = lines[0];
    expect(first.actions.map((a: { agent: string }) => a.agent)[0]).toBe('solver');
    expect(first.actions[0]).toMatchObject({ output: expect.any(String), tokens: expect.any(Array), input: expect.any(Array) });
  }, 300_000);
});
