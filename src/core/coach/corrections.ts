/**
 * Rated actions: a person's (or a simulated person's) verdict on one action, as the judge reads it.
 * One JSON object a line (JSONL), so that corrections can be exported, imported, concatenated and
 * taught from (teach.ts), and held-out ones can rank a judge (`mappa judge rank`).
 *
 * For: the file format and its reader, which refuses a bad file in one line naming the line.
 * Not for: choosing which actions to ask about (uncertainty.ts) or teaching (teach.ts).
 *
 * A line (keys in this order when written; `prompt` is the coach prompt rendered in the judge's
 * template, exactly what the judge reads):
 *   {"prompt": "Agent 2 replied \"7\".\n...\n3 + 4", "score": 10, "by": "person", "group": "4:agent2"}
 * Keys:
 *   prompt   string, required: the coach prompt in the judge's template
 *   score    number 0..10, required: the verdict (PROCESS_SCORE)
 *   correct  0 | 1 | true | false, optional: ANSWER_CORRECT for the final agent
 *   answer   string, optional: the whole answer to teach (e.g. with the judge's scratchpad); absent: the
 *            judge's own answer with its score line replaced by this verdict
 *   by       string, optional: who rated ("person", or "rubric (simulated person)"); default "person"
 *   group    string, optional: actions that may be compared for ranking (one agent of one team size)
 *   was      number, optional: the judge's score before the correction (kept for the record)
 *   why      string, optional: why the action was asked about (uncertainty.ts)
 * Example: parseRatings('{"prompt":"p","score":11}\n', 'r.jsonl')
 *            -> throws 'r.jsonl line 1: "score" must be a number from 0 to 10, got 11'
 */
import { wilson, type Interval } from '../stats/intervals.ts';

export interface RatedAction {
  prompt: string;
  score: number;
  correct?: boolean;
  answer?: string;
  by: string;
  group?: string;
  was?: number;
  why?: string;
}

/** Who the simulated person is, in the words every record and report uses. */
export const SIMULATED_RATER = 'rubric (simulated person)';

const KEYS = new Set(['prompt', 'score', 'correct', 'answer', 'by', 'group', 'was', 'why']);

/** One line's object as a RatedAction, or the reason it is not one. */
function readLine(o: unknown): RatedAction | string {
  if (typeof o !== 'object' || o === null || Array.isArray(o)) return 'is not a JSON object';
  const r = o as Record<string, unknown>;
  const unknown = Object.keys(r).filter((k) => !KEYS.has(k));
  if (unknown.length) return `has an unknown key "${unknown[0]}" (keys: ${[...KEYS].join(', ')})`;
  if (typeof r.prompt !== 'string' || !r.prompt.trim()) return 'needs "prompt", the coach prompt in the judge\'s template, as a non-empty string';
  if (r.score === null) return 'has no verdict yet: fill in "score" (0 to 10)';
  if (typeof r.score !== 'number' || !(r.score >= 0 && r.score <= 10)) return `"score" must be a number from 0 to 10, got ${JSON.stringify(r.score)}`;
  const out: RatedAction = { prompt: r.prompt, score: r.score, by: 'person' };
  if (r.correct !== undefined) {
    if (![0, 1, true, false].includes(r.correct as number | boolean)) return `"correct" must be 0, 1, true or false, got ${JSON.stringify(r.correct)}`;
    out.correct = r.correct === 1 || r.correct === true;
  }
  for (const k of ['answer', 'by', 'group', 'why'] as const) {
    if (r[k] === undefined) continue;
    if (typeof r[k] !== 'string') return `"${k}" must be a string, got ${JSON.stringify(r[k])}`;
    out[k] = r[k] as string;
  }
  if (out.answer !== undefined && !/PROCESS_SCORE\s*:\s*\d/.test(out.answer)) return '"answer" must hold a "PROCESS_SCORE: <n>" line';
  if (r.was !== undefined && r.was !== null) {
    if (typeof r.was !== 'number') return `"was" must be a number, got ${JSON.stringify(r.was)}`;
    out.was = r.was;
  }
  return out;
}

/**
 * Reads a rated-action file. Blank lines are skipped; anything else that is not a rated action stops
 * the reading with one line: `<file> line <n>: <what is wrong>`. An empty file is refused too.
 */
export function parseRatings(text: string, file: string): RatedAction[] {
  const out: RatedAction[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (!line) continue;
    let o: unknown;
    try {
      o = JSON.parse(line);
    } catch (e) {
      throw new Error(`${file} line ${i + 1}: not JSON (${(e as Error).message}); a rating file holds one rated action a line`);
    }
    const r = readLine(o);
    if (typeof r === 'string') throw new Error(`${file} line ${i + 1}: ${r}`);
    out.push(r);
  }
  if (!out.length) throw new Error(`${file}: no rated actions (one JSON object a line, with "prompt" and "score")`);
  return out;
}

/** Rated actions as JSONL text (one a line, ending in a newline), readable by parseRatings. */
export function formatRatings(rs: readonly RatedAction[]): string {
  return rs.map((r) => JSON.stringify({
    prompt: r.prompt, score: r.score, ...(r.correct === undefined ? {} : { correct: r.correct ? 1 : 0 }),
    ...(r.answer === undefined ? {} : { answer: r.answer }), by: r.by, ...(r.group === undefined ? {} : { group: r.group }),
    ...(r.was === undefined ? {} : { was: r.was }), ...(r.why === undefined ? {} : { why: r.why }),
  }) + '\n').join('');
}

/**
 * `k` folds of rated actions for held-out agreement, seeded by position: action i goes to fold i mod k
 * after a fixed shuffle (`order`, a permutation of the indices). Returns, per fold, the indices held out.
 * Example: folds(5, 2, [4, 0, 3, 1, 2]) -> [[4, 3, 2], [0, 1]]
 */
export function folds(n: number, k: number, order: readonly number[]): number[][] {
  if (order.length !== n) throw new Error(`folds: order has ${order.length} indices for ${n} actions`);
  const out: number[][] = Array.from({ length: k }, () => []);
  order.forEach((idx, pos) => out[pos % k].push(idx));
  return out;
}

export interface Ranking {
  /** Pairs within a group whose ratings differ, and those the judge orders the same way (ties count half). */
  pairs: number;
  concordant: number;
  /** concordant / pairs with its Wilson 95 % interval (pairs that share an action are not independent: a little narrow). */
  interval: Interval;
}

/**
 * The judge's ranking of rated actions: within each group (no group: all one group), every pair the
 * rater scores differently, ordered by the judge as by the rater. Example: rankAgainst([0, 10, 10],
 * [2, 9, 1], ['a', 'a', 'a']) -> pairs 2, concordant 1 (0 < 10 but 2 > 1), 50.0 % [9.5, 90.5]
 */
export function rankAgainst(rater: readonly number[], judge: readonly number[], group?: readonly (string | undefined)[]): Ranking {
  const groups = new Map<string, number[]>();
  rater.forEach((_, i) => {
    const g = group?.[i] ?? '';
    groups.set(g, [...(groups.get(g) ?? []), i]);
  });
  let pairs = 0;
  let concordant = 0;
  for (const idx of groups.values()) {
    for (let a = 0; a < idx.length; a++) {
      for (let b = a + 1; b < idx.length; b++) {
        const [i, j] = [idx[a], idx[b]];
        if (rater[i] === rater[j]) continue;
        pairs++;
        const d = judge[i] - judge[j];
        if (d === 0) concordant += 0.5;
        else if (Math.sign(d) === Math.sign(rater[i] - rater[j])) concordant++;
      }
    }
  }
  return { pairs, concordant, interval: wilson(concordant, pairs) };
}

/**
 * A careless person: `round(fraction x n)` of the verdicts turned to the opposite end of the scale
 * (score s -> 10 - s; a middling 5 goes to 0 or 10, a coin's choice), ANSWER_CORRECT turned over with
 * it; the others unchanged. Which verdicts are flipped is a seeded draw (`shuffle`, e.g. Rng.shuffle),
 * so that 10 % and 20 % of the same corrections are compared, and `by` says so.
 * Example: carelessVerdicts([{score: 10, correct: true, ...}, {score: 0, ...}], 0.5, identity, () => 0)
 *            -> the first becomes {score: 0, correct: false, by: '... (careless: 50 % flipped)'}, the second stays
 */
export function carelessVerdicts(rs: readonly RatedAction[], fraction: number, shuffle: (xs: number[]) => number[],
  coin: () => number): RatedAction[] {
  if (!(fraction >= 0 && fraction <= 1)) throw new Error(`carelessVerdicts: the fraction flipped must be from 0 to 1, got ${fraction}`);
  if (fraction === 0) return rs.slice();
  const flip = new Set(shuffle(rs.map((_, i) => i)).slice(0, Math.round(fraction * rs.length)));
  const by = (r: RatedAction) => `${r.by} (careless: ${Math.round(fraction * 100)} % flipped)`;
  return rs.map((r, i) => {
    if (!flip.has(i)) return { ...r, by: by(r) };
    const score = r.score === 5 ? (coin() < 0.5 ? 0 : 10) : 10 - r.score;
    return { ...r, score, ...(r.correct === undefined ? {} : { correct: !r.correct }), by: by(r) };
  });
}
