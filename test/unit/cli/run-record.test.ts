/**
 * A run records what it used, and says where its files are damaged: `mappa train` as a user runs it
 * (bin/mappa.js, a real process) on the shipped relay model and its judge, in a folder of its own
 * (models/relay linked, models/relay-judge copied, so that swapping the judge touches nothing else):
 *   - summary.json and the checkpoint's used.json name each model that took part (the agents', the
 *     judge) by path and sha256, with the coach template's; config.json keeps what was asked ("team");
 *   - the judge's files swapped for another judge's (test/fixtures/relay-judge-weak) between a run and
 *     its --resume: refused in one line naming the judge and the flag that overrides it;
 *   - a damaged checkpoint/state.json, checkpoint tensor file, and metrics.jsonl line: one line each,
 *     naming the file, what is wrong and the way out, before any work (no backend line).
 */
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../../helpers/webgpu.ts';

const mappa = path.join(repoRoot, 'bin/mappa.js');
const dir = mkdtempSync(path.join(os.tmpdir(), 'mappa-record-'));
const config = path.join(dir, 'relay.json');
const trained = path.join(dir, 'trained');

interface Run { code: number | null; stdout: string; stderr: string }

/** `mappa train` on the test config, in `dir` (its models/ are this test's). */
function train(out: string, extra: string[] = []): Promise<Run> {
  const child = spawn(process.execPath, [mappa, 'train', '--config', config, '--threads', '1', '--out', out, ...extra], { cwd: dir });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

/** A copy of the trained run, to damage. */
function copyRun(name: string): string {
  const out = path.join(dir, name);
  cpSync(trained, out, { recursive: true });
  return out;
}

/** Refused before any work, in one line matching `line`. */
function expectRefused(r: Run, line: RegExp): void {
  expect(r.code, r.stderr).toBe(2);
  expect(r.stderr.trim().split('\n'), r.stderr).toHaveLength(1);
  expect(r.stderr.trim()).toMatch(line);
}

beforeAll(async () => {
  mkdirSync(path.join(dir, 'models'));
  symlinkSync(path.join(repoRoot, 'models/relay'), path.join(dir, 'models/relay'));
  cpSync(path.join(repoRoot, 'models/relay-judge'), path.join(dir, 'models/relay-judge'), { recursive: true });
  const c = JSON.parse(readFileSync(path.join(repoRoot, 'configs/relay-2.json'), 'utf8'));
  writeFileSync(config, JSON.stringify({ ...c, iterations: 2, promptsPerIteration: 4, evalEvery: 2, evalTasks: 8, checkpointEvery: 1 }));
  const r = await train(trained);
  expect(r.code, r.stderr).toBe(0);
}, 300_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('a run records what it used', () => {
  it('summary.json and the checkpoint name the agents\' model and the judge by path and sha256; config.json keeps what was asked', () => {
    const summary = JSON.parse(readFileSync(path.join(trained, 'summary.json'), 'utf8'));
    const hex = expect.stringMatching(/^[0-9a-f]{64}$/);
    expect(summary.used).toEqual({
      models: [{ role: 'agents', path: 'models/relay', sha256: hex }, { role: 'judge', path: 'models/relay-judge', sha256: hex }],
      coachTemplate: { name: 'team', sha256: hex },
    });
    expect(summary.used.models[0].sha256).not.toBe(summary.used.models[1].sha256);
    expect(JSON.parse(readFileSync(path.join(trained, 'checkpoint', 'used.json'), 'utf8'))).toEqual(summary.used);
    expect(JSON.parse(readFileSync(path.join(trained, 'config.json'), 'utf8')).coach).toMatchObject({ kind: 'model', model: 'team', template: 'team' });
  });
});

describe('damaged run files: one line, the file, what is wrong, the way out', () => {
  it('checkpoint/state.json that is not JSON', async () => {
    const out = copyRun('state');
    writeFileSync(path.join(out, 'checkpoint', 'state.json'), '{"iteration": 2, "curriculum": {');
    expectRefused(await train(out, ['--resume']),
      /^mappa train: \S+\/state\/checkpoint\/state\.json is not valid JSON \(.*\): delete the checkpoint folder to restart, or restore it$/);
  }, 300_000);

  it('a checkpoint tensor file cut short', async () => {
    const out = copyRun('tensor');
    const file = path.join(out, 'checkpoint', 'adapters', 'agent1', 'adapter_model.safetensors');
    writeFileSync(file, readFileSync(file).subarray(0, 200));
    expectRefused(await train(out, ['--resume']),
      /^mappa train: \S+\/tensor\/checkpoint\/adapters\/agent1\/adapter_model\.safetensors cannot be read as safetensors \(.*truncated.*\): delete the checkpoint folder to restart, or restore it$/);
  }, 300_000);

  it('a damaged line in metrics.jsonl (not a torn last line, which is dropped with a warning)', async () => {
    const out = copyRun('metrics');
    const file = path.join(out, 'metrics.jsonl');
    const lines = readFileSync(file, 'utf8').split('\n');
    lines[1] = lines[1].slice(0, 20);
    writeFileSync(file, lines.join('\n'));
    expectRefused(await train(out, ['--resume']),
      /^mappa train: \S+\/metrics\/metrics\.jsonl line 2 is not valid JSON \(position \d+\): delete or mend that line, or restore the file, then continue with --resume$/);
  }, 300_000);
});

describe('--resume after the judge changed', () => {
  it('is refused in one line naming the judge and --accept-changed-models; with the flag it goes on', async () => {
    const out = copyRun('swapped');
    const judge = path.join(dir, 'models/relay-judge');
    cpSync(path.join(repoRoot, 'test/fixtures/relay-judge-weak'), judge, { recursive: true }); // another judge's files in its place
    try {
      const refused = await train(out, ['--resume']);
      expectRefused(refused, new RegExp('^mappa train: --resume: the judge models/relay-judge changed \\(sha256 [0-9a-f]{8} then, [0-9a-f]{8} now\\) '
        + 'since \\S+ checkpoint; put it back, or pass --accept-changed-models to go on with it$'));
      const accepted = await train(out, ['--resume', '--accept-changed-models']);
      expect(accepted.code, accepted.stderr).toBe(0);
      const used = JSON.parse(readFileSync(path.join(out, 'summary.json'), 'utf8')).used;
      expect(used.models[1].sha256).not.toBe(JSON.parse(readFileSync(path.join(trained, 'summary.json'), 'utf8')).used.models[1].sha256);
    } finally {
      cpSync(path.join(repoRoot, 'models/relay-judge'), judge, { recursive: true });
    }
  }, 300_000);
});
