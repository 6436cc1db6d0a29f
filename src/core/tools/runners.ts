/**
 * The tools a team's code runs on: one Sandbox per code block language (code-blocks.ts), the same
 * object under every language it serves, so the rollout runner looks a block's runner up instead
 * of knowing which tool takes which language. A language with no runner: its blocks are not run.
 *
 * For: runRollouts' options and the parts a run is built from (CLI, page, lane workers).
 * Not for: running code (sandbox.ts, code-sandbox.ts, sql.ts).
 *
 * Example: const code = createSandbox();   // Python and JavaScript
 *          const tools: ToolRunners = { python: code, javascript: code, sql: createSqlTool() };
 *          await tools[block.language]?.run(block.code, { workspace });
 *          await disposeTools(tools);       // code.dispose() once, then the SQL tool's
 */
import type { BlockLanguage } from './code-blocks.ts';
import type { Sandbox } from './sandbox.ts';

export type ToolRunners = Partial<Record<BlockLanguage, Sandbox>>;

/** Disposes each runner once, however many languages it serves. */
export async function disposeTools(tools: ToolRunners): Promise<void> {
  for (const runner of new Set(Object.values(tools))) await runner?.dispose();
}
