/**
 * Tier 3 of a coach in tiers: a person (MAPPA's "human-in-the-loop correction of edge cases"). Of the
 * actions tier 2 scored in an iteration, the person is asked about those where tier 1 and tier 2
 * disagree most (|tier-1 score - tier-2 score|, largest first; ties by the action's place in the
 * batch), at most `round(person x n)` of the iteration's n actions (`coach.tiers.person`, a share;
 * 0: tier 3 off). Where the two agree on all of them, the ones asked are a sample for audit.
 *
 * The run waits for the answers, at most `coach.tiers.personWait` seconds an iteration; a question
 * skipped, or still open when the wait ends (or when the person's channel closes: stdin's end), is
 * unanswered and tier 2's score stands. An answer replaces tier 2's score (`tier: 3`), is kept as a
 * correction (by "person") and teaches tier 1 in place of tier 2's answer on the same action.
 *
 * An answer is one line: JSON `{"id": "3-5", "score": 7}` or `{"id": "3-5", "skip": true}`, or the
 * short form `3-5 7` / `3-5 skip`. The id is `<batch>-<index>`: the coach's batch (one an iteration:
 * the run's iteration, a resumed run's too) and the action's index in it, so a teacher can write answers
 * before they are asked. A line that is not an answer is refused with the reason (the caller names
 * the line); an id answered twice keeps the first.
 *
 * For: tiered-coach.ts (the asking), the CLI's file and stdin person (src/cli/person-io.ts), the page's
 * cards (src/core/lab/person-cards.ts). Not for: which actions tier 2 scores (escalation.ts).
 *
 * Example: pickForPerson([0, 2], [3, 9, 8], [3, 1], 0.5, 3) -> [2, 0]   (k = 2; action 2 disagrees by 7, action 0 by 0)
 *          parseAnswerLine('{"id": "3-5", "score": 7}') -> {id: '3-5', score: 7}
 *          parseAnswerLine('3-5 skip') -> {id: '3-5', score: null}
 *          parseAnswerLine('3-5 11') -> {error: 'score must be a whole number from 0 to 10, got 11'}
 */
import type { ActionContext } from './coach-format.ts';
import type { ChainPlace } from './coach.ts';
import { escalationCount } from './escalation.ts';

/** What the person is asked about one action. */
export interface PersonQuestion {
  /** `<batch>-<index>` (see the file's comment). */
  id: string;
  batch: number;
  index: number;
  /** The action's chain (trajectory) in the batch and its step in the chain (null: not known). */
  chain: number | null;
  step: number | null;
  role: string;
  agentId: string;
  problem: string;
  input: string;
  output: string;
  observation?: string;
  groundTruth?: string;
  /** The two tiers' scores (0..10). */
  tier1: number;
  tier2: number;
  why: string;
}

/** The person's answers, by question id: a score 0..10, or null (skipped). A question without an entry is unanswered. */
export type PersonAnswers = Map<string, number | null>;

/** Where tier 3's answers come from: a file or stdin (the CLI), the page's cards (the lab). */
export interface Person {
  /** How the run names it in its waiting line, e.g. "answers.jsonl" or "stdin" or "the page's cards". */
  readonly name: string;
  /** Asks; resolves when every question has an answer (or a skip), or after `waitSeconds` with those given. */
  ask(questions: PersonQuestion[], waitSeconds: number): Promise<PersonAnswers>;
}

/** Who tier 3 is, in every correction it leaves. */
export const PERSON_RATER = 'person';

/**
 * The indices (of the batch) to ask the person about: of `picks` (those tier 2 scored; `tier2[j]` is tier 2's score of `picks[j]`), the ones
 * where tiers 1 and 2 disagree most, at most round(share x n). Example: pickForPerson([0, 2], [3, 9, 8], [3, 1], 0.5, 3) -> [2, 0]
 */
export function pickForPerson(picks: readonly number[], tier1: readonly number[], tier2: readonly number[], share: number, n: number): number[] {
  const k = Math.min(picks.length, escalationCount(n, share));
  const gap = (j: number) => Math.abs(tier1[picks[j]] - tier2[j]);
  return picks.map((_, j) => j).sort((a, b) => gap(b) - gap(a) || picks[a] - picks[b]).slice(0, k).map((j) => picks[j]);
}

/** The question for action `index` of batch `batch` (tier 2 scored it; the person may overrule). */
export function personQuestion(batch: number, index: number, a: ActionContext, place: ChainPlace | undefined, tier1: number, tier2: number): PersonQuestion {
  const gap = Math.abs(tier1 - tier2);
  return {
    id: `${batch}-${index}`, batch, index, chain: place?.chain ?? null, step: place?.step ?? null, role: a.role, agentId: a.agentId,
    problem: a.problem, input: a.input, output: a.output,
    ...(a.observation !== undefined ? { observation: a.observation } : {}), ...(a.groundTruth !== undefined ? { groundTruth: a.groundTruth } : {}),
    tier1, tier2,
    why: gap > 0 ? `Asked because the small judge (${tier1}) and the stronger coach (${tier2}) disagree by ${gap} points.`
      : `Asked as an audit sample: the small judge and the stronger coach agree (${tier1}).`,
  };
}

/** One line of answers parsed, or why it is refused. */
export function parseAnswerLine(line: string): { id: string; score: number | null } | { error: string } {
  const text = line.trim();
  let id: unknown;
  let score: unknown;
  let skip = false;
  if (text.startsWith('{')) {
    let o: Record<string, unknown>;
    try {
      o = JSON.parse(text) as Record<string, unknown>;
    } catch {
      return { error: 'not JSON; write {"id": "<batch>-<index>", "score": 0..10} or {"id": ..., "skip": true}' };
    }
    const extra = Object.keys(o).filter((k) => !['id', 'score', 'skip'].includes(k));
    if (extra.length) return { error: `unknown key "${extra[0]}" (known: id, score, skip)` };
    ({ id, score } = o);
    if (o.skip !== undefined && o.skip !== true) return { error: `skip must be true, got ${JSON.stringify(o.skip)}` };
    skip = o.skip === true;
  } else {
    const parts = text.split(/\s+/);
    if (parts.length !== 2) return { error: 'write "<batch>-<index> <score 0..10 | skip>" or a JSON line' };
    id = parts[0];
    if (parts[1] === 'skip') skip = true;
    else score = /^-?\d+(\.\d+)?$/.test(parts[1]) ? Number(parts[1]) : parts[1];
  }
  if (typeof id !== 'string' || !/^\d+-\d+$/.test(id)) return { error: `id must be "<batch>-<index>" as the question gives it, got ${JSON.stringify(id)}` };
  if (skip && score !== undefined) return { error: 'give a score or skip, not both' };
  if (skip) return { id, score: null };
  if (typeof score !== 'number' || !Number.isInteger(score) || score < 0 || score > 10) {
    return { error: `score must be a whole number from 0 to 10, got ${JSON.stringify(score ?? null)}` };
  }
  return { id, score };
}

/**
 * The answers a line source has given (a file read as it grows, stdin, the page's cards): lines are
 * offered as they come (before or after their question), and `wait` resolves for a set of questions.
 * Example: const b = new AnswerBoard(); b.offer('1-0 7'); await b.wait(['1-0'], 60) -> Map {'1-0' => 7}
 */
export class AnswerBoard {
  private readonly answers = new Map<string, number | null>();
  private readonly listeners = new Set<() => void>();
  private closed = false;

  /** Takes one line; returns why it is refused (null: taken). A blank line is ignored. */
  offer(line: string): string | null {
    if (!line.trim()) return null;
    const a = parseAnswerLine(line);
    if ('error' in a) return a.error;
    if (this.answers.has(a.id)) return `question ${a.id} is answered already (the first answer stands)`;
    this.answers.set(a.id, a.score);
    this.listeners.forEach((l) => l());
    return null;
  }

  /** The source ended: every question still open (now or later) is unanswered at once. */
  close(): void {
    this.closed = true;
    this.listeners.forEach((l) => l());
  }

  /** Whether question `id` has an answer (or a skip). */
  has(id: string): boolean {
    return this.answers.has(id);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** The answers to `ids` once each has one, or after `seconds` (or at the source's end) with those given. */
  wait(ids: readonly string[], seconds: number): Promise<PersonAnswers> {
    const given = () => new Map(ids.filter((id) => this.answers.has(id)).map((id) => [id, this.answers.get(id)!]));
    return new Promise((resolve) => {
      const check = () => {
        if (!this.closed && ids.some((id) => !this.answers.has(id))) return;
        finish();
      };
      const timer = setTimeout(() => finish(), seconds * 1000);
      const finish = () => {
        clearTimeout(timer);
        this.listeners.delete(check);
        resolve(given());
      };
      this.listeners.add(check);
      check();
    });
  }
}
