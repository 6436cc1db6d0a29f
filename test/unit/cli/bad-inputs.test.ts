/**
 * Every bad input is refused before any work starts, in one line that says what is wrong and what
 * to do, and nothing is written to the run folder. The commands run in this process through the
 * CLI's own main() (as bin/mappa.js calls it), with stderr captured; one case also runs as a real
 * process, to show it exits at once.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { main } from '../../../src/cli/main.ts';
import { repoRoot } from '../../helpers/webgpu.ts';
import { relayWorkflow } from '../../../src/core/domains/relay/team.ts';

const dir = mkdtempSync(path.join(os.tmpdir(), 'mappa-bad-'));
const out = path.join(dir, 'run');
const file = (name: string, content: string | Uint8Array) => {
  const p = path.join(dir, name);
  writeFileSync(p, content);
  return p;
};
const relay4 = JSON.parse(readFileSync(path.join(repoRoot, 'configs/relay-4.json'), 'utf8'));
// The shipped config writes its agents once (a repeated agent); the refusal is of the team as loaded, fully written out.
const noTools = { ...relay4, workflow: structuredClone(relayWorkflow(4)) };
delete (noTools.workflow.agents[1] as Partial<(typeof noTools.workflow.agents)[number]>).tools;

/** Runs `mappa ...args` in this process; returns the exit code and what went to stderr. */
async function mappa(...args: string[]): Promise<{ code: number; stderr: string }> {
  let stderr = '';
  const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stderr += String(chunk);
    return true;
  });
  const cwd = process.cwd();
  process.chdir(repoRoot);
  try {
    return { code: await main(args), stderr };
  } finally {
    process.chdir(cwd);
    spy.mockRestore();
  }
}

afterEach(() => {
  expect(existsSync(out), 'nothing is written to the run folder').toBe(false);
});

const cases: [string, () => string[], RegExp][] = [
  ['train --seed abc', () => ['train', '--seed', 'abc', '--out', out], /^mappa train: --seed must be a whole number of at least 0, got "abc"$/],
  ['train --iterations 2.5', () => ['train', '--iterations', '2.5', '--out', out], /^mappa train: --iterations must be a whole number of at least 1, got "2.5"$/],
  ['a NaN coach setting', () => ['train', '--config', file('noise.json', '{"coach": {"miscalibration": {"noise": "lots"}}}'), '--out', out],
    /^mappa train: .*noise\.json: coach\.miscalibration\.noise \(coach noise \(σ of score\)\): must be a number in 0\.\.10, got "lots"$/],
  ['"miscalibration": "very"', () => ['train', '--config', file('very.json', '{"coach": {"miscalibration": "very"}}'), '--out', out],
    /^mappa train: .*very\.json: coach\.miscalibration: must be null or an object with noise, favourAgent, lengthBias, seed, got "very"$/],
  ['an unknown miscalibration key', () => ['train', '--config', file('key.json', '{"coach": {"miscalibration": {"nosie": 1}}}'), '--out', out],
    /coach\.miscalibration\.nosie: unknown key \(known: noise, favourAgent, lengthBias, seed\)$/],
  ['a workflow given as a name', () => ['train', '--config', file('wf.json', '{"workflow": "math-chainz"}'), '--out', out],
    /workflow: must be a team object \{"name", "domain", "agents": \[\.\.\.\]\}, as in configs\/relay-4\.json, got "math-chainz"$/],
  ['an agent without tools', () => ['train', '--config', file('notools.json', JSON.stringify(noTools)), '--out', out],
    /workflow "relay-4", agent 2 \("agent2"\): "tools" is missing; it must be a list of tools \(python, javascript, sql; \[\] for none\)$/],
  ['a negative temperature in a config', () => ['train', '--config', file('temp.json', '{"evalTemperature": -1}'), '--out', out],
    /evalTemperature \(evaluation temperature\): must be a number in 0\.\.10, got -1$/],
  ['an unknown reward mode', () => ['train', '--reward', 'procss', '--out', out], /rewards\.mode \(reward\): must be one of process, outcome, mixed, counterfactual, groups, got "procss"$/],
  ['100,000 prompts an iteration without --yes', () => ['train', '--config', file('big.json', '{"promptsPerIteration": 100000}'), '--out', out],
    /^mappa train: this run makes 200,000 rollouts an iteration \(the default: 24\), about .* an iteration .*: pass --yes to start it$/],
  ['a binary file as a dataset', () => ['train', '--dataset', file('model.jsonl', readFileSync(path.join(repoRoot, 'models/relay/model.safetensors')).subarray(0, 200_000)), '--out', out],
    /^mappa train: --dataset: ".*model\.jsonl" is not a text file \(binary bytes at its start\); a dataset is JSONL, one \{"problem": \.\.\., "answer": \.\.\.\} object per line$/],
  ['--tier-person naming no file', () => ['train', '--coach', 'model', '--tiers', '0.2', '--tier-person', path.join(dir, 'no-answers.jsonl'), '--out', out],
    /^mappa train: --tier-person .*no-answers\.jsonl: no such file; create it \(it may be empty: answers are read as it grows\) or give - for stdin$/],
  ['--tier-person-wait without --tier-person', () => ['train', '--tiers', '0.2', '--tier-person-wait', '30', '--out', out],
    /^mappa train: --tier-person-wait: needs --tier-person FILE or - \(where the person's answers come from\)$/],
  ['a person share in a config with no --tier-person', () => ['train', '--config', file('person.json', '{"coach": {"kind": "model", "tiers": {"person": 0.1}}}'), '--out', out],
    /^mappa train: coach\.tiers\.person: 0\.1 asks a person; give --tier-person FILE or - \(stdin\) for the answers, or set it to 0$/],
  ['a person share above the tier-2 budget', () => ['train', '--coach', 'model', '--tiers', '0.1', '--tier-person', '-', '--tier-person-share', '0.3', '--out', out],
    /coach\.tiers\.person \(share asked of a person \(tier 3\)\): 0\.3 is more than the share escalated to tier 2 \(coach\.tiers\.budget\), 0\.1; .*$/],
  ['generate --max-tokens=-5', () => ['generate', '--model', 'models/relay', '--prompt', 'hi', '--max-tokens=-5'], /^mappa generate: --max-tokens must be a whole number in 1\.\.1048576, got "-5"$/],
  ['generate --max-tokens 2.5', () => ['generate', '--model', 'models/relay', '--prompt', 'hi', '--max-tokens', '2.5'], /--max-tokens must be a whole number/],
  ['generate --temperature=-1', () => ['generate', '--model', 'models/relay', '--prompt', 'hi', '--temperature=-1'], /^mappa generate: --temperature must be a number of at least 0, got "-1"$/],
  ['generate --top-p 2', () => ['generate', '--model', 'models/relay', '--prompt', 'hi', '--top-p', '2'], /--top-p must be a number in .*\.\.1, got "2"$/],
  ['eval --adapters with no agent folders', () => {
    mkdirSync(path.join(dir, 'empty'), { recursive: true });
    return ['eval', '--adapters', path.join(dir, 'empty')];
  }, /^mappa eval: --adapters: ".*empty" holds no adapter for any agent of this team \(expected solver\/adapter_config\.json, executor\/adapter_config\.json, verifier\/adapter_config\.json\) \(mappa train writes them under <out>\/adapters\)$/],
];

describe('bad inputs are refused before any work, in one line', () => {
  it.each(cases)('%s', async (_name, args, message) => {
    const r = await mappa(...args());
    expect(r.code).toBe(2);
    const lines = r.stderr.trim().split('\n');
    expect(lines, r.stderr).toHaveLength(1);
    expect(lines[0]).toMatch(message);
    expect(r.stderr).not.toMatch(/^backend:/m); // refused before the backend started
  });

  it('bench (a child process): a bad shape ends in its one line, not the child\'s reason and a second line', async () => {
    const r = await mappa('bench', '--shapes', 'nope');
    expect(r.code).not.toBe(0);
    const lines = r.stderr.trim().split('\n');
    expect(lines, r.stderr).toHaveLength(1);
    expect(lines[0]).toMatch(/^mappa bench: bench machine: unknown shape "nope"; use one of smollm2-135m, qwen2.5-0.5b$/);
  }, 300_000);

  it('as a real process: train --seed abc exits 2 before any work', async () => {
    const err = await promisify(execFile)(process.execPath, [path.join(repoRoot, 'bin/mappa.js'), 'train', '--seed', 'abc', '--out', out], { cwd: repoRoot })
      .catch((e: { code: number; stderr: string }) => e);
    expect((err as { code: number }).code).toBe(2);
    expect((err as { stderr: string }).stderr).toBe('mappa train: --seed must be a whole number of at least 0, got "abc"\n');
    // "At once" as an order, not a time (a busy machine stretches that): refused before the run folder was made.
    expect(existsSync(out)).toBe(false);
  }, 300_000);
});
