/**
 * A repeated agent in a workflow: a team of any size written once. An entry of a workflow's "agents"
 * with a "repeat" count stands for that many agents, one after another; the loader (resolveConfig)
 * expands it before the workflow is validated, so everything past loading sees the plain list it has
 * always seen (configs/relay-128.json: 53 lines, the same 128 agents as the 1,310 lines it replaced).
 *
 *   "agents": [{
 *     "repeat": 128,
 *     "id": "agent{{position}}", "role": "Relay agent {{position}}",
 *     "system": "Relay agent {{position}} of {{count}}: reply with the last digit of the sum.",
 *     "user": "{{output:{{previous}}}} {{part}}",
 *     "maxTokens": 4, "turns": 1, "tools": [], "trainable": true,
 *     "first": {"user": "{{part}}"},
 *     "last": {"final": true}
 *   }]
 *
 * In each copy, k = 1..repeat, at place P + k in the team (P the agents listed before the entry):
 *   - `{{position}}` and `{{count}}` in its "id" and "role" are filled in (P + k, the team's size): those are
 *     names, fixed when the team is loaded. In its prompts ("system", "user", "followUp") they are left for
 *     the prompt renderer (workflow.ts), which fills them with the same numbers when the agent plays;
 *   - `{{previous}}`, anywhere, is the id of the agent just before it in the team (so "{{output:{{previous}}}}"
 *     reads its reply); the team's first agent has none, so it must override that field in "first";
 *   - "first" and "last" (optional) are fields that replace the template's in the first and the last copy.
 * Entries without "repeat" are agents as before: an old, fully written config loads unchanged.
 *
 * For: `expandWorkflow` (config.ts calls it on every workflow it resolves). Not for: validating the
 * expanded team (workflow.ts's validateWorkflow does, naming the agent at fault by its place).
 * Example: expandWorkflow({name: 'relay-2', domain: 'relay', agents: [{repeat: 2, id: 'agent{{position}}', ...,
 *            user: '{{output:{{previous}}}} {{part}}', first: {user: '{{part}}'}, last: {final: true}}]})
 *          -> agents agent1 (user '{{part}}') and agent2 (user '{{output:agent1}} {{part}}', final: true)
 */
import type { AgentSpec, WorkflowSpec } from './workflow.ts';

/** The most copies one entry may stand for (a sanity bound well above the largest team, 128). */
const MAX_REPEAT = 1024;

/** The keys a repeated entry has beyond an agent's. */
const REPEAT_KEYS = ['repeat', 'first', 'last'];

class RepeatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WorkflowError';
  }
}

type Json = Record<string, unknown>;
const isObject = (x: unknown): x is Json => !!x && typeof x === 'object' && !Array.isArray(x);

/** The fields filled in at load: names. Prompts keep {{position}} / {{count}} for the renderer. */
const NAME_FIELDS = new Set(['id', 'role']);

function fill(value: unknown, key: string, vars: { position: number; count: number; previous: string | null }, where: string): unknown {
  if (typeof value !== 'string') return value;
  let s = value;
  if (NAME_FIELDS.has(key)) s = s.replaceAll('{{position}}', String(vars.position)).replaceAll('{{count}}', String(vars.count));
  if (s.includes('{{previous}}')) {
    if (vars.previous === null) {
      throw new RepeatError(`${where}: "${key}" names {{previous}}, but the team's first agent has no agent before it; give it its own "${key}" in "first"`);
    }
    s = s.replaceAll('{{previous}}', vars.previous);
  }
  return s;
}

/**
 * The workflow with every repeated entry expanded into its agents (a workflow without one is returned as
 * it is). Refuses, by entry, a "repeat" that is not an integer 1..1024 and a "first" or "last" that is not an
 * object of agent fields. Anything else that is not a workflow is left for validateWorkflow to refuse.
 */
export function expandWorkflow(w: unknown): unknown {
  if (!isObject(w) || !Array.isArray(w.agents) || !w.agents.some((a) => isObject(a) && 'repeat' in a)) return w;
  const name = typeof w.name === 'string' ? w.name : '?';
  // The team's size first: {{count}} in a name is the whole team's.
  const count = w.agents.reduce((n: number, a, i) => n + (isObject(a) && 'repeat' in a ? checkRepeat(a, `workflow "${name}", agent entry ${i + 1}`) : 1), 0);
  const agents: unknown[] = [];
  w.agents.forEach((entry, i) => {
    if (!isObject(entry) || !('repeat' in entry)) {
      agents.push(entry);
      return;
    }
    const where = `workflow "${name}", agent entry ${i + 1} (repeat ${entry.repeat})`;
    const { repeat, first, last, ...template } = entry;
    for (const [label, part] of [['first', first], ['last', last]] as const) {
      if (part === undefined) continue;
      if (!isObject(part)) throw new RepeatError(`${where}: "${label}" must be an object of agent fields that replace the template's in its ${label} copy, got ${JSON.stringify(part)}`);
      const bad = Object.keys(part).find((k) => REPEAT_KEYS.includes(k));
      if (bad) throw new RepeatError(`${where}: "${label}" cannot hold "${bad}" (a repeat does not nest)`);
    }
    for (let k = 1; k <= (repeat as number); k++) {
      const position = agents.length + 1;
      const prev = agents.at(-1);
      const previous = isObject(prev) && typeof prev.id === 'string' ? prev.id : null;
      const spec: Json = { ...template, ...(k === 1 ? (first as Json) : {}), ...(k === repeat ? (last as Json) : {}) };
      const at = `${where}, copy ${k} (agent ${position})`;
      agents.push(Object.fromEntries(Object.entries(spec).map(([key, v]) => [key, fill(v, key, { position, count, previous }, at)])));
    }
  });
  return { ...w, agents: agents as AgentSpec[] } satisfies Json as WorkflowSpec;
}

function checkRepeat(a: Json, where: string): number {
  const r = a.repeat;
  if (typeof r !== 'number' || !Number.isInteger(r) || r < 1 || r > MAX_REPEAT) {
    throw new RepeatError(`${where}: "repeat" must be a whole number of agents 1..${MAX_REPEAT}, got ${JSON.stringify(r)}`);
  }
  return r;
}
