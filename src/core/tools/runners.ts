/**
 * The tools a team's code runs on: one Sandbox per code block language (code-blocks.ts), the same
 * object under every language it serves, so the rollout runner looks a block's runner up instead
 * of knowing which tool takes which language. A language with no runner: its blocks are not run.
 *
 * For: runRollouts' options and the parts a run is built from (CLI, page, lane workers).
 * Not for: running code (sandbox.ts, code-sandbox.ts, sql.ts).
 *
 * Example: const tools = toolsFor(workflow, { code: createSandbox, sql: createSqlTool });
 *          // math team: { python: code, javascript: code }; data team: { sql } (Python too if an agent uses it)
 *          await tools[block.language]?.run(block.code, { workspace });
 *          await disposeTools(tools);       // code.dispose() once, then the SQL tool's
 */
import type { BlockLanguage } from './code-blocks.ts';
import type { Sandbox } from './sandbox.ts';

export type ToolRunners = Partial<Record<BlockLanguage, Sandbox>>;

/**
 * The runners a workflow's agents use, each made (or handed out again) by `make` only when some
 * agent uses it: one code sandbox for Python and JavaScript, and the SQL tool. The CLI, the page's
 * lab and its lane workers all build a team's tools with this.
 */
export function toolsFor(workflow: { agents: { tools: readonly string[] }[] }, make: { code: () => Sandbox; sql: () => Sandbox }): ToolRunners {
  const uses = (tool: BlockLanguage) => workflow.agents.some((a) => a.tools.includes(tool));
  const tools: ToolRunners = {};
  if (uses('python') || uses('javascript')) tools.python = tools.javascript = make.code();
  if (uses('sql')) tools.sql = make.sql();
  return tools;
}

/** Disposes each runner once, however many languages it serves. */
export async function disposeTools(tools: ToolRunners): Promise<void> {
  for (const runner of new Set(Object.values(tools))) await runner?.dispose();
}
