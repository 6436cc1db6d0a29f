/**
 * A vitest reporter that prints, at the end of a run, every test file's wall time, slowest first,
 * with the share of the run it took: the next slow test is visible on the day it lands.
 * Used beside the default reporter (vite.config.ts).
 *
 * Example (the end of `npm test`):
 *   per-file timings (wall time of each file; files run 2 at a time)
 *        s  share  tests  file
 *     71.2   18 %     5  test/unit/cli/run-safety.test.ts
 */
import type { Reporter, TestModule } from 'vitest/node';

export default class FileTimings implements Reporter {
  private started = performance.now();

  onTestRunStart(): void {
    this.started = performance.now();
  }

  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const rows = modules.map((m) => ({
      file: m.relativeModuleId,
      seconds: m.diagnostic().duration / 1000,
      tests: [...m.children.allTests()].length,
      state: m.state(),
    })).sort((a, b) => b.seconds - a.seconds);
    if (!rows.length) return;
    const sum = rows.reduce((n, r) => n + r.seconds, 0);
    const wall = (performance.now() - this.started) / 1000;
    const lines = rows.map((r) => `${r.seconds.toFixed(1).padStart(8)} ${`${Math.round((100 * r.seconds) / sum)} %`.padStart(6)} ${String(r.tests).padStart(6)}  ${r.file}${r.state === 'failed' ? '  (failed)' : r.state === 'skipped' ? '  (skipped)' : ''}`);
    process.stdout.write(`\nper-file timings (wall time of each file, slowest first; ${rows.length} files, ${sum.toFixed(0)} s in files, ${wall.toFixed(0)} s wall)\n`
      + `       s  share  tests  file\n${lines.join('\n')}\n`);
  }
}
