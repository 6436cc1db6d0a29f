import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { answersEqual, extractBoxed, normalizeAnswer } from '../../../src/core/tasks/answers.ts';
import { formatDatasetErrors, loadJsonlDatasetFile, parseJsonlDataset } from '../../../src/core/tasks/dataset.ts';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const datasetsDir = path.resolve(repoRoot, '../shared/datasets');
const haveDatasets = existsSync(path.join(datasetsDir, 'math500.jsonl'));
if (!haveDatasets) console.warn(`dataset.test: skipping the real-file tests: ${datasetsDir} is absent (needs gsm8k_test/math500/aime24/amc23 .jsonl)`);

describe('parseJsonlDataset: accepted shapes', () => {
  it('reads problem/answer, GSM8K question + "####" answers and numeric answers', () => {
    const text = [
      JSON.stringify({ problem: 'What is $1+1$?', answer: '2', solution: '$1+1=\\boxed{2}$', level: 1, subject: 'Algebra', unique_id: 'test/a/1.json' }),
      JSON.stringify({ question: 'Tom has 3 apples and buys 4. How many?', answer: '3 + 4 = <<3+4=7>>7\n#### 7' }),
      '{"id":0,"problem":"AMC style","answer":27.0}',
      '{"id":1,"problem":"non-integer","answer":2.5}',
    ].join('\n');
    const { tasks, errors } = parseJsonlDataset(text, { source: 'mini' });
    expect(errors).toEqual([]);
    expect(tasks).toEqual([
      { kind: 'math', id: 'mini/test/a/1.json', problem: 'What is $1+1$?', answer: '2', source: 'mini', solution: '$1+1=\\boxed{2}$', level: 1, subject: 'Algebra' },
      { kind: 'math', id: 'mini/2', problem: 'Tom has 3 apples and buys 4. How many?', answer: '7', source: 'mini', solution: '3 + 4 = <<3+4=7>>7' },
      { kind: 'math', id: 'mini/0', problem: 'AMC style', answer: '27', source: 'mini' },
      { kind: 'math', id: 'mini/1', problem: 'non-integer', answer: '2.5', source: 'mini' },
    ]);
  });

  it('ignores blank lines, CRLF line ends and a byte-order mark; default source is "dataset"', () => {
    const text = '\uFEFF{"problem":"a","answer":"1"}\r\n\r\n   \r\n{"problem":"b","answer":"2"}\r\n';
    const { tasks, errors } = parseJsonlDataset(text);
    expect(errors).toEqual([]);
    expect(tasks.map((t) => [t.id, t.answer])).toEqual([['dataset/1', '1'], ['dataset/4', '2']]);
  });
});

describe('parseJsonlDataset: malformed lines are reported with 1-based line numbers', () => {
  it('skips and reports each kind of error, keeping the good lines', () => {
    const lines = [
      '{"problem":"ok","answer":"1"}', // 1 ok
      '{"problem":"bad json","answer":', // 2
      '', // 3 blank: ignored
      '{"answer":"5"}', // 4 no problem
      '{"problem":"no answer"}', // 5
      '{"problem":"empty answer","answer":"  "}', // 6
      '[1,2,3]', // 7 not an object
      '{"question":"gsm8k without final","answer":"work\\n#### "}', // 8
      '{"problem":"object answer","answer":{"x":1}}', // 9
      '{"problem":"","answer":"3"}', // 10 empty problem
      '{"id":7,"problem":"dup A","answer":"1"}', // 11 ok
      '{"id":7,"problem":"dup B","answer":"2"}', // 12 duplicate id
      '{"problem":"ok too","answer":"0"}', // 13 ok
    ];
    const { tasks, errors } = parseJsonlDataset(lines.join('\n'), { source: 'broken' });
    expect(tasks.map((t) => t.problem)).toEqual(['ok', 'dup A', 'ok too']);
    expect(errors.map((e) => e.line)).toEqual([2, 4, 5, 6, 7, 8, 9, 10, 12]);
    const message = (line: number) => errors.find((e) => e.line === line)!.message;
    expect(message(2)).toMatch(/invalid JSON/);
    expect(message(4)).toMatch(/missing field "problem" \(or "question"\).*answer/);
    expect(message(5)).toMatch(/missing field "answer"/);
    expect(message(6)).toMatch(/"answer" is empty/);
    expect(message(7)).toMatch(/expected a JSON object, got an array/);
    expect(message(8)).toMatch(/no final answer after it/);
    expect(message(9)).toMatch(/must be a string or a number/);
    expect(message(10)).toMatch(/"problem" is empty/);
    expect(message(12)).toMatch(/duplicate id "broken\/7" \(first seen on line 11\)/);
    expect(formatDatasetErrors(errors.slice(0, 1), 'broken.jsonl')).toMatch(/^broken\.jsonl:2: invalid JSON/);
  });
});

describe.skipIf(!haveDatasets)('real benchmark files in ../shared/datasets', () => {
  const load = (name: string) => loadJsonlDatasetFile(path.join(datasetsDir, `${name}.jsonl`));
  const lineCount = (name: string) => readFileSync(path.join(datasetsDir, `${name}.jsonl`), 'utf8').split('\n').filter((l) => l.trim()).length;

  it('gsm8k_test: 1319 problems, every final answer an integer', async () => {
    const { tasks, errors } = await load('gsm8k_test');
    expect(errors).toEqual([]);
    expect(tasks).toHaveLength(1319);
    expect(lineCount('gsm8k_test')).toBe(1319);
    expect(tasks[0].answer).toBe('18'); // Janet's ducks
    for (const t of tasks) expect(normalizeAnswer(t.answer)).toMatch(/^-?\d+$/);
    expect(tasks.every((t) => t.solution && !t.solution.includes('####'))).toBe(true);
  });

  it('math500: 500 problems, and the boxed answer of the reference solution matches the answer field', async () => {
    const { tasks, errors } = await load('math500');
    expect(errors).toEqual([]);
    expect(tasks).toHaveLength(500);
    expect(tasks.every((t) => t.level !== undefined && t.level >= 1 && t.level <= 5)).toBe(true);
    const agree = tasks.filter((t) => answersEqual(extractBoxed(t.solution ?? ''), t.answer)).length;
    const share = agree / tasks.length;
    console.info(`math500: extractBoxed(solution) equals the answer field for ${agree}/500 (${(100 * share).toFixed(1)} %)`);
    expect(share).toBeGreaterThanOrEqual(0.95);
  });

  it('aime24: 30 problems, answers are integers 0..999 as AIME requires', async () => {
    const { tasks, errors } = await load('aime24');
    expect(errors).toEqual([]);
    expect(tasks).toHaveLength(30);
    for (const t of tasks) {
      expect(t.answer).toMatch(/^\d{1,3}$/);
    }
    expect(tasks[0]).toMatchObject({ id: 'aime24/60', answer: '204' }); // Aya's walk
  });

  it('amc23: 40 problems, float answers become integers ("27.0" -> "27")', async () => {
    const { tasks, errors } = await load('amc23');
    expect(errors).toEqual([]);
    expect(tasks).toHaveLength(40);
    expect(tasks[0]).toMatchObject({ id: 'amc23/0', answer: '27' }); // Alicia and Beth meet 27 miles from A
    expect(answersEqual(tasks[0].answer, '27.0')).toBe(true);
  });
});
