// Import of real math benchmarks from JSONL (one JSON object per line) into math tasks.
//
// Accepted shapes, one per line:
//   MATH-500 / AIME: {"problem": "...", "answer": "\\frac{1}{2}", "solution"?, "level"?, "subject"?, "unique_id"? | "id"?}
//   GSM8K:           {"question": "...", "answer": "worked solution ...\n#### 42"}   -> answer "42", the rest is the solution
//   AMC:             {"problem": "...", "answer": 27.0}                               -> answer "27"
// Malformed lines (bad JSON, not an object, missing problem, missing or empty answer) are skipped
// and reported with their 1-based line number; blank lines are ignored. Nothing is dropped silently.
//
// Not for: generating problems (math.ts) or judging answers (answers.ts). The Node-only file
// loader is a dynamic import so that browser bundles can use parseJsonlDataset on fetched text.
//
// Example:
//   const { tasks, errors } = parseJsonlDataset('{"question":"1+1?","answer":"1+1=2\\n#### 2"}\n{oops', { source: 'gsm8k' });
//   tasks[0]   // { kind: 'math', id: 'gsm8k/1', problem: '1+1?', answer: '2', solution: '1+1=2', source: 'gsm8k' }
//   errors     // [{ line: 2, message: 'invalid JSON: ...' }]

import { extractGsm8kAnswer } from './answers.ts';

/** A math problem imported from a benchmark file. */
export interface DatasetTask {
  kind: 'math';
  /** "<source>/<unique_id | id | line number>". */
  id: string;
  problem: string;
  /** Ground truth as text ("42", "\\frac{1}{2}"); compare with answersEqual. */
  answer: string;
  /** Dataset name, e.g. "math500" (defaults to "dataset"). */
  source: string;
  solution?: string;
  /** Difficulty level when the dataset has one (MATH: 1..5). */
  level?: number;
  subject?: string;
}

export interface DatasetError {
  line: number; // 1-based
  message: string;
}

export interface ParsedDataset {
  tasks: DatasetTask[];
  errors: DatasetError[];
}

/** A number answer as text: integers without ".0" (27.0 -> "27"), others as JavaScript prints them. */
function numberToAnswer(value: number): string | null {
  if (!Number.isFinite(value)) return null;
  return Number.isInteger(value) ? value.toFixed(0) : String(value);
}

/** Parse one already-decoded line into a task, or say what is wrong with it. */
function lineToTask(record: unknown, lineNo: number, source: string): DatasetTask | string {
  if (record === null || typeof record !== 'object' || Array.isArray(record)) {
    return `expected a JSON object, got ${Array.isArray(record) ? 'an array' : JSON.stringify(record)}`;
  }
  const row = record as Record<string, unknown>;
  const problemField = typeof row.problem === 'string' ? 'problem' : typeof row.question === 'string' ? 'question' : null;
  if (!problemField) return `missing field "problem" (or "question") as a string; fields present: ${Object.keys(row).join(', ') || 'none'}`;
  const problem = (row[problemField] as string).trim();
  if (problem === '') return `field "${problemField}" is empty`;

  let answer: string | null;
  let solution = typeof row.solution === 'string' ? row.solution : undefined;
  if (typeof row.answer === 'number') {
    answer = numberToAnswer(row.answer);
    if (answer === null) return `field "answer" is not a finite number (${row.answer})`;
  } else if (typeof row.answer === 'string') {
    if (row.answer.includes('####')) {
      // GSM8K: worked solution, then "#### <final answer>".
      answer = extractGsm8kAnswer(row.answer);
      if (answer === null) return 'field "answer" has "####" but no final answer after it';
      solution ??= row.answer.slice(0, row.answer.lastIndexOf('####')).trim();
    } else answer = row.answer.trim();
    if (answer === '') return 'field "answer" is empty';
  } else if (row.answer === undefined) {
    return 'missing field "answer"';
  } else {
    return `field "answer" must be a string or a number, got ${JSON.stringify(row.answer)}`;
  }

  const rawId = row.unique_id ?? row.id;
  const idPart = typeof rawId === 'string' || typeof rawId === 'number' ? String(rawId) : String(lineNo);
  const task: DatasetTask = { kind: 'math', id: `${source}/${idPart}`, problem, answer, source };
  if (solution !== undefined) task.solution = solution;
  if (typeof row.level === 'number') task.level = row.level;
  if (typeof row.subject === 'string') task.subject = row.subject;
  return task;
}

/** Parse JSONL text into tasks; malformed lines go to `errors` with their 1-based line number.
 *  Handles \n and \r\n line ends and a byte-order mark. Duplicate ids are reported as errors
 *  too (the later line is skipped), since task ids key results and checkpoints. */
export function parseJsonlDataset(text: string, opts: { source?: string } = {}): ParsedDataset {
  const source = opts.source ?? 'dataset';
  const tasks: DatasetTask[] = [];
  const errors: DatasetError[] = [];
  const seenIds = new Map<string, number>();
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  lines.forEach((line, i) => {
    const lineNo = i + 1;
    if (line.trim() === '') return;
    let record: unknown;
    try {
      record = JSON.parse(line);
    } catch (err) {
      errors.push({ line: lineNo, message: `invalid JSON: ${(err as Error).message}` });
      return;
    }
    const result = lineToTask(record, lineNo, source);
    if (typeof result === 'string') {
      errors.push({ line: lineNo, message: result });
      return;
    }
    const earlier = seenIds.get(result.id);
    if (earlier !== undefined) {
      errors.push({ line: lineNo, message: `duplicate id "${result.id}" (first seen on line ${earlier})` });
      return;
    }
    seenIds.set(result.id, lineNo);
    tasks.push(result);
  });
  return { tasks, errors };
}

/** Node only: read a JSONL file and parse it; `source` defaults to the file name without extension.
 *  Errors keep their line numbers; the file path is in `path` for messages. */
export async function loadJsonlDatasetFile(path: string, opts: { source?: string } = {}): Promise<ParsedDataset & { path: string }> {
  const { readFile } = await import('node:fs/promises');
  const text = decodeText(await readFile(path), path);
  const base = path.split(/[\\/]/).pop() ?? path;
  const source = opts.source ?? base.replace(/\.jsonl?$/i, '');
  return { ...parseJsonlDataset(text, { source }), path };
}

/**
 * The bytes of a dataset as text, or an error in one line when they are not UTF-8 text (a model
 * file, an archive or an image given by mistake): NUL bytes or invalid UTF-8 in the first 64 KiB.
 * Example: decodeText(new Uint8Array([0x50, 0x4b, 0x03, 0x04, 0]), 'a.zip') -> Error '"a.zip" is not a text file ...'
 */
function decodeText(bytes: Uint8Array, name: string): string {
  const head = bytes.subarray(0, 1 << 16);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    text = '\0';
  }
  if (head.includes(0) || text.includes('\0')) {
    throw new Error(`"${name}" is not a text file (binary bytes at its start); a dataset is JSONL, one {"problem": ..., "answer": ...} object per line`);
  }
  return text;
}

/** At most this many malformed lines are listed one by one; the rest are counted. */
const LISTED_ERRORS = 10;

/** One line per error, e.g. "math500.jsonl:12: missing field \"answer\"", for CLI output; past LISTED_ERRORS, a count. */
export function formatDatasetErrors(errors: readonly DatasetError[], fileName = 'dataset'): string {
  const listed = errors.slice(0, LISTED_ERRORS).map((e) => `${fileName}:${e.line}: ${e.message}`);
  if (errors.length > LISTED_ERRORS) listed.push(`${fileName}: ... and ${errors.length - LISTED_ERRORS} more malformed lines`);
  return listed.join('\n');
}
