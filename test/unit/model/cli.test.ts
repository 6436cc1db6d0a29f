/**
 * The `mappa` command as a user runs it (a child process through bin/mappa.js): forward prints
 * nothing but the JSON logits (equal to transformers'), adapters and merges agree, errors go to
 * stderr with a non-zero exit code.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { PARITY, maxAbsDiff, readReference } from '../../helpers/fixtures.ts';
import { repoRoot } from '../../helpers/webgpu.ts';

const run = promisify(execFile);
async function mappa(args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  try {
    const r = await run(process.execPath, [path.join(repoRoot, 'bin/mappa.js'), ...args], { cwd: repoRoot, maxBuffer: 64 << 20 });
    return { ...r, code: 0 };
  } catch (e) {
    const x = e as { stdout: string; stderr: string; code: number };
    return { stdout: x.stdout, stderr: x.stderr, code: x.code };
  }
}

describe('mappa CLI', () => {
  it('forward prints only {"logits": ...} and matches transformers', async () => {
    const ref = readReference('llama');
    const r = await mappa(['forward', '--model', path.join(PARITY, 'llama'), '--ids', ref.cases.short.input_ids.join(','), '--backend', 'cpu']);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(Object.keys(out)).toEqual(['logits']);
    expect(maxAbsDiff(out.logits, ref.cases.short.logits)).toBeLessThan(1e-4);
    expect(r.stderr).toMatch(/backend: cpu/);
  }, 300_000);

  it('forward --adapter equals the merged model from mappa merge', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'mappa-merge-'));
    const merged = await mappa(['merge', '--model', path.join(PARITY, 'qwen2'), '--adapter', path.join(PARITY, 'qwen2_lora'), '--out', dir, '--backend', 'cpu']);
    expect(merged.code).toBe(0);
    const a = JSON.parse((await mappa(['forward', '--model', path.join(PARITY, 'qwen2'), '--adapter', path.join(PARITY, 'qwen2_lora'), '--ids', '1,5,9', '--backend', 'cpu'])).stdout);
    const b = JSON.parse((await mappa(['forward', '--model', dir, '--ids', '1,5,9', '--backend', 'cpu'])).stdout);
    expect(maxAbsDiff(a.logits, b.logits)).toBeLessThan(1e-4);
  }, 300_000);

  it('errors go to stderr with a non-zero exit and say what to do', async () => {
    const badIds = await mappa(['forward', '--model', path.join(PARITY, 'llama'), '--ids', '1,x']);
    expect(badIds.code).not.toBe(0);
    expect(badIds.stdout).toBe('');
    expect(badIds.stderr).toMatch(/--ids: item 2 \("x"\) is not a non-negative integer/);
    const noTok = await mappa(['generate', '--model', path.join(PARITY, 'llama'), '--prompt', 'hi', '--backend', 'cpu']);
    expect(noTok.code).not.toBe(0);
    expect(noTok.stderr).toMatch(/tokenizer\.json/);
    const outOfVocab = await mappa(['forward', '--model', path.join(PARITY, 'llama'), '--ids', '1,500', '--backend', 'cpu']);
    expect(outOfVocab.stderr).toMatch(/outside the vocabulary \[0, 97\)/);
    const unknown = await mappa(['fly']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/unknown command "fly"/);
  }, 300_000);
});
