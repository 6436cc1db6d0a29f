/**
 * Rollouts: the team works on tasks, agent after agent, turn after turn, and every action is
 * recorded with its input, tokens, log-probs and tool observations.
 *
 * For: `runRollouts(workflow, tasks, ...)` -> trajectories (math chain and any workflow of the
 * same shape). Not for: scoring (coach.ts) or rewards (rewards.ts).
 *
 * All trajectories advance in lockstep, one agent stage at a time, so each stage is one batched
 * generation per agent: P tasks x n samples solver turns, then executor turns, and so on.
 * Each turn's fenced code blocks are run on the tool for their language (opts.tools) and the
 * observation is appended to the conversation before the next turn (MAPPA section 1).
 * Example: const sandbox = createSandbox();
 *          const trajs = await runRollouts(MATH_CHAIN, tasks, {agents, tools: {python: sandbox, javascript: sandbox},
 *            samplesPerTask: 2, temperature: 1, seed: 0});  trajs[0].actions.map(a => a.agentId) -> solver, executor, ...
 */
import { answersEqual, extractBoxed } from '../tasks/answers.ts';
import { extractCodeBlocks } from '../tools/code-blocks.ts';
import type { ToolRunners } from '../tools/runners.ts';
import { formatObservation } from '../tools/sandbox.ts';
import { Workspace, type WorkspaceEntry } from '../tools/workspace.ts';
import type { ChatMessage } from '../engine/tokenizer/tokenizer.ts';
import type { AgentBackend, GenerationResult } from './agents.ts';
import { placeVars, renderTemplate, type WorkflowSpec } from './workflow.ts';

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
  coach?: { raw: string; score: number; ok: boolean; attempts: number; correct?: boolean };
  reward?: number;
  tokenRewards?: number[];
  advantage?: number;
}

export interface Trajectory {
  task: RolloutTask;
  sample: number;
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
  finalAnswer?: string | null;
  metrics?: Record<string, number>;
  report?: string;
}

export interface RolloutOptions {
  agents: AgentBackend | Map<string, AgentBackend>;
  /**
   * Runs each code block of an agent whose tools include its language: python and javascript on the
   * code sandbox, sql on the SQL tool (tools/sql.ts). A block whose language has none is not run.
   */
  tools: ToolRunners;
  samplesPerTask: number;
  temperature: number;
  seed: number;
  toolTimeoutMs?: number;
  /** Decides success (and metrics) instead of comparing the boxed answer with task.answer (data team). */
  outcome?: (t: Trajectory, workspace: Workspace) => TrajectoryOutcome;
  /** Progress: stage finished (agent id and turn). */
  onStage?: (info: { agentId: string; turn: number; rows: number }) => void;
}

/** Extract the team's answer from the final agent's text: the last \boxed{}, else "Answer: x". */
export function extractFinalAnswer(text: string): string | null {
  const boxed = extractBoxed(text);
  if (boxed !== null) return boxed;
  const m = /(?:Answer|Result)\s*:\s*\$?(-?[\d.,/]+)/i.exec(text);
  return m ? m[1] : null;
}

export async function runRollouts(workflow: WorkflowSpec, tasks: RolloutTask[], opts: RolloutOptions): Promise<Trajectory[]> {
  const backendFor = (id: string): AgentBackend => {
    const b = opts.agents instanceof Map ? opts.agents.get(id) : opts.agents;
    if (!b) throw new Error(`runRollouts: no backend for agent "${id}"`);
    return b;
  };
  const trajs: Trajectory[] = tasks.flatMap((task) =>
    Array.from({ length: opts.samplesPerTask }, (_, sample) => ({ task, sample, actions: [], finalAnswer: null, correct: false })),
  );
  const outputs = trajs.map(() => new Map<string, string>()); // agent id -> final text
  const lastTool = trajs.map(() => new Map<string, string>()); // agent id -> last observation
  const workspaces = trajs.map((t) => {
    const ws = new Workspace();
    for (const [path, text] of Object.entries(t.task.files ?? {})) ws.write(path, text, 'task');
    return ws;
  });
  let stageSeed = opts.seed * 7919;

  for (const [index, agent] of workflow.agents.entries()) {
    const place = placeVars(workflow, index);
    const vars = (r: number) => {
      const v: Record<string, string | number> = { ...place, problem: trajs[r].task.problem, part: trajs[r].task.parts?.[index] ?? '(none)' };
      for (const a of workflow.agents) {
        v[`output:${a.id}`] = outputs[r].get(a.id) ?? '(none)';
        v[`tool:${a.id}`] = lastTool[r].get(a.id) ?? '(none)';
      }
      return v;
    };
    const conversations: ChatMessage[][] = trajs.map((_, r) => [
      { role: 'system', content: renderTemplate(agent.system, vars(r)) },
      { role: 'user', content: renderTemplate(agent.user, vars(r)) },
    ]);
    const texts: string[][] = trajs.map(() => []);
    let active = trajs.map((_, r) => r);
    for (let turn = 1; turn <= agent.turns && active.length > 0; turn++) {
      const results = await backendFor(agent.id).generate(
        agent.id,
        active.map((r) => ({ messages: conversations[r], maxTokens: agent.maxTokens, temperature: opts.temperature })),
        stageSeed++,
      );
      const next: number[] = [];
      for (const [j, r] of active.entries()) {
        const res = results[j];
        const action: Action = { ...res, agentId: agent.id, role: agent.role, turn, messages: conversations[r], codeBlocks: 0 };
        texts[r].push(res.text);
        const blocks = agent.tools.length ? extractCodeBlocks(res.text, agent.tools).filter((b) => opts.tools[b.language]) : [];
        if (blocks.length) {
          const observations: string[] = [];
          for (const b of blocks) {
            const run = await opts.tools[b.language]!.run(b.code, { language: b.language === 'sql' ? undefined : b.language, timeoutMs: opts.toolTimeoutMs ?? 2000, workspace: workspaces[r], owner: agent.id });
            observations.push(formatObservation(run));
          }
          action.observation = observations.join('\n');
          action.codeBlocks = blocks.length;
          lastTool[r].set(agent.id, action.observation);
          if (turn < agent.turns && agent.followUp) {
            conversations[r] = [...conversations[r], { role: 'assistant', content: res.text },
              { role: 'user', content: renderTemplate(agent.followUp, { ...vars(r), observation: action.observation }) }];
            next.push(r);
          }
        }
        trajs[r].actions.push(action);
      }
      active = next;
      opts.onStage?.({ agentId: agent.id, turn, rows: results.length });
    }
    trajs.forEach((_, r) => outputs[r].set(agent.id, texts[r].join('\n')));
  }

  const finalId = workflow.agents.find((a) => a.final)!.id;
  for (const [r, t] of trajs.entries()) {
    t.finalAnswer = extractFinalAnswer(outputs[r].get(finalId) ?? '');
    t.correct = t.finalAnswer !== null && answersEqual(t.finalAnswer, t.task.answer);
    if (workspaces[r].list().length) t.files = workspaces[r].list();
    if (opts.outcome) {
      const o = opts.outcome(t, workspaces[r]);
      t.correct = o.correct;
      if (o.finalAnswer !== undefined) t.finalAnswer = o.finalAnswer;
      if (o.metrics) t.metrics = o.metrics;
      if (o.report) t.report = o.report;
    }
  }
  return trajs;
}

/**
 * One JSONL line per trajectory (trajectories.jsonl of `mappa train`, `mappa eval --trajectories`, the
 * page's export): every action with its input, output, tool output, coach verdict and reward, and for
 * the data team the held-out metrics of the trajectory's submission (absent where there are none).
 */
export function trajectoryLines(iteration: number, trajs: Trajectory[], extra: Record<string, unknown> = {}): string {
  return trajs.map((t) => JSON.stringify({
    iteration, ...extra, task: t.task.id, problem: t.task.problem, answer: t.task.answer, sample: t.sample,
    finalAnswer: t.finalAnswer, correct: t.correct, metrics: t.metrics,
    actions: t.actions.map((a) => ({
      agent: a.agentId, turn: a.turn, input: a.messages, output: a.text, tokens: a.tokens,
      logprobs: a.logprobs.map((x) => +x.toFixed(5)), observation: a.observation, truncated: a.truncated,
      coach: a.coach, reward: a.reward,
    })),
  })).map((l) => l + '\n').join('');
}
