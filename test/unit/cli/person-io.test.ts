/**
 * Tier 3 headless (src/cli/person-io.ts), as `mappa train --tier-person` meets it: a real child process asks
 * two questions; the answers come on its real stdin or in a real file that grows while it waits. A bad line
 * is refused on stderr naming it and the question stays open; a skip is kept as a skip; stdin's end or the
 * wait's end leaves the rest unanswered. The questions land in <out>/questions.jsonl (and on stdout with -).
 */
import { spawn } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../../helpers/webgpu.ts';

const child = path.join(repoRoot, 'test/fixtures/person/ask.ts');

/** Starts the child; `onErr` sees stderr as it comes. Resolves with stdout and stderr when it exits. */
function ask(flag: string, out: string, wait: number, onErr?: (text: string, stdin: NodeJS.WritableStream) => void) {
  const p = spawn(process.execPath, ['--import', 'tsx', child, flag, out, String(wait)], { cwd: repoRoot });
  let stdout = '';
  let stderr = '';
  p.stdout.on('data', (d) => (stdout += d));
  p.stderr.on('data', (d) => {
    stderr += d;
    onErr?.(stderr, p.stdin);
  });
  return { stdin: p.stdin, done: new Promise<{ stdout: string; stderr: string; code: number | null }>((resolve) => p.on('close', (code) => resolve({ stdout, stderr, code }))) };
}
const answersOf = (stdout: string) => JSON.parse(stdout.split('\n').find((l) => l.startsWith('answers: '))!.slice(9));

describe('the person tier headless', () => {
  it('reads stdin: refuses a bad line by number, keeps a score and a skip, prints the questions on stdout', async () => {
    const out = mkdtempSync(path.join(os.tmpdir(), 'person-'));
    let sent = false;
    const c = ask('-', out, 60, (err, stdin) => {
      if (sent || !err.includes('tier 3: waiting')) return;
      sent = true;
      stdin.write('1-0 11\n{"id": "1-0", "score": 7}\n1-3 skip\n');
    });
    const r = await c.done;
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/waiting for a person's answers to 2 questions \(1-0, 1-3; .*\) in stdin: .* at most 60 s \(coach.tiers.personWait\)/);
    expect(r.stderr).toMatch(/stdin line 1: score must be a whole number from 0 to 10, got 11; line refused/);
    expect(answersOf(r.stdout)).toEqual({ '1-0': 7, '1-3': null });
    const asked = r.stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
    expect(asked.map((q) => [q.id, q.tier1, q.tier2, q.role])).toEqual([['1-0', 9, 2, 'solver'], ['1-3', 4, 4, 'checker']]);
    expect(asked[0].why).toMatch(/disagree by 7 points/);
    expect(asked[1].why).toMatch(/audit sample/);
    expect(readFileSync(path.join(out, 'questions.jsonl'), 'utf8').trim().split('\n')).toHaveLength(2);
    expect(r.stderr).toMatch(/tier 3: 1 answered, 1 skipped, 0 unanswered/);
  }, 60_000);

  it('at stdin\'s end a question still open is unanswered at once (no wait)', async () => {
    const out = mkdtempSync(path.join(os.tmpdir(), 'person-'));
    const c = ask('-', out, 600, (err, stdin) => {
      if (err.includes('tier 3: waiting')) stdin.end('1-3 5\n');
    });
    const r = await c.done;
    expect(answersOf(r.stdout)).toEqual({ '1-3': 5 });
    expect(r.stderr).toMatch(/tier 3: 1 answered, 0 skipped, 1 unanswered/);
  }, 60_000);

  it('reads a file as it grows: an answer written before its question counts, a bad line is refused naming file and line', async () => {
    const out = mkdtempSync(path.join(os.tmpdir(), 'person-'));
    const file = path.join(out, 'answers.jsonl');
    writeFileSync(file, '{"id": "1-3", "score": 2}\n{"id": "1-0", "grade": 3}\n');
    let sent = false;
    const c = ask(file, out, 60, (err) => {
      if (sent || !err.includes('tier 3: waiting')) return;
      sent = true;
      appendFileSync(file, '1-0 8\n');
    });
    const r = await c.done;
    expect(r.stderr).toContain(`${file} line 2: unknown key "grade" (known: id, score, skip); line refused`);
    expect(answersOf(r.stdout)).toEqual({ '1-3': 2, '1-0': 8 });
    expect(r.stdout.split('\n').filter((l) => l.startsWith('{'))).toEqual([]); // questions go to the file only
  }, 60_000);

  it('after the stated wait a question still open is unanswered', async () => {
    const out = mkdtempSync(path.join(os.tmpdir(), 'person-'));
    const file = path.join(out, 'answers.jsonl');
    writeFileSync(file, '');
    const r = await ask(file, out, 1).done;
    expect(answersOf(r.stdout)).toEqual({});
    expect(r.stderr).toMatch(/tier 3: 0 answered, 0 skipped, 2 unanswered/);
  }, 60_000);
});
