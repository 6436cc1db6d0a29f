// The order in which vitest starts the test files: the longest first, so that the two workers end together.
//
// vitest orders files by the durations it cached from the last run, and on a fresh clone (no cache) by nothing
// much: there the longest e2e files could start last, and one of them then ran alone for a minute while the other
// worker sat idle. These files start first, in this order (their wall times on a fresh clone, 2026-12-05:
// sandbox 134 s, lesson 106 s, start 91 s, loop 48 s, truth 48 s, run-safety 40 s, the model CLI 25 s; the rest are
// under 25 s each); every other file follows in vitest's own order.
//
//   test: { sequence: { sequencer: LongestFirst } }   // vite.config.ts

import { BaseSequencer, type TestSpecification } from 'vitest/node';

export const LONGEST_FIRST = [
  'test/e2e/sandbox.test.ts', 'test/e2e/lesson.test.ts', 'test/e2e/start.test.ts', 'test/unit/loop/loop.test.ts',
  'test/e2e/truth.test.ts', 'test/unit/cli/run-safety.test.ts', 'test/unit/model/cli.test.ts',
];

export class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const base = await super.sort(files);
    const rank = (f: TestSpecification) => {
      const i = LONGEST_FIRST.findIndex((name) => f.moduleId.endsWith(name));
      return i < 0 ? LONGEST_FIRST.length : i;
    };
    return base.map((f, i) => ({ f, i })).sort((a, b) => rank(a.f) - rank(b.f) || a.i - b.i).map((x) => x.f);
  }
}
