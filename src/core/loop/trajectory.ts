/**
 * What a rollout leaves: a task, the trajectory the team made of it (every action with its input,
 * tokens, log-probs and tool output), and a domain's verdict on it. Types only, in a module of their
 * own, so that a team's folder can speak of trajectories without importing the loop that plays them.
 *
 * For: every stage after the rollout (coach, rewards, records, the domains). Not for: playing (rollout.ts).
 * Example: trajectory.actions.map((a) => a.agentId) -> ['solver', 'executor', 'executor', 'verifier']
 */
import type { ChatMessage } from '../engine/tokenizer/chat.ts';
import type { WorkspaceEntry } from '../tools/workspace.ts';
import type { GenerationResult } from './agents.ts';

export interface RolloutTask {
  id: string;
  problem: string;
  answer: string;
  /** Files the trajectory's workspace starts with (path -> text), owned by "task" (data team: data.csv, test.csv). */
  files?: Record<string, string>;
  /** A task cut into one part per agent (the relay team): agent i's prompt reads parts[i] as {{part}}. */
  parts?: string[];
}

/** One turn of one agent: what it generated (GenerationResult) and where it stands in the chain. */
export interface Action extends GenerationResult {
  agentId: string;
  role: string;
  turn: number;
  /** The chat messages the agent saw. */
  messages: ChatMessage[];
  /** Tool observation produced by this turn's code (undefined when it ran none). */
  observation?: string;
  codeBlocks: number;
  /** Filled by the coach and the reward stage. */
  /** `tier`: which tier of a coach in tiers scored it (coach/tiered-coach.ts); absent with one coach. */
  coach?: { raw: string; score: number; ok: boolean; attempts: number; correct?: boolean; tier?: number };
  reward?: number;
  tokenRewards?: number[];
  advantage?: number;
}

export interface Trajectory {
  task: RolloutTask;
  sample: number;
  /**
   * In a tree-shaped rollout (rollout.ts `fanOut`), which of each agent's replies this leaf continues
   * (branch[i]: 0 .. fan-out of agent i - 1); leaves sharing a prefix share those actions (the same objects).
   */
  branch?: number[];
  actions: Action[];
  finalAnswer: string | null;
  correct: boolean;
  /** The workspace's files at the end, with the agent that last wrote each (only when it is not empty). */
  files?: WorkspaceEntry[];
  /** Quality metrics from the `outcome` hook (data team: rocAuc, accuracy, f1 or rmse, rmseOverRange...). */
  metrics?: Record<string, number>;
  /** What the `outcome` hook found, in words, for the coach (e.g. which tables exist and their shape). */
  report?: string;
}

/** A domain's verdict on a finished trajectory, from its answer and its workspace. */
export interface TrajectoryOutcome {
  correct: boolean;
  finalAnswer: string | null;
  metrics?: Record<string, number>;
  report?: string;
}
