/**
 * The page's side of tier 3 (src/core/lab/person-cards.ts in the worker): the questions a coach in tiers asks
 * during a run, shown as the judge desk's own cards (AskCards.svelte) — so this is a DeskState whose cards
 * are the open questions and whose score buttons answer them (the 'person' request). It keeps the wait's
 * end (for a countdown) and what came of the last wait.
 *
 * For: Tiers.svelte. Not for: choosing what to ask or waiting (the worker), the judge desk's own cards (DeskState).
 * Example: const person = new PersonDesk(client, run);  // a 'person' event with 2 questions -> person.cards has 2
 *          await person.correct(card.trajectory, card.action, 7);  // answers it; the card leaves
 */
import type { AskCard, DeskView } from '../../core/lab/desk/desk-requests.ts';
import type { PersonQuestion } from '../../core/coach/person-tier.ts';
import type { TrainerClient } from '../../worker/client.ts';
import type { RunState } from '../run-state.svelte.ts';
import { DeskState } from './desk.svelte.ts';

/** A question as a judge card: `action` is its index in the coach's batch, `trajectory` its chain. */
export function personCard(q: PersonQuestion): AskCard {
  return {
    trajectory: q.chain ?? 0, action: q.index, role: q.role, input: q.input, reply: q.output, judge: q.tier1,
    why: `${q.why} The stronger coach said ${q.tier2}; your score replaces it (skipped or unanswered: ${q.tier2} stands).`, earlier: [],
  };
}

export class PersonDesk extends DeskState {
  /** The questions of the wait in progress (none: no wait). */
  questions: PersonQuestion[] = $state.raw([]);
  /** Those answered or skipped from this page. */
  done: string[] = $state.raw([]);
  /** When the wait ends (ms since the epoch) and its length. */
  until = $state(0);
  waitSeconds = $state(0);
  /** What came of the last wait. */
  outcome: { answered: number; skipped: number; unanswered: number } | null = $state.raw(null);
  /** Questions asked in this page's runs so far, and answered with a score. */
  total = $state({ asked: 0, answered: 0 });

  constructor(private readonly trainer: TrainerClient, run: RunState) {
    super(trainer, run);
    trainer.on((e) => {
      if (e.kind !== 'person') return;
      this.questions = e.questions;
      this.done = [];
      this.until = e.until;
      this.waitSeconds = e.waitSeconds;
      if (e.questions.length) this.total = { ...this.total, asked: this.total.asked + e.questions.length };
      if (e.outcome) {
        this.outcome = e.outcome;
        this.total = { ...this.total, answered: this.total.answered + e.outcome.answered };
      }
    });
  }

  /** The open questions as cards (null: the coach asks nothing now). */
  override get cards(): AskCard[] | null {
    if (!this.questions.length) return null;
    return this.questions.filter((q) => !this.done.includes(q.id)).map(personCard);
  }

  /** Answers the card of batch index `action` (a skip: null). */
  override async correct(_trajectory: number, action: number, score: number | null): Promise<DeskView | null> {
    const q = this.questions.find((x) => x.index === action);
    if (!q) return null;
    await this.reply({ id: q.id, score });
    return null;
  }

  skipAll(): Promise<void> {
    return this.reply({ skipAll: true });
  }

  private async reply(r: { id: string; score: number | null } | { skipAll: true }): Promise<void> {
    this.busy = true;
    this.error = null;
    try {
      await this.trainer.lab.person(r);
      this.done = 'skipAll' in r ? this.questions.map((q) => q.id) : [...this.done, r.id];
    } catch (e) {
      this.error = (e as Error).message;
    } finally {
      this.busy = false;
    }
  }
}
