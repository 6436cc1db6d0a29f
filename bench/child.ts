/**
 * Benchmarks measure each backend in a child process of their own, so memory figures are per backend
 * and backends do not disturb each other. This file is both halves of that protocol:
 *   parent: runInChild(script, backend, opts, onFail) spawns `node --import tsx <script> --worker <backend> <json>`
 *           and returns the result the child printed after `mark`;
 *   child:  runAsChild(script, mark, measure) does the measuring when the script was started that way.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const RESULT_MARK = 'BENCH_RESULT ';

export function runInChild<T>(scriptUrl: string, backend: string, opts: unknown, onFail: (why: string) => T): Promise<T> {
  const script = fileURLToPath(scriptUrl);
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', script, '--worker', backend, JSON.stringify(opts)], {
      cwd: path.resolve(path.dirname(script), '..'), stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderrTail = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => {
      process.stderr.write(b);
      stderrTail = (stderrTail + b.toString()).slice(-600);
    });
    child.on('close', (code, signal) => {
      const line = stdout.split('\n').find((l) => l.startsWith(RESULT_MARK));
      if (line) return resolve(JSON.parse(line.slice(RESULT_MARK.length)) as T);
      const why = signal ? `killed by ${signal}` : `exit code ${code}`;
      resolve(onFail(`worker failed (${why}): ${stderrTail.trim().split('\n').slice(-3).join(' / ')}`));
    });
  });
}

/** In the child (started by runInChild): measure, print the result line, exit (runtimes may keep handles open). */
export function runAsChild<O>(scriptUrl: string, measure: (backend: string, opts: O) => Promise<unknown>): void {
  if (!process.argv[1] || path.resolve(process.argv[1]) !== fileURLToPath(scriptUrl) || process.argv[2] !== '--worker') return;
  measure(process.argv[3], JSON.parse(process.argv[4]) as O)
    .then((r) => {
      process.stdout.write(`${RESULT_MARK}${JSON.stringify(r)}\n`);
      process.exit(0);
    })
    .catch((err: unknown) => {
      console.error((err as Error).stack ?? err);
      process.exit(1);
    });
}

/** A number for a table: 'n/a' when missing, fewer decimals as it grows. */
export function fmt(x: number | undefined | null, digits?: number): string {
  if (x === undefined || x === null || !Number.isFinite(x)) return 'n/a';
  const d = digits ?? (x >= 100 ? 0 : x >= 10 ? 1 : x >= 1 ? 2 : 3);
  return x.toFixed(d);
}
