// The loop and the update read as short named steps: no function in src/core/loop or src/core/rl is
// longer than 60 lines (counted by the TypeScript parser, first line to last, nested ones on their own).
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = path.resolve(__dirname, '../../..');
const MAX_LINES = 60;

/** Every function of `file` with a body: its name (or its variable's), first line and length in lines. */
export function functionLengths(file: string): { name: string; line: number; lines: number }[] {
  const src = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const out: { name: string; line: number; lines: number }[] = [];
  const visit = (n: ts.Node) => {
    if ((ts.isFunctionDeclaration(n) || ts.isMethodDeclaration(n) || ts.isArrowFunction(n) || ts.isFunctionExpression(n) || ts.isConstructorDeclaration(n)) && n.body) {
      const first = src.getLineAndCharacterOfPosition(n.getStart()).line;
      const last = src.getLineAndCharacterOfPosition(n.end).line;
      const named = (n as ts.FunctionDeclaration).name?.getText(src) ?? (ts.isVariableDeclaration(n.parent) ? n.parent.name.getText(src) : '(anonymous)');
      out.push({ name: named, line: first + 1, lines: last - first + 1 });
    }
    ts.forEachChild(n, visit);
  };
  visit(src);
  return out;
}

describe('short functions in the loop and the update', () => {
  for (const dir of ['src/core/loop', 'src/core/rl']) {
    it(`${dir}: none over ${MAX_LINES} lines`, () => {
      const long = fs.readdirSync(path.join(root, dir)).filter((f) => f.endsWith('.ts'))
        .flatMap((f) => functionLengths(path.join(root, dir, f)).filter((x) => x.lines > MAX_LINES).map((x) => `${dir}/${f}:${x.line} ${x.name} (${x.lines} lines)`));
      expect(long).toEqual([]);
    });
  }

  it('counts as a reader would (a hand-checked file)', () => {
    const lengths = functionLengths(path.join(root, 'src/core/rl/advantages.ts'));
    expect(lengths.find((x) => x.name === 'computeAdvantages')?.lines).toBeGreaterThan(20);
  });
});
