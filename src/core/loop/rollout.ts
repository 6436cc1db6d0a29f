/**
 * Rollouts: the team works on tasks, agent after agent, turn after turn, and every action is
 * recorded with its input, tokens, log-probs and tool observations.
 *
 * For: `runRollouts(workflow, tasks, ...)` -> trajectories (any workflow), and `playPass`, one pass
 * of a run's team (its config, adapters as values, tasks, temperature, seed) as the loop asks for it.
 * Not for: scoring (coach.ts) or rewards (rewards.ts).
 *
 * All trajectories advance in lockstep, one agent stage at a time, so each stage is one batched
 * generation per agent: P tasks x n samples solver turns, then executor turns, and so on.
 * Each turn's fenced code blocks are run on the tool for their language (opts.tools) and the
 * observation is appended to the conversation before the next turn (MAPPA section 1).
 * Example: const sandbox = createSandbox();
 *          const trajs = await runRollouts(MATH_CHAIN, tasks, {agents, tools: {python: sandbox, javascript: sandbox},
 *            outcome: MATH_TEAM.outcome, samplesPerTask: 2, temperature: 1, seed: 0});  trajs[0].actions.map(a => a.agentId) -> solver, executor, ...
 */
import { extractCodeBlocks } from '../tools/code-blocks.ts';
import type { ToolRunners } from '../tools/runners.ts';
import { DEFAULT_TIMEOUT_MS, formatObservation } from '../tools/sandbox.ts';
import { Workspace } from '../tools/workspace.ts';
import type { ChatMessage } from '../engine/tokenizer/chat.ts';
import type { LoraAdapter } from '../engine/lora/adapter.ts';
import { adapterFromValues, type AdapterValues } from '../engine/lora/adapter-values.ts';
import type { GenerationProgress } from '../engine/model/generate.ts';
import { pausePoint } from '../engine/pause-point.ts';
import type { LoadedModel } from '../engine/model/load.ts';
import { EngineAgents, type AgentBackend, type GenerationResult } from './agents.ts';
import type { PlayedTeam, Team } from './team.ts';
import type { Action, RolloutTask, Trajectory, TrajectoryOutcome } from './trajectory.ts';
import { agentRefs, placeVars, renderTemplate, type AgentSpec, type WorkflowSpec } from './workflow.ts';


export interface RolloutOptions {
  agents: AgentBackend | Map<string, AgentBackend>;
  /**
   * Runs each code block of an agent whose tools include its language: python and javascript on the
   * code sandbox, sql on the SQL tool (tools/sql.ts). A block whose language has none is not run.
   */
  tools: ToolRunners;
  samplesPerTask: number;
  /**
   * A tree-shaped rollout: before agent i's turn every trajectory so far is forked fanOut[i] times (its
   * transcript and workspace frozen and copied), so each agent replies fanOut[i] times to the same input.
   * Leaves share their ancestors' actions; each records its branch. Absent: independent samples.
   */
  fanOut?: number[];
  temperature: number;
  seed: number;
  toolTimeoutMs?: number;
  /** The team's verdict on a finished trajectory (Team.outcome): its answer from the final agent's text, right or not, metrics. */
  outcome: (t: Trajectory, workspace: Workspace, finalText: string) => TrajectoryOutcome;
  /** Progress: stage finished (agent id and turn). */
  onStage?: (info: { agentId: string; turn: number; rows: number }) => void;
  /** Checked between rows (prompts rendered, turns recorded): once aborted, the rollout throws its reason. */
  signal?: AbortSignal;
}

/**
 * samplesPerTask trajectories per task, worked on by the workflow's agents in order (runAgent: one
 * batched stage per agent turn), then settled: the files, and the team's verdict (answer, correctness, metrics).
 */
export async function runRollouts(workflow: WorkflowSpec, tasks: RolloutTask[], opts: RolloutOptions): Promise<Trajectory[]> {
  let rows: Row[] = [];
  for (const task of tasks) {
    await pausePoint(opts.signal);
    for (let sample = 0; sample < opts.samplesPerTask; sample++) rows.push(newRow(task, sample));
  }
  let seed = opts.seed * 7919;
  for (const [index, agent] of workflow.agents.entries()) {
    const { fanOut } = opts;
    if (fanOut) rows = rows.flatMap((row) => Array.from({ length: Math.max(1, fanOut[index] ?? 1) }, (_, k) => forkRow(row, k)));
    seed = await runAgent({ workflow, index, agent, place: placeVars(workflow, index), opts }, rows, seed);
  }
  const finalId = workflow.agents.find((a) => a.final)!.id;
  for (const row of rows) {
    await pausePoint(opts.signal);
    settle(row, finalId, opts.outcome);
  }
  return rows.map((row) => row.trajectory);
}

/** What playing a team needs: the team (its outcome), the agents' model (with its tokenizer) and the tools their code runs on. */
export interface TeamParts {
  team: Team;
  agentModel: LoadedModel;
  tools: ToolRunners;
}

/** The team on `tasks`, `samplesPerTask` times each, with these adapters (agent id -> values; missing or null: the base model). */
export interface TeamPass extends PlayedTeam {
  adapters: Map<string, AdapterValues | null>;
  tasks: RolloutTask[];
  samplesPerTask: number;
  /** Fork the trajectories before each agent's turn (a tree; RolloutOptions.fanOut). */
  fanOut?: number[];
  temperature: number;
  seed: number;
}

export interface PlayOptions {
  /** Checked between decoding steps: an aborted pass throws the signal's reason. */
  signal?: AbortSignal;
  /** Pre-fill and decoding progress of each generation. */
  onProgress?: (agentId: string, p: GenerationProgress) => void;
}

/**
 * One pass of the team: the adapters made from their values, the workflow played on the pass's tasks
 * with the team's outcome, the adapters freed. A pass is fixed by its values and seed, so it plays
 * the same wherever it runs.
 * Example: const trajs = await playPass(parts, { ...playedTeam(config), adapters: new Map(), tasks, samplesPerTask: 2, temperature: 1, seed: 7 });
 */
export async function playPass(parts: TeamParts, pass: TeamPass, opts: PlayOptions = {}): Promise<Trajectory[]> {
  const adapters = new Map<string, LoraAdapter>();
  for (const [id, v] of pass.adapters) if (v) adapters.set(id, adapterFromValues(parts.agentModel.config, v));
  try {
    const agents = new EngineAgents(parts.agentModel, adapters, pass.rolloutBatch ?? 16);
    agents.onProgress = opts.onProgress;
    agents.signal = opts.signal;
    return await runRollouts(pass.workflow, pass.tasks, {
      agents, tools: parts.tools, outcome: parts.team.outcome, samplesPerTask: pass.samplesPerTask, fanOut: pass.fanOut,
      temperature: pass.temperature, seed: pass.seed, toolTimeoutMs: pass.toolTimeoutMs, signal: opts.signal,
    });
  } finally {
    for (const a of adapters.values()) a.dispose();
  }
}

/** One trajectory while the team works on it: its record, its workspace, and what each agent has left for the next ones. */
interface Row {
  trajectory: Trajectory;
  workspace: Workspace;
  /** Agent id -> its final text (its turns' texts joined), read by later prompts as {{output:id}}. */
  outputs: Map<string, string>;
  /** Agent id -> its last tool observation, read as {{tool:id}}. */
  lastTool: Map<string, string>;
}

/** A row for sample `sample` of `task`: an empty record, and a workspace holding the task's files (owned by "task"). */
function newRow(task: RolloutTask, sample: number): Row {
  const workspace = new Workspace();
  for (const [path, text] of Object.entries(task.files ?? {})) workspace.write(path, text, 'task');
  return { trajectory: { task, sample, actions: [], finalAnswer: null, correct: false }, workspace, outputs: new Map(), lastTool: new Map() };
}

/** Child `k` of a row at a branching point: the transcript so far (the same action objects) and a copy of the workspace and of what each agent left. */
function forkRow(row: Row, k: number): Row {
  const t = row.trajectory;
  return {
    trajectory: { ...t, actions: [...t.actions], branch: [...(t.branch ?? []), k] },
    workspace: row.workspace.clone(), outputs: new Map(row.outputs), lastTool: new Map(row.lastTool),
  };
}

/** One agent's stage: the agent, its place in the team and the rollout's options. */
interface Stage {
  workflow: WorkflowSpec;
  index: number;
  agent: AgentSpec;
  place: Record<string, string | number>;
  opts: RolloutOptions;
}

/** The agent's turn state on one row: the conversation it sees next and the texts it has written. */
interface Turns {
  row: Row;
  messages: ChatMessage[];
  texts: string[];
}

/**
 * The agent's turns on every row, batched: turn 1 on all rows in one generation, then further turns
 * (up to agent.turns, with agent.followUp) only on the rows whose last turn ran code. Each generation
 * takes the next seed; returns the seed after the last one.
 */
async function runAgent(stage: Stage, rows: Row[], seed: number): Promise<number> {
  const { agent, opts } = stage;
  const all: Turns[] = [];
  for (const row of rows) {
    await pausePoint(opts.signal);
    const vars = promptVars(stage, row);
    const messages: ChatMessage[] = [
      { role: 'system', content: renderTemplate(agent.system, vars) }, { role: 'user', content: renderTemplate(agent.user, vars) },
    ];
    all.push({ row, messages, texts: [] });
  }
  let active = all;
  for (let turn = 1; turn <= agent.turns && active.length > 0; turn++) {
    const results = await backendFor(opts.agents, agent.id).generate(
      agent.id,
      active.map((t) => ({ messages: t.messages, maxTokens: agent.maxTokens, temperature: opts.temperature })),
      seed++,
    );
    const next: Turns[] = [];
    for (const [j, t] of active.entries()) {
      await pausePoint(opts.signal);
      if (await takeTurn(stage, t, results[j], turn)) next.push(t);
    }
    active = next;
    opts.onStage?.({ agentId: agent.id, turn, rows: results.length });
  }
  for (const t of all) t.row.outputs.set(agent.id, t.texts.join('\n'));
  return seed;
}

/**
 * Records one generated turn as an action, runs its code blocks on the row's workspace, and when it ran
 * code and the agent has a follow-up turn, appends the reply and the follow-up (with the observation) to
 * the conversation. True when the agent takes another turn on this row.
 */
async function takeTurn(stage: Stage, t: Turns, res: GenerationResult, turn: number): Promise<boolean> {
  const { agent } = stage;
  const action: Action = { ...res, agentId: agent.id, role: agent.role, turn, messages: t.messages, codeBlocks: 0 };
  t.texts.push(res.text);
  const ran = await runCode(stage, t.row, res.text);
  let again = false;
  if (ran) {
    action.observation = ran.observation;
    action.codeBlocks = ran.blocks;
    t.row.lastTool.set(agent.id, ran.observation);
    if (turn < agent.turns && agent.followUp) {
      t.messages = [...t.messages, { role: 'assistant', content: res.text },
        { role: 'user', content: renderTemplate(agent.followUp, { ...promptVars(stage, t.row), observation: ran.observation }) }];
      again = true;
    }
  }
  t.row.trajectory.actions.push(action);
  return again;
}

/** Runs the text's code blocks in a language the agent may use and opts.tools has a runner for, one after another; undefined when there are none. */
async function runCode(stage: Stage, row: Row, text: string): Promise<{ observation: string; blocks: number } | undefined> {
  const { agent, opts } = stage;
  const blocks = agent.tools.length ? extractCodeBlocks(text, agent.tools).filter((b) => opts.tools[b.language]) : [];
  if (!blocks.length) return undefined;
  const observations: string[] = [];
  for (const b of blocks) {
    const run = await opts.tools[b.language]!.run(b.code, {
      language: b.language === 'sql' ? undefined : b.language,
      timeoutMs: opts.toolTimeoutMs ?? DEFAULT_TIMEOUT_MS,
      workspace: row.workspace,
      owner: agent.id,
    });
    observations.push(formatObservation(run));
  }
  return { observation: observations.join('\n'), blocks: blocks.length };
}

/** Per agent, the earlier agents its templates name (the load check refuses any other {{output:x}} or {{tool:x}}). */
const named = new WeakMap<AgentSpec, string[]>();

/**
 * The template variables of the stage's prompts on a row: its place in the team, the task, and the output and last
 * tool observation so far of each agent its templates name ('(none)' where there is none).
 */
function promptVars(stage: Stage, row: Row): Record<string, string | number> {
  const { task } = row.trajectory;
  const v: Record<string, string | number> = { ...stage.place, problem: task.problem, part: task.parts?.[stage.index] ?? '(none)' };
  let ids = named.get(stage.agent);
  if (!ids) named.set(stage.agent, (ids = agentRefs(`${stage.agent.system}\n${stage.agent.user}\n${stage.agent.followUp ?? ''}`)));
  for (const id of ids) { // only these: a team of 128 would fill 256 entries a row and stage
    v[`output:${id}`] = row.outputs.get(id) ?? '(none)';
    v[`tool:${id}`] = row.lastTool.get(id) ?? '(none)';
  }
  return v;
}

function backendFor(agents: RolloutOptions['agents'], id: string): AgentBackend {
  const b = agents instanceof Map ? agents.get(id) : agents;
  if (!b) throw new Error(`runRollouts: no backend for agent "${id}"`);
  return b;
}

/** Settles the finished row: the workspace's files, then the team's verdict (its answer read from the final agent's text, right or not, metrics). */
function settle(row: Row, finalId: string, outcome: RolloutOptions['outcome']): void {
  const t = row.trajectory;
  if (row.workspace.list().length) t.files = row.workspace.list();
  const o = outcome(t, row.workspace, row.outputs.get(finalId) ?? '');
  t.finalAnswer = o.finalAnswer;
  t.correct = o.correct;
  if (o.metrics) t.metrics = o.metrics;
  if (o.report) t.report = o.report;
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
