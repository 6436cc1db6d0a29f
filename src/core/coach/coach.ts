/**
 * Coaches: every action of every agent gets a process score 0..10 (MAPPA section 3).
 *
 * For: the `Coach` interface and its backends — a model in the project's engine (e.g. the
 * shipped tiny judge), a rule-based verifier, a noisy/biased wrapper to show what a
 * miscalibrated judge does — plus the content cache and the format-repair retry.
 * Not for: rewards (rewards.ts). The WebLLM coach lives with the browser code.
 *
 * Failure policy: an unparsable answer is asked again once with a format reminder; if that
 * fails too the score is the neutral 5 and `ok` is false (counted in the metrics).
 * Example: const coach = cachedCoach(new ModelCoach(judge));
 *          const [r] = await coach.scoreBatch([ctx]);  // {score: 7, ok: true, raw: 'PROCESS_SCORE: 7', attempts: 1}
 */
import { alikeBatches, generate } from '../engine/model/generate.ts';
import { stopTokenIds, type LoadedModel } from '../engine/model/load.ts';
import { Rng } from '../stats/rng.ts';
import { coachPrompt, DEFAULT_COACH_TEMPLATE, FORMAT_REMINDER, NEUTRAL_SCORE, parseCoachAnswer, type ActionContext } from './coach-format.ts';

export interface CoachResult {
  score: number;
  correct?: boolean;
  /** Why, in one line, where the coach says (the rubric does; a judge model's answer is in `raw`). */
  reason?: string;
  raw: string;
  ok: boolean;
  attempts: number;
  cached?: boolean;
  /** Which tier of a tiered coach scored it (1: the small judge, 2: the stronger coach, 3: a person); absent with one coach. */
  tier?: number;
}

/** Where an action sits: its chain (trajectory) in the batch, its step in the chain, whether the chain's answer was wrong. */
export interface ChainPlace {
  chain: number;
  step: number;
  failed: boolean;
}

/** What a tiered coach did in its last batch (one iteration): the run's record keeps it (coach/tiered-coach.ts). */
export interface TierRecord {
  /** Actions each tier scored: [tier 1, tier 2], and tier 3 (a person) when one is asked. */
  scored: number[];
  /** Tier 3 (person-tier.ts): the questions asked this iteration, those answered with a score, those skipped, and the seconds waited. */
  person?: { asked: number; answered: number; skipped: number; seconds: number };
  /** The tier-1 judge that scored this iteration: its folder, or `taught:<name>-<12 hex of its weights' sha-256>`. */
  judge: string;
  /** Tier-2 answers kept as corrections so far, and those not yet taught. */
  corrections: number;
  pending: number;
  /** A teaching this iteration's answers set off: the version it made (it scores from the next iteration) and its seconds. */
  taught?: { judge: string; corrections: number; seconds: number; loss: [number, number] };
}

export interface Coach {
  readonly name: string;
  /** `places`: each action's chain and step (a tiered coach escalating by the first wrong step reads them; others ignore them). */
  scoreBatch(actions: ActionContext[], places?: readonly ChainPlace[]): Promise<CoachResult[]>;
  /** A tiered coach's record of its last batch. */
  tierRecord?(): TierRecord;
  /** A run resumed after `iteration` iterations: the next batch is iteration `iteration + 1` (a tiered coach's question ids). */
  resumeAt?(iteration: number): void;
}

/** Answers a ModelCoach keeps (about 60 MB of relay prompts at most). */
const ANSWER_MEMO = 200_000;

/**
 * A judge model in the project's engine, greedy (temperature 0), stateless. Its answer may run to
 * the judge folder's own `max_new_tokens` (generation_config.json; 16 when it says none): a judge
 * that works a step out before scoring it needs more than the bare score line.
 */
export class ModelCoach implements Coach {
  readonly name: string;
  constructor(readonly judge: LoadedModel, readonly template = DEFAULT_COACH_TEMPLATE, readonly maxTokens = judge.generation.maxNewTokens ?? 16,
    readonly maxBatch = 16) {
    if (!judge.tokenizer) throw new Error(`${judge.source.name}: the judge needs a tokenizer and a chat template`);
    this.name = `model:${judge.source.name}`;
  }

  /**
   * Answers by conversation text: greedy decoding of fixed weights is a function of the prompt, so a
   * prompt this coach has answered is not run again (a relay agent meets the same 90 input cells
   * every iteration; the judge reads the input and the reply, not the task). Bounded: the oldest
   * answers go first past ANSWER_MEMO entries.
   */
  private readonly answers = new Map<string, string>();
  /** Prompts asked, and those the judge actually ran (the rest were answered from memory). */
  asked = 0;
  generated = 0;

  private async ask(prompts: string[][]): Promise<string[]> {
    const tok = this.judge.tokenizer!;
    const keys = prompts.map((turns) => turns.join('\u0000'));
    const todo = [...new Set(keys.filter((k) => !this.answers.has(k)))];
    const turnsOf = new Map(keys.map((k, i) => [k, prompts[i]]));
    const ids = todo.map((k) =>
      tok.encodeChat(turnsOf.get(k)!.map((content, j) => ({ role: j % 2 === 0 ? 'user' : 'assistant', content })), { addGenerationPrompt: true }));
    const fresh = new Map<string, string>();
    for (const batch of alikeBatches(ids, this.maxBatch)) {
      const gens = await generate(this.judge.model, batch.map((i) => ids[i]), {
        maxNewTokens: this.maxTokens, temperature: 0, eosTokenIds: stopTokenIds(this.judge),
      });
      gens.forEach((g, j) => fresh.set(todo[batch[j]], tok.decode(g.tokens, { skipSpecialTokens: true })));
    }
    const out = keys.map((k) => fresh.get(k) ?? this.answers.get(k)!);
    for (const [k, a] of fresh) {
      this.answers.set(k, a);
      if (this.answers.size > ANSWER_MEMO) this.answers.delete(this.answers.keys().next().value!);
    }
    this.asked += keys.length;
    this.generated += todo.length;
    return out;
  }

  scoreBatch(actions: ActionContext[]): Promise<CoachResult[]> {
    return askWithRepair(actions, this.template, (conversations) => this.ask(conversations));
  }
}

/**
 * How every language-model coach judges: ask each action's coach prompt; where the answer does not
 * parse, ask once more with the answer and FORMAT_REMINDER appended; where that fails too, the action
 * gets NEUTRAL_SCORE and ok = false (both answers kept in `raw`). An empty reply is not asked about: it
 * scores 0 (`isEmptyReply`). `ask` answers conversations (alternating user / assistant turns, user first), in order.
 * Example: askWithRepair([ctx], template, ask) -> [{score: 7, raw: 'PROCESS_SCORE: 7', ok: true, attempts: 1}]
 */
export async function askWithRepair(actions: ActionContext[], template: string, ask: (conversations: string[][]) => Promise<string[]>): Promise<CoachResult[]> {
  const wantCorrect = (i: number) => Boolean(actions[i].final && actions[i].groundTruth !== undefined);
  const results: (CoachResult | undefined)[] = actions.map((a, i) => (isEmptyReply(a.output) ? emptyReplyResult(wantCorrect(i)) : undefined));
  const asked = actions.flatMap((_, i) => (results[i] ? [] : [i]));
  const prompts = asked.map((i) => coachPrompt(actions[i], template));
  const first = await ask(prompts.map((p) => [p]));
  asked.forEach((i, j) => {
    const p = parseCoachAnswer(first[j], wantCorrect(i));
    results[i] = { score: p.score, correct: p.correct, raw: first[j], ok: p.ok, attempts: 1 };
  });
  const retry = asked.flatMap((i, j) => (results[i]!.ok ? [] : [j]));
  if (retry.length) {
    const second = await ask(retry.map((j) => [prompts[j], first[j], FORMAT_REMINDER]));
    retry.forEach((j, k) => {
      const i = asked[j];
      const p = parseCoachAnswer(second[k], wantCorrect(i));
      results[i] = p.ok
        ? { score: p.score, correct: p.correct, raw: second[k], ok: true, attempts: 2 }
        : { score: NEUTRAL_SCORE, raw: `${first[j]}\n---\n${second[k]}`, ok: false, attempts: 2 };
    });
  }
  return results as CoachResult[];
}

/**
 * An action with no visible text did nothing: it scores 0 (and, where the coach must say so, a wrong
 * answer) without being shown to a model coach. A judge asked about an empty reply answers outside what it
 * was taught: the relay judge, which compares the digit a step should give with the one the reply gave,
 * read a missing reply as the right digit (docs/judges.md, "A blind spot of the relay judge").
 * Example: isEmptyReply(' \n') -> true; isEmptyReply('7') -> false
 */
export function isEmptyReply(output: string): boolean {
  return /^[\s\p{C}]*$/u.test(output);
}

/** The verdict on an empty reply: 0, a wrong answer where one is wanted, never asked. */
export function emptyReplyResult(wantCorrect: boolean): CoachResult {
  return { score: 0, ...(wantCorrect ? { correct: false } : {}), raw: 'PROCESS_SCORE: 0 (an empty reply, not shown to the coach)', ok: true, attempts: 0 };
}

/** A coach from a synchronous scoring rule (e.g. the rule-based verifier). */
export class RuleCoach implements Coach {
  constructor(readonly name: string, readonly rule: (a: ActionContext) => { score: number; correct?: boolean; reason?: string }) {}
  async scoreBatch(actions: ActionContext[]): Promise<CoachResult[]> {
    return actions.map((a) => {
      const r = this.rule(a);
      const raw = `PROCESS_SCORE: ${r.score}` + (r.correct === undefined ? '' : `\nANSWER_CORRECT: ${r.correct ? 1 : 0}`);
      return { score: r.score, correct: r.correct, raw, ok: true, attempts: 1, ...(r.reason ? { reason: r.reason } : {}) };
    });
  }
}

export interface Miscalibration {
  /** Standard deviation of Gaussian noise added to every score. */
  noise?: number;
  /** Points added to the scores of one agent (positive favours it). */
  favourAgent?: { agentId: string; points: number };
  /** Points added per 100 characters of output (positive favours long answers). */
  lengthBias?: number;
  seed?: number;
}

/** Wraps any coach and distorts its scores, clamped to 0..10 (deterministic per action and seed). */
export class MiscalibratedCoach implements Coach {
  readonly name: string;
  constructor(readonly inner: Coach, readonly m: Miscalibration) {
    this.name = `${inner.name}+miscalibrated`;
  }
  async scoreBatch(actions: ActionContext[]): Promise<CoachResult[]> {
    const base = await this.inner.scoreBatch(actions);
    return base.map((r, i) => {
      const a = actions[i];
      const rng = new Rng(`${this.m.seed ?? 0}:${actionKey(a)}`); // the string seed is hashed
      let s = r.score + (this.m.noise ? rng.normal(0, this.m.noise) : 0);
      if (this.m.favourAgent?.agentId === a.agentId) s += this.m.favourAgent.points;
      if (this.m.lengthBias) s += (this.m.lengthBias * a.output.length) / 100;
      const score = Math.round(Math.min(10, Math.max(0, s)) * 10) / 10;
      return { ...r, score };
    });
  }
}

/** Everything the coach sees, as one exact key (a hash could collide and hand out a wrong score). */
function actionKey(a: ActionContext): string {
  return [a.problem, a.agentId, a.role, a.input, a.output, a.observation ?? '', a.groundTruth ?? '', a.facts ?? '', a.final].join('\u0000');
}

/** Scores cached by content: nothing is scored twice (within one process). */
export function cachedCoach(inner: Coach, cache = new Map<string, CoachResult>()): Coach & { cache: Map<string, CoachResult> } {
  return {
    name: inner.name,
    cache,
    async scoreBatch(actions) {
      const keys = actions.map(actionKey);
      const missing = [...new Set(keys.filter((k) => !cache.has(k)))];
      const firstIndex = missing.map((k) => keys.indexOf(k));
      if (missing.length) {
        const fresh = await inner.scoreBatch(firstIndex.map((i) => actions[i]));
        missing.forEach((k, j) => cache.set(k, fresh[j]));
      }
      return keys.map((k, i) => (missing.includes(k) && firstIndex[missing.indexOf(k)] === i ? cache.get(k)! : { ...cache.get(k)!, cached: true }));
    },
  };
}
