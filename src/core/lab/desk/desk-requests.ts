/**
 * What the judge desk is asked and answers (the lab's `desk` request, protocol.ts), light enough for the page:
 * the requests, the view the page draws (desk.svelte.ts, Corrections.svelte), teaching's progress, and an
 * action in a few words. The desk itself is judge-desk.ts, in the worker.
 *
 * For: judge-desk.ts, protocol.ts and the page. Not for: correcting or teaching (judge-desk.ts).
 * Example: const r: DeskRequest = { op: 'correct', trajectories, trajectory: 0, action: 1, score: 0 };
 *          actionWords('Relay agent 2 replied "7".\n\n3 + 4') -> '3 + 4 → replied "7"'
 */
import type { JudgeVersion } from '../../coach/correction-book.ts';
import type { TrajectoryView } from '../views.ts';

/** The store the desk keeps its books and taught judges in (a run store's files, never listed as a run). */
export const DESK_STORE = 'judge-desk';

export type DeskRequest = { trajectories?: TrajectoryView[] } & (
  | { op: 'view' }
  | { op: 'correct'; trajectory: number; action: number; score: number }
  | { op: 'firstWrong'; trajectory: number; action: number }
  | { op: 'remove'; index: number }
  | { op: 'undo' }
  | { op: 'import'; text: string; name: string }
  | { op: 'export' }
  | { op: 'ask'; k: number }
  | { op: 'teach' });

/** An action to ask the person about, with why it was picked and their earlier verdicts on similar actions. */
export interface AskCard {
  trajectory: number;
  action: number;
  role: string;
  input: string;
  reply: string;
  judge: number | null;
  why: string;
  earlier: { score: number; words: string }[];
}

export interface DeskView {
  team: string;
  /** The judge asked now: its coach.model spec and sha-256 (a taught one keeps its line's book). */
  judge: { spec: string; hash: string };
  count: number;
  /** The book's verdicts, each with its action in a few words (actionWords). */
  corrections: { prompt: string; words: string; score: number; was?: number; group?: string; by: string; why?: string }[];
  versions: JudgeVersion[];
  /** The coach prompt of each action of the trajectories sent (null: no coach context), to match verdicts to actions. */
  prompts: (string | null)[][];
  message?: string;
  exported?: { name: string; text: string };
  cards?: AskCard[];
  taught?: JudgeVersion;
}

/** Teaching's progress, as the worker posts it. */
export interface TeachProgress {
  phase: string;
  done: number;
  total: number;
  seconds: number;
}

/**
 * An action in a few words, from its coach prompt: what it received and what it replied, read from the relay's template
 * (`... replied "7".` then the input) or the generic one (`Input:` ... `Output:`); else the prompt's start.
 * Example: actionWords('Relay agent 2 replied "7".\n\n3 + 4') -> '3 + 4 → replied "7"'
 */
export function actionWords(prompt: string): string {
  const relay = /replied "([^"]*)"\.[\s\S]*\n([^\n]+)$/.exec(prompt);
  if (relay) return `${relay[2].trim()} → replied "${relay[1]}"`;
  const generic = /\nInput:\n([\s\S]*?)\nOutput:\n([\s\S]*?)\nTool output:/.exec(prompt);
  if (generic) return `${generic[1].trim().split('\n').pop()} → replied "${generic[2].trim().slice(0, 60)}"`;
  return prompt.slice(0, 60);
}
