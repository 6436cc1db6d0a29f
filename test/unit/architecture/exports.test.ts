/**
 * No value export of src/core that nothing imports: a value exported and named in no other file (of src,
 * test, bench, scripts) is either dead or private, and its `export` misleads a reader into looking for its
 * users. Types are left out (a type may be exported to name what an exported function takes).
 *
 * Example: `export const Z95 = 1.96` in stats/intervals.ts, named nowhere else, fails this test; `const Z95` passes.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../..');
function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => e.name === 'node_modules' ? []
    : e.isDirectory() ? sources(path.join(dir, e.name)) : /\.(ts|mjs|js|svelte)$/.test(e.name) ? [path.join(dir, e.name)] : []);
}
const FILES = ['src', 'test', 'bench', 'scripts'].flatMap((d) => sources(path.join(root, d))).map((f) => ({ file: path.relative(root, f), text: fs.readFileSync(f, 'utf8') }));
const EXPORT = /^export\s+(?:async\s+)?(?:const|function\*?|class|let|enum)\s+([A-Za-z_$][\w$]*)/gm;

describe('exports of src/core', () => {
  it('every exported value is named by another file', () => {
    const unused: string[] = [];
    for (const { file, text } of FILES.filter((f) => f.file.startsWith('src/core/') && f.file.endsWith('.ts'))) {
      for (const [, name] of text.matchAll(EXPORT)) {
        const word = new RegExp(`\\b${name.replace(/\$/g, '\\$')}\\b`);
        if (!FILES.some((g) => g.file !== file && word.test(g.text))) unused.push(`${file}: ${name}`);
      }
    }
    expect(unused, 'exported and named nowhere else: drop `export` (or the value)').toEqual([]);
  });
});
