/**
 * Workflows as data: which agents, in which order, with which prompts, budgets, turns and tools,
 * and what each one sees. Each team's folder holds its instances (the math chain,
 * the data-analysis team, the relay team).
 *
 * For: the typed, validated workflow config (MAPPA section 1).
 * Not for: running a workflow (rollout.ts) or scoring it (coach.ts).
 *
 * Prompt templates use {{name}} placeholders, filled by `renderTemplate`:
 *   {{problem}}           the task text
 *   {{position}} {{count}} {{team}} {{budget}} {{role}}   the agent's place in the chain and its budget
 *   {{output:<agentId>}}  the final text of an earlier agent
 *   {{tool:<agentId>}}    the last tool observation of an earlier agent ("(none)" if it ran no code)
 *   {{part}}              this agent's part of a task cut into one part per agent (the relay team)
 * Example: renderTemplate('Problem: {{problem}}', {problem: '2+2?'}) -> 'Problem: 2+2?'
 */

export type ToolName = 'python' | 'javascript' | 'sql';

export interface AgentSpec {
  /** Stable id used in configs, adapters and metrics ("solver"). */
  id: string;
  /** Role name shown to the agent and the coach ("Problem Solver"). */
  role: string;
  system: string;
  user: string;
  /** Message sent after each tool observation to ask for the next turn. */
  followUp?: string;
  /** Output budget per turn, in tokens. */
  maxTokens: number;
  /** Turns; each turn's fenced code blocks are run and their output appended before the next. */
  turns: number;
  tools: ToolName[];
  /** Takes part but is never updated (the reference implementation's `is_tuning: false`). */
  trainable: boolean;
  /** The agent whose answer is the team's answer (exactly one). */
  final?: boolean;
}

export interface WorkflowSpec {
  name: string;
  /** The team's name (Team.name, team.ts): where its tasks come from and how it is judged. */
  domain: string;
  agents: AgentSpec[];
}

class WorkflowError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WorkflowError';
  }
}

/** The line every agent's system prompt gives its place in the team with. */
export const TEAM_LINE = 'agent {{position}} of {{count}} in a team: {{team}}';

/** The placeholders that name an earlier agent: {{output:x}} (its text) and {{tool:x}} (its last tool output). */
const AGENT_REF = /\{\{(output|tool):([\w-]+)\}\}/g;

/** The ids of the agents a prompt text names. Example: agentRefs('{{output:a}} {{tool:b}} {{output:a}}') -> ['a', 'b'] */
export function agentRefs(text: string): string[] {
  return [...new Set([...text.matchAll(AGENT_REF)].map((m) => m[2]))];
}

/**
 * What an agent's prompt text reads, in words: the problem, its part of the task, and each earlier
 * agent it names (the team diagram shows it).
 * Example: templateSources('Problem: {{problem}}\n{{output:solver}}\n{{tool:executor}}')
 *   -> ['the problem', 'solver', 'executor (tool output)']
 */
export function templateSources(text: string): string[] {
  const refs = [...text.matchAll(AGENT_REF)].map((m) => `${m[2]}${m[1] === 'tool' ? ' (tool output)' : ''}`);
  return [...(text.includes('{{problem}}') ? ['the problem'] : []), ...(text.includes('{{part}}') ? ['its part of the task'] : []), ...new Set(refs)];
}

/** Fill {{name}} placeholders; an unknown placeholder is an error naming it. */
export function renderTemplate(template: string, vars: Record<string, string | number>): string {
  return template.replace(/\{\{([\w:-]+)\}\}/g, (_, name: string) => {
    if (!(name in vars)) throw new WorkflowError(`template placeholder {{${name}}} has no value (known: ${Object.keys(vars).join(', ')})`);
    return String(vars[name]);
  });
}

const AGENT_FIELDS: [keyof AgentSpec, 'string' | 'number' | 'boolean' | 'list', boolean][] = [
  ['id', 'string', true], ['role', 'string', true], ['system', 'string', true], ['user', 'string', true],
  ['followUp', 'string', false], ['maxTokens', 'number', true], ['turns', 'number', true], ['tools', 'list', true],
  ['trainable', 'boolean', true], ['final', 'boolean', false],
];

/**
 * The workflow's fields are there and of their types, each missing or wrong one named with what it
 * takes: a hand-written team config meets this before anything indexes into it.
 * Example: checkShape('math-chainz') -> WorkflowError 'must be a team object {"name", "domain", "agents": [...]} ...'
 */
function checkShape(w: unknown, domains: string[]): asserts w is WorkflowSpec {
  if (!w || typeof w !== 'object' || Array.isArray(w)) {
    throw new WorkflowError(`must be a team object {"name", "domain", "agents": [...]}, as in configs/relay-4.json, got ${JSON.stringify(w)}`);
  }
  const o = w as Record<string, unknown>;
  if (typeof o.name !== 'string' || !o.name) throw new WorkflowError(`"name" is required: a string naming the team, got ${JSON.stringify(o.name)}`);
  const where = `workflow "${o.name}"`;
  if (!domains.includes(o.domain as string)) throw new WorkflowError(`${where}: "domain" must be ${domains.join(', ')}, got ${JSON.stringify(o.domain)}`);
  if (!Array.isArray(o.agents) || o.agents.length === 0) {
    throw new WorkflowError(`${where}: "agents" must be a list of at least one agent, got ${JSON.stringify(o.agents)}`);
  }
  for (const [i, a] of (o.agents as unknown[]).entries()) {
    if (!a || typeof a !== 'object' || Array.isArray(a)) {
      throw new WorkflowError(`${where}, agent ${i + 1}: must be an object with ${AGENT_FIELDS.filter((f) => f[2]).map((f) => f[0]).join(', ')}`);
    }
    const agent = a as Record<string, unknown>;
    for (const [key, type, required] of AGENT_FIELDS) {
      const v = agent[key];
      if (v === undefined && !required) continue;
      const ok = type === 'list' ? Array.isArray(v) : typeof v === type;
      if (!ok) {
        const what = v === undefined ? 'is missing' : `is ${JSON.stringify(v)}`;
        throw new WorkflowError(`${where}, agent ${i + 1}${typeof agent.id === 'string' ? ` ("${agent.id}")` : ''}: "${key}" ${what}; ` +
          `it must be ${type === 'list' ? 'a list of tools (python, javascript, sql; [] for none)' : `a ${type}`}`);
      }
    }
  }
}

/**
 * Check a workflow: a domain among `domains` (the names of the teams the caller knows),
 * unique ids, one final agent, sane budgets, placeholders that refer to earlier agents.
 */
export function validateWorkflow(w: WorkflowSpec, domains: string[]): WorkflowSpec {
  checkShape(w, domains);
  const where = `workflow "${w.name}"`;
  const seen = new Set<string>();
  for (const [i, a] of w.agents.entries()) {
    const at = `${where}, agent ${i + 1} ("${a.id}")`;
    if (!/^[a-z][\w-]*$/.test(a.id ?? '')) {
      throw new WorkflowError(`${at}: id must be lower-case letters, digits, - or _` +
        (a.id?.includes('{{') ? ' (a placeholder in an id is filled only in a repeated agent: "repeat": N, see configs/relay-4.json)' : ''));
    }
    if (seen.has(a.id)) throw new WorkflowError(`${at}: duplicate id`);
    if (!Number.isInteger(a.maxTokens) || a.maxTokens < 1 || a.maxTokens > 8192) {
      throw new WorkflowError(`${at}: maxTokens must be an integer in 1..8192, got ${a.maxTokens}`);
    }
    if (!Number.isInteger(a.turns) || a.turns < 1 || a.turns > 8) throw new WorkflowError(`${at}: turns must be an integer in 1..8, got ${a.turns}`);
    if (a.turns > 1 && a.tools.length === 0) throw new WorkflowError(`${at}: several turns need a tool (turns continue after tool output)`);
    for (const t of a.tools) if (!['python', 'javascript', 'sql'].includes(t)) throw new WorkflowError(`${at}: unknown tool "${t}" (python, javascript, sql)`);
    for (const text of [a.system, a.user, a.followUp ?? '']) {
      for (const [, , ref] of text.matchAll(AGENT_REF)) {
        if (!seen.has(ref)) throw new WorkflowError(`${at}: refers to {{…:${ref}}} but "${ref}" is not an earlier agent`);
      }
    }
    seen.add(a.id);
  }
  const finals = w.agents.filter((a) => a.final);
  if (finals.length !== 1) throw new WorkflowError(`${where}: exactly one agent must be "final" (it gives the team's answer); found ${finals.length}`);
  return w;
}

/** Variables describing an agent's place in the chain. */
export function placeVars(w: WorkflowSpec, agentIndex: number): Record<string, string | number> {
  const a = w.agents[agentIndex];
  return {
    position: agentIndex + 1,
    count: w.agents.length,
    team: w.agents.map((x) => x.role).join(' -> '),
    budget: a.maxTokens,
    role: a.role,
  };
}
