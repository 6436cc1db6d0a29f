/**
 * The page's view of the judge desk (src/core/lab/desk/judge-desk.ts, in the worker): what it last answered, the
 * teaching progress, and one method per request. Only passes requests and keeps answers; no logic of its own.
 *
 * For: Inspector.svelte (score buttons) and Corrections.svelte. Not for: anything the worker decides.
 * Example: const desk = new DeskState(client, run); await desk.correct(0, 1, 0); desk.view?.count -> 1
 */
import type { AskCard, DeskRequest, DeskView, TeachProgress } from '../../core/lab/desk/desk-requests.ts';
import type { JudgeVersion } from '../../core/coach/correction-book.ts';
import type { TrainerClient } from '../../worker/client.ts';
import type { RunState } from '../run-state.svelte.ts';

type Op = DeskRequest extends infer R ? (R extends { op: string } ? Omit<R, 'trajectories'> : never) : never;

export class DeskState {
  view: DeskView | null = $state.raw(null);
  progress: TeachProgress | null = $state(null);
  message: string | null = $state(null);
  error: string | null = $state(null);
  /** The last "Ask me" cards, for the batch they were picked from. */
  private asked: { cards: AskCard[]; batch: unknown } | null = $state.raw(null);
  /** The version taught last in this page, with its before/after. */
  taught: JudgeVersion | null = $state.raw(null);
  /** A request in flight (buttons wait). */
  busy = $state(false);

  constructor(private readonly client: TrainerClient, private readonly run: RunState) {
    client.on((e) => {
      if (e.kind === 'teach') this.progress = e.progress;
    });
  }

  /** The verdict the person gave action `ai` of trajectory `ti` of the batch shown (undefined: none). */
  verdict(ti: number, ai: number): number | undefined {
    const prompt = this.view?.prompts[ti]?.[ai];
    return prompt ? this.view?.corrections.find((c) => c.prompt === prompt)?.score : undefined;
  }

  /** The cards still to answer: of the batch shown, without a verdict yet. */
  get cards(): AskCard[] | null {
    const a = this.asked;
    if (!a || a.batch !== this.run.trajectories) return null;
    return a.cards.filter((c) => this.verdict(c.trajectory, c.action) === undefined);
  }

  async send(op: Op): Promise<DeskView | null> {
    this.busy = true;
    this.error = null;
    try {
      // A snapshot: the page's state is a proxy, which a worker message cannot carry.
      const trajectories = $state.snapshot(this.run.trajectories?.trajectories ?? []) as DeskRequest['trajectories'];
      const v = await this.client.lab.desk({ ...op, trajectories } as DeskRequest);
      this.view = v;
      if (v.cards) this.asked = { cards: v.cards, batch: this.run.trajectories };
      if (v.taught) this.taught = v.taught;
      if (v.message) this.message = v.message;
      return v;
    } catch (e) {
      this.error = (e as Error).message;
      return null;
    } finally {
      this.busy = false;
      if (op.op === 'teach') this.progress = null;
    }
  }

  correct(trajectory: number, action: number, score: number) {
    return this.send({ op: 'correct', trajectory, action, score });
  }
}
