/**
 * `mappa train` with a person as tier 3, as a teacher scripts it: a real process trains one iteration of the relay of
 * 4 coached by the weak judge, the rubric on a quarter of the actions; the questions come on its stdout, the script
 * answers the first with a score and skips the rest on its stdin, after a line that is not an answer (refused by
 * number). The iteration's line and record count the person's answer as tier 3; the corrections file keeps it as the
 * person's. About 15-30 s (a model load, an iteration and two small evaluations): in `npm run test:slow`; the person
 * tier's reading of files and stdin alone: test/unit/cli/person-io.test.ts, in `npm test`.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../../helpers/webgpu.ts';

describe('mappa train --tier-person -', () => {
  it('asks on stdout, reads the answers on stdin, and records the person as tier 3', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'mappa-person-'));
    const config = JSON.parse(readFileSync(path.join(repoRoot, 'configs/relay-4.json'), 'utf8'));
    Object.assign(config, { iterations: 1, promptsPerIteration: 4, samplesPerPrompt: 2, evalEvery: 1, evalTasks: 4 });
    config.coach = { kind: 'model', model: 'models/relay-judge-weak' };
    writeFileSync(path.join(dir, 'c.json'), JSON.stringify(config));
    const p = spawn(process.execPath, [path.join(repoRoot, 'bin/mappa.js'), 'train', '--config', path.join(dir, 'c.json'), '--backend', 'wasm',
      '--threads', '1', '--out', path.join(dir, 'run'), '--tiers', '0.25', '--teach-every', '0', '--tier-person', '-', '--tier-person-share', '0.1',
      '--tier-person-wait', '120'], { cwd: repoRoot });
    let stdout = '';
    let stderr = '';
    const asked: { id: string; tier2: number }[] = [];
    // The questions come on stdout, the waiting line on stderr, in either order: answer once both are in.
    const answer = () => {
      if (asked.length || !stderr.includes('tier 3: waiting')) return;
      const lines = stdout.split('\n').filter((l) => l.startsWith('{"id"'));
      if (!lines.length) return;
      asked.push(...lines.map((l) => JSON.parse(l)));
      p.stdin.write(`seven\n${asked[0].id} ${10 - asked[0].tier2}\n${asked.slice(1).map((q) => `${q.id} skip\n`).join('')}`);
    };
    p.stderr.on('data', (d) => {
      stderr += d;
      answer();
    });
    p.stdout.on('data', (d) => {
      stdout += d;
      answer();
    });
    const code = await new Promise<number | null>((resolve) => p.on('close', resolve));
    expect(code, stderr).toBe(0);
    expect(asked.length).toBe(3); // round(0.1 x 32 actions)
    expect(stderr).toContain('stdin line 1: write "<batch>-<index> <score 0..10 | skip>" or a JSON line; line refused, the question stays open');
    expect(stderr).toMatch(/iter 1: .* tiers 24\/7\/1 person 1\/3 answered \(2 skipped, \d+ s\)/);
    const record = JSON.parse(readFileSync(path.join(dir, 'run', 'metrics.jsonl'), 'utf8').split('\n').find((l) => l.includes('"tiers"'))!);
    expect(record.coach.tiers).toMatchObject({ scored: [24, 7, 1], person: { asked: 3, answered: 1, skipped: 2 } });
    const corrections = readFileSync(path.join(dir, 'run', 'corrections.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(corrections.filter((c) => c.by === 'person').map((c) => c.score)).toEqual([10 - asked[0].tier2]);
    expect(readFileSync(path.join(dir, 'run', 'questions.jsonl'), 'utf8').trim().split('\n')).toHaveLength(3);
  }, 300_000);
});
