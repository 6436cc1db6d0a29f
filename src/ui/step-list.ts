/**
 * Which of a trajectory's steps the inspector draws, so that a relay of 128 is not 128 cards: at most
 * `page` cards at a time from `start`, all steps or the wrong ones only (a step is wrong when the verdict
 * that colours its card, the rater's else the coach's, is below the neutral 5), the first wrong step
 * named, and where a jump to agent k lands.
 *
 * For: Inspector.svelte (and CreditView's rows, the same steps). Not for: judging a step (the team's rater).
 * Example: steps scored [10, 0, 10, 0] -> shownSteps(actions, { wrongOnly: true }) -> { indices: [1, 3], firstWrong: 1, total: 2, start: 0 }
 *          jumpStart(actions, 'agent40', 16) -> 37 (the card of agent 40 third from the top of its page)
 */
import { NEUTRAL_SCORE } from '../core/coach/coach-format.ts';
import type { ActionView } from '../core/lab/views.ts';

/** Cards drawn at a time. */
export const STEP_PAGE = 16;
/** Lines drawn at a time for a trajectory longer than STEP_PAGE (one line a step). */
export const COMPACT_PAGE = 6;

/** The verdict a step's card is coloured by: the rater's (the team's rubric), else the coach's; undefined when neither scored it. */
export function stepVerdict(a: Pick<ActionView, 'rater' | 'coach'>): number | undefined {
  return a.rater?.score ?? a.coach?.score;
}

/** A step whose verdict is below neutral. */
export function isWrongStep(a: Pick<ActionView, 'rater' | 'coach'>): boolean {
  const v = stepVerdict(a);
  return v !== undefined && v < NEUTRAL_SCORE;
}

/**
 * The steps to draw: indices into `actions` (all, or the wrong ones in order, so the first wrong step comes
 * first), `page` of them from `start` (clamped), the first wrong step's index (null: none), and how many
 * there are in all (the list before paging).
 */
export function shownSteps(actions: Pick<ActionView, 'rater' | 'coach'>[], opts: { wrongOnly?: boolean; start?: number; page?: number } = {})
  : { indices: number[]; firstWrong: number | null; total: number; start: number } {
  const page = opts.page ?? STEP_PAGE;
  const all = actions.map((_, i) => i);
  const wrong = all.filter((i) => isWrongStep(actions[i]));
  const list = opts.wrongOnly ? wrong : all;
  const start = Math.max(0, Math.min(opts.start ?? 0, Math.max(0, list.length - page)));
  return { indices: list.slice(start, start + page), firstWrong: wrong[0] ?? null, total: list.length, start };
}

/** The first page start (of all steps) that shows agent `agentId`'s first step a little below the top; null when it has none. */
export function jumpStart(actions: Pick<ActionView, 'agentId'>[], agentId: string, page = STEP_PAGE): number | null {
  const at = actions.findIndex((a) => a.agentId === agentId);
  if (at < 0) return null;
  return Math.max(0, Math.min(at - 2, actions.length - page));
}
