/**
 * Tokens per action as the sandbox measured them, for the MARTI export's cost estimate: per agent,
 * its actions per trajectory, generated tokens per action and prompt tokens per action, from a run's
 * trajectories.jsonl (each action's `tokens` and `input` messages), or the shipped default's figures.
 *
 * For: src/cli/export.ts (reads the run folder) and marti-cost.ts (the arithmetic).
 * Not for: reading files (the CLI passes the text and a prompt-token counter).
 *
 * Example: measureTrajectories('{"actions":[{"agent":"solver","tokens":[5,6,2],"input":[]}]}\n', 'runs/a')
 *          -> {source: 'runs/a', trajectories: 1, agents: {solver: {actionsPerTrajectory: 1, tokensPerAction: 3}}}
 */
import type { ChatMessage } from '../core/engine/tokenizer/chat.ts';

export interface AgentMeasure {
  actionsPerTrajectory: number;
  /** Generated tokens per action, the end-of-turn token included. */
  tokensPerAction: number;
  /** Prompt tokens per action (chat template applied), when they were counted. */
  promptTokensPerAction?: number;
}

export interface TokenMeasure {
  /** Where the figures come from, in words. */
  source: string;
  trajectories: number;
  /** Agent id -> its figures. */
  agents: Record<string, AgentMeasure>;
}

/**
 * The embedded default (math chain, models/agent), measured with `mappa train` for 3 iterations x 12
 * prompts x 2 samples, seed 0, at commit 3c81cc1 on 2026-12-04; prompt tokens counted with the
 * shipped tokenizer's chat template. A run folder's own trajectories.jsonl replaces it.
 */
export const SHIPPED_DEFAULT_MEASURE: TokenMeasure = {
  source: 'the embedded default on the shipped models (mappa train, 3 iterations, seed 0)',
  trajectories: 72,
  agents: {
    solver: { actionsPerTrajectory: 1, tokensPerAction: 36.2, promptTokensPerAction: 136.3 },
    executor: { actionsPerTrajectory: 2, tokensPerAction: 18.4, promptTokensPerAction: 213.9 },
    verifier: { actionsPerTrajectory: 1, tokensPerAction: 7.2, promptTokensPerAction: 189.4 },
  },
};

interface Line {
  actions?: { agent?: unknown; tokens?: unknown; input?: unknown }[];
}

/**
 * Per-agent figures over every trajectory of `text` (JSONL, one trajectory a line); `promptTokens`
 * counts an action's input messages (omit it and no prompt figure is given). Throws on a line that is
 * not a trajectory, naming it.
 */
export function measureTrajectories(text: string, source: string, promptTokens?: (messages: ChatMessage[]) => number): TokenMeasure {
  const sums = new Map<string, { actions: number; tokens: number; prompt: number }>();
  let trajectories = 0;
  for (const [i, raw] of text.split('\n').entries()) {
    if (!raw.trim()) continue;
    let line: Line;
    try {
      line = JSON.parse(raw) as Line;
    } catch (e) {
      throw new Error(`${source}: line ${i + 1} is not JSON (${(e as Error).message}); trajectories.jsonl holds one trajectory per line`);
    }
    if (!Array.isArray(line.actions)) throw new Error(`${source}: line ${i + 1} has no "actions" list; is this a trajectories.jsonl of "mappa train"?`);
    trajectories++;
    for (const a of line.actions) {
      if (typeof a.agent !== 'string' || !Array.isArray(a.tokens)) throw new Error(`${source}: line ${i + 1}: an action without "agent" and "tokens"`);
      const s = sums.get(a.agent) ?? { actions: 0, tokens: 0, prompt: 0 };
      s.actions++;
      s.tokens += a.tokens.length;
      if (promptTokens && Array.isArray(a.input)) s.prompt += promptTokens(a.input as ChatMessage[]);
      sums.set(a.agent, s);
    }
  }
  if (!trajectories) throw new Error(`${source}: no trajectories to measure`);
  const round = (x: number) => Math.round(x * 10) / 10;
  const agents: Record<string, AgentMeasure> = {};
  for (const [id, s] of sums) {
    agents[id] = {
      actionsPerTrajectory: round(s.actions / trajectories),
      tokensPerAction: round(s.tokens / s.actions),
      ...(promptTokens ? { promptTokensPerAction: round(s.prompt / s.actions) } : {}),
    };
  }
  return { source, trajectories, agents };
}
