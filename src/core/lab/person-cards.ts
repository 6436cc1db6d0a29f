/**
 * Tier 3 in the page: the person answering a coach in tiers (coach/person-tier.ts) is whoever sits at the
 * page. When the coach asks, a 'person' event carries the questions and the time the run waits for them
 * (coach.tiers.personWait seconds); the page shows them as judge cards beside the charts, and each
 * answer (a score 0..10, or a skip) comes back as a 'person' request. The run goes on as soon as every
 * card is answered or skipped, or when the time is up (what is still open is unanswered: tier 2's score
 * stands); Pause ends the wait at once the same way. A last 'person' event with no questions says what
 * came of them.
 *
 * For: the lab (lab.ts hands it to the shelf, which gives it to the tiered coach; the 'person' request
 * comes here). Not for: whom to ask or how an answer counts (person-tier.ts, tiered-coach.ts), the cards (src/ui).
 *
 * Example: const p = new CardPerson(post);
 *          const answers = p.ask([q], 120);     // post {kind: 'person', questions: [q], waitSeconds: 120, until}
 *          p.answer({id: q.id, score: 7});      // (the page's request) -> answers resolves Map {q.id => 7}
 */
import { AnswerBoard, type Person, type PersonAnswers, type PersonQuestion } from '../coach/person-tier.ts';
import type { PersonReply, WorkerEvent } from './protocol.ts';

export class CardPerson implements Person {
  readonly name = 'the page\'s cards';
  private open: { board: AnswerBoard; ids: string[] } | null = null;

  constructor(private readonly post: (e: WorkerEvent) => void) {}

  async ask(questions: PersonQuestion[], waitSeconds: number): Promise<PersonAnswers> {
    const board = new AnswerBoard();
    const ids = questions.map((q) => q.id);
    this.open = { board, ids };
    this.post({ kind: 'person', questions, waitSeconds, until: Date.now() + waitSeconds * 1000 });
    const answers = await board.wait(ids, waitSeconds);
    if (this.open?.board === board) this.open = null;
    const answered = [...answers.values()].filter((a) => a !== null).length;
    const outcome = { answered, skipped: answers.size - answered, unanswered: ids.length - answers.size };
    this.post({ kind: 'person', questions: [], waitSeconds, until: 0, outcome });
    return answers;
  }

  /** The page's answer; refused (thrown, the page shows it) when no card of that id waits or the answer is not 0..10. Returns the cards still open. */
  answer(reply: PersonReply): { open: number } {
    const o = this.open;
    if (!o) throw new Error('no card waits for an answer now (the run moved on: its wait ended)');
    if ('skipAll' in reply) {
      for (const id of o.ids) o.board.offer(`${id} skip`);
    } else {
      if (!o.ids.includes(reply.id)) throw new Error(`no card "${reply.id}" waits now (the cards open: ${o.ids.join(', ')})`);
      const refused = o.board.offer(`${reply.id} ${reply.score === null ? 'skip' : reply.score}`);
      if (refused) throw new Error(`card ${reply.id}: ${refused}`);
    }
    return { open: this.open ? o.ids.filter((id) => !o.board.has(id)).length : 0 };
  }

  /** Ends the wait now (Pause): what is still open is unanswered. */
  release(): void {
    this.open?.board.close();
  }
}
