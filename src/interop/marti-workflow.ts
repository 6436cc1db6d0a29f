/**
 * The sandbox's team as a workflow file for the authors' trainer: `mappa_workflow.py`, shipped in the
 * export and named by `workflow_func_path`. It implements their workflow interface (an async
 * `workflow(prompt, label, agents, tool_manager, task, metadata, **kwargs)` returning the problem's
 * trajectory, see the fixture's `workflowInterface`) with our own code, and carries the team as data:
 * each agent's system, user and follow-up templates, turn limit, token budget and tools.
 *
 * For: src/interop/marti.ts (the file text; the Python source is in marti-workflow-py.ts).
 * Not for: their stock workflows (the export no longer names them), or running anything here.
 *
 * Example: martiWorkflowFile(resolveTrainConfig({}).workflow)
 *          -> '"""\nThe MAPPA sandbox team "math-chain" as a workflow ...\nTEAM = {\n    "name": "math-chain",\n...'
 */
import type { WorkflowSpec } from '../core/loop/workflow.ts';
import { WORKFLOW_PY } from './marti-workflow-py.ts';

/** The workflow file's name in the export folder and in ./data/mappa on the cluster. */
export const WORKFLOW_FILE = 'mappa_workflow.py';

/** The languages whose fenced blocks the workflow runs, on their SandboxFusion `code_interpreter` tool. */
export const WORKFLOW_LANGUAGES = ['python'];

/**
 * A value as a Python literal: strings as JSON strings (every JSON escape is a Python one), numbers,
 * True / False / None, lists and dicts indented by 4.
 * Example: pyLiteral({ a: [1, 'x"y'], b: null }) -> '{\n    "a": [\n        1,\n        "x\\"y"\n    ],\n    "b": None\n}'
 */
export function pyLiteral(value: unknown, depth = 0): string {
  const pad = (d: number) => ' '.repeat(4 * d);
  if (value === null || value === undefined) return 'None';
  if (typeof value === 'boolean') return value ? 'True' : 'False';
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Error(`pyLiteral: cannot write the number ${value}`);
    return String(value);
  }
  if (typeof value === 'string') return JSON.stringify(value);
  if (Array.isArray(value)) {
    if (!value.length) return '[]';
    return `[\n${value.map((v) => pad(depth + 1) + pyLiteral(v, depth + 1)).join(',\n')}\n${pad(depth)}]`;
  }
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>);
    if (!entries.length) return '{}';
    return `{\n${entries.map(([k, v]) => `${pad(depth + 1)}${JSON.stringify(k)}: ${pyLiteral(v, depth + 1)}`).join(',\n')}\n${pad(depth)}}`;
  }
  throw new Error(`pyLiteral: cannot write a ${typeof value}`);
}

/** The team as the workflow file holds it (snake_case keys, every agent field the rollout reads). */
export function workflowTeam(w: WorkflowSpec): Record<string, unknown> {
  return {
    name: w.name,
    agents: w.agents.map((a) => ({
      id: a.id, role: a.role, system: a.system, user: a.user, follow_up: a.followUp ?? null,
      max_tokens: a.maxTokens, turns: a.turns, tools: a.tools, trainable: a.trainable, final: !!a.final,
    })),
  };
}

/** The whole file: a header naming the team, its data, then the Python source. */
export function martiWorkflowFile(w: WorkflowSpec): string {
  const header = `"""
The MAPPA sandbox team "${w.name}" as a workflow for the MAPPA authors' trainer, written by
"mappa export --target marti": ${w.agents.map((a) => a.role).join(' -> ')}.
Edit TEAM below to change the agents' prompts, turns, budgets or tools; the rest is the sandbox's
rollout (src/core/loop/rollout.ts) and reward (src/core/loop/rewards.ts) in Python.
"""
`;
  return `${header}${WORKFLOW_PY.imports}
# The team, as the sandbox ran it. Templates take {{problem}}, {{position}}, {{count}}, {{team}},
# {{budget}}, {{role}}, {{part}}, {{output:<agent id>}}, {{tool:<agent id>}}, and in follow_up {{observation}}.
TEAM = ${pyLiteral(workflowTeam(w))}

# Fenced blocks in these languages are run on the trainer's code tool; others are left as text.
RUN_LANGUAGES = ${pyLiteral(WORKFLOW_LANGUAGES)}
${WORKFLOW_PY.body}`;
}
