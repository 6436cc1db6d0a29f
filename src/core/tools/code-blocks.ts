// Finds the fenced code blocks in an agent's reply, so each can be run in the sandbox.
// For: Markdown fences opened by three or more backticks. Not for: indented code or inline `code`.
//
// Example: extractCodeBlocks("Let me check:\n```py\nprint(1)\n```\n```js\nconsole.log(2)\n```")
//   -> [{language: 'python', code: 'print(1)'}, {language: 'javascript', code: 'console.log(2)'}]
// A bare ``` block counts as Python; ```sql blocks (for the SQL tool, tools/sql.ts) are returned only
// when asked for; blocks in other languages (```output, ```json, ```bash) are skipped, so the
// observations we append ourselves are never executed again.

import type { SandboxLanguage } from './sandbox.ts';

export type BlockLanguage = SandboxLanguage | 'sql';

export interface CodeBlock<L extends BlockLanguage = SandboxLanguage> {
  language: L;
  code: string;
}

const LANGUAGE_TAGS: Record<string, BlockLanguage> = {
  '': 'python',
  python: 'python',
  python3: 'python',
  py: 'python',
  js: 'javascript',
  javascript: 'javascript',
  node: 'javascript',
  sql: 'sql',
  duckdb: 'sql',
};

/** Blocks in `languages` (default Python and JavaScript; pass ['python', 'javascript', 'sql'] for SQL too). */
export function extractCodeBlocks(text: string): CodeBlock[];
export function extractCodeBlocks<L extends BlockLanguage>(text: string, languages: readonly L[]): CodeBlock<L>[];
export function extractCodeBlocks(text: string, languages: readonly BlockLanguage[] = ['python', 'javascript']): CodeBlock<BlockLanguage>[] {
  const blocks: CodeBlock<BlockLanguage>[] = [];
  const lines = text.replace(/\r\n/g, '\n').split('\n');
  let open: { fence: string; tag: string; body: string[] } | undefined;
  for (const line of lines) {
    if (!open) {
      const start = /^\s{0,3}(`{3,})\s*([A-Za-z0-9_+-]*)[^`]*$/.exec(line);
      if (start) open = { fence: start[1], tag: start[2].toLowerCase(), body: [] };
      continue;
    }
    const trimmed = line.trim();
    if (trimmed.startsWith(open.fence) && /^`+$/.test(trimmed)) {
      const language = LANGUAGE_TAGS[open.tag];
      if (language && languages.includes(language)) blocks.push({ language, code: open.body.join('\n') });
      open = undefined;
    } else {
      open.body.push(line);
    }
  }
  // An unclosed fence at the end (the model ran out of tokens) is still run: small models often stop there.
  if (open && LANGUAGE_TAGS[open.tag] && languages.includes(LANGUAGE_TAGS[open.tag]) && open.body.some((l) => l.trim() !== '')) {
    blocks.push({ language: LANGUAGE_TAGS[open.tag], code: open.body.join('\n') });
  }
  return blocks;
}
