/**
 * `mappa judge ask|teach|rank` as a user meets them, through the CLI's own main(): the real weak relay
 * judge (test/fixtures/relay-judge-weak), a run folder holding real relay trajectories (models/relay
 * played them), the relay rubric as the simulated person. A bad rating file is refused in one line
 * naming the line; a failed or interrupted teaching leaves the old judge as it was and no new folder.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { main } from '../../../src/cli/main.ts';
import { parseRatings } from '../../../src/core/coach/corrections.ts';
import { initBackend } from '../../../src/core/engine/backend.ts';
import { loadModel } from '../../../src/core/engine/model/load.ts';
import { folderSource } from '../../../src/core/engine/model/sources.ts';
import { EngineAgents } from '../../../src/core/loop/agents.ts';
import { runRollouts, trajectoryLines } from '../../../src/core/loop/rollout.ts';
import { relayHeldOut } from '../../../src/core/domains/relay/tasks.ts';
import { relayOutcome, relayWorkflow } from '../../../src/core/domains/relay/team.ts';
import { repoRoot } from '../../helpers/webgpu.ts';

const JUDGE = 'test/fixtures/relay-judge-weak';
const dir = mkdtempSync(path.join(os.tmpdir(), 'mappa-judge-'));
const sha = (file: string) => createHash('sha256').update(readFileSync(path.join(repoRoot, file))).digest('hex');
const judgeHash = () => readdirSync(path.join(repoRoot, JUDGE)).map((f) => `${f}:${sha(path.join(JUDGE, f))}`).join('\n');

/** Runs `mappa ...args` in this process: exit code, stdout, stderr; `onErr` sees every stderr chunk. */
async function mappa(args: string[], onErr?: (chunk: string) => void): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const err = vi.spyOn(process.stderr, 'write').mockImplementation((c: string | Uint8Array) => {
    stderr += String(c);
    onErr?.(String(c));
    return true;
  });
  const out = vi.spyOn(process.stdout, 'write').mockImplementation((c: string | Uint8Array) => {
    stdout += String(c);
    return true;
  });
  const cwd = process.cwd();
  process.chdir(repoRoot);
  try {
    return { code: await main(args), stdout, stderr };
  } finally {
    process.chdir(cwd);
    err.mockRestore();
    out.mockRestore();
  }
}

const run = path.join(dir, 'run');
let before = '';

beforeAll(async () => {
  before = judgeHash();
  await initBackend({ force: 'wasm' });
  // A run folder as `mappa train` leaves it: the relay of 4's config and real trajectories of models/relay.
  const relay = await loadModel(folderSource(path.join(repoRoot, 'models/relay')), { tokenizer: 'required' });
  const trajs = await runRollouts(relayWorkflow(4), relayHeldOut(4).slice(0, 4), {
    agents: new EngineAgents(relay, new Map(), 64), tools: {}, samplesPerTask: 1, temperature: 1, seed: 3, outcome: relayOutcome,
  });
  relay.model.dispose();
  mkdirSync(run, { recursive: true });
  writeFileSync(path.join(run, 'config.json'), readFileSync(path.join(repoRoot, 'configs/relay-4.json')));
  writeFileSync(path.join(run, 'trajectories.jsonl'), trajectoryLines(0, trajs));
}, 300_000);

afterAll(() => {
  expect(judgeHash(), 'the old judge is never written to').toBe(before);
});

describe('mappa judge', () => {
  let ratings = '';

  it('ask --simulate rater: the actions the judge is least sure of, rated by the rubric and saying so', async () => {
    const r = await mappa(['judge', 'ask', '--judge', JUDGE, '--run', run, '--k', '6', '--simulate', 'rater', '--template', 'generic', '--backend', 'wasm']);
    expect(r.code, r.stderr).toBe(0);
    const rated = parseRatings(r.stdout, 'stdout');
    expect(rated).toHaveLength(6);
    expect(rated.every((x) => x.by === 'rubric (simulated person)' && /^spread \d|no score line/.test(x.why!))).toBe(true);
    expect(r.stderr).toMatch(/6 of 16 actions, picked by the spread of the judge's score distribution; verdicts by the rubric \(simulated person\)/);
    ratings = path.join(dir, 'ratings.jsonl');
    writeFileSync(ratings, r.stdout);
  }, 300_000);

  it('rank: ranking with its Wilson interval', async () => {
    const r = await mappa(['judge', 'rank', '--judge', JUDGE, '--ratings', ratings, '--backend', 'wasm']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/on 6 rated actions .*: ranking \d+\.\d % \[\d+\.\d, \d+\.\d\] over \d+ pairs \(Wilson 95 %\), MAE \d/);
  }, 300_000);

  it('refuses a malformed rating file in one line naming the line, before any work', async () => {
    const bad = path.join(dir, 'bad.jsonl');
    writeFileSync(bad, `${readFileSync(ratings, 'utf8').split('\n')[0]}\n{"prompt": "p", "score": "ten"}\n`);
    const out = path.join(dir, 'never');
    const r = await mappa(['judge', 'teach', '--judge', JUDGE, '--ratings', bad, '--replay', 'none', '--out', out]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^mappa judge: .*bad\.jsonl line 2: "score" must be a number from 0 to 10, got "ten"\n$/);
    expect(existsSync(out)).toBe(false);
    const noReplay = await mappa(['judge', 'teach', '--judge', JUDGE, '--ratings', ratings, '--out', out]);
    expect(noReplay.stderr).toMatch(/^mappa judge: --replay FILE\|none is required: .*\n$/);
  });

  it('teach: a new version beside the old, named by the hash of its weights', async () => {
    const out = path.join(dir, 'judges');
    const r = await mappa(['judge', 'teach', '--judge', JUDGE, '--ratings', ratings, '--replay', ratings, '--epochs', '2', '--out', out, '--backend', 'wasm']);
    expect(r.code, r.stderr).toBe(0);
    const folder = r.stdout.trim();
    expect(path.basename(folder)).toMatch(/^relay-judge-weak-[0-9a-f]{12}$/);
    const taught = JSON.parse(readFileSync(path.join(folder, 'taught.json'), 'utf8'));
    const weights = createHash('sha256').update(readFileSync(path.join(folder, 'model.safetensors'))).digest('hex');
    expect(taught.hash).toBe(weights);
    expect(path.basename(folder)).toBe(`relay-judge-weak-${weights.slice(0, 12)}`);
    expect(taught.parentHash).toBe(sha(`${JUDGE}/model.safetensors`));
    expect(taught).toMatchObject({ corrections: 6, replayed: 6 });
    expect(readdirSync(out)).toEqual([path.basename(folder)]); // no temporary folder left
    await loadModel(folderSource(folder), { tokenizer: 'required' }); // a coach can load it by path
  }, 300_000);

  it('an interrupted teaching writes nothing and leaves the old judge', async () => {
    const out = path.join(dir, 'interrupted');
    let sent = false;
    const r = await mappa(['judge', 'teach', '--judge', JUDGE, '--ratings', ratings, '--replay', 'none', '--epochs', '3', '--out', out, '--backend', 'wasm'],
      (chunk) => {
        if (!sent && chunk.includes('teaching: step 1/')) {
          sent = true;
          // What Ctrl-C does: the handler `mappa judge teach` installed (called directly, so the test runner's own are left alone).
          (process.listeners('SIGINT').at(-1) as () => void)();
        }
      });
    expect(sent).toBe(true);
    expect(r.code).toBe(130);
    expect(r.stderr).toMatch(/mappa judge: interrupted: nothing written, the old judge is unchanged\n$/);
    expect(existsSync(out) ? readdirSync(out) : []).toEqual([]);
  }, 300_000);
});
