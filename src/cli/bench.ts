/**
 * `mappa bench [options]`: measure this machine — decode tokens/s and update tokens/s at a real
 * model shape on the current backend, with the fraction of the backend's own matrix-vector and
 * matmul rates they reach. The same as `npm run bench -- machine [options]` (bench/machine.ts,
 * which reuses bench/engine.ts and bench/update.ts): this file runs that command in a child process
 * (the benchmarks sit above the CLI and are never imported by it) and hands the options over.
 *
 * Example: mappa bench --shapes smollm2-135m --quick        (a few minutes on a laptop CPU)
 *          mappa bench --backend webgpu --shapes qwen2.5-0.5b --bandwidth-gbs 1008
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { CliError } from './common.ts';

export async function benchCommand(argv: string[]): Promise<void> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write('usage: mappa bench [--backend auto|wasm|cpu|webgpu] [--shapes smollm2-135m,qwen2.5-0.5b] [--layers N] [--context N] ' +
      '[--decode-steps N] [--samples N --prompt N --action N] [--steps N] [--bandwidth-gbs X] [--quick]\n' +
      'Prints a markdown table on stdout, progress on stderr (bench/machine.ts top comment explains the columns).\n');
    return;
  }
  const runner = fileURLToPath(new URL('../../bench/run.ts', import.meta.url));
  // The child's stderr passes through a line late, so that on a failure its last line (the reason) is not
  // printed twice: it becomes this command's one line instead.
  let last = '';
  const code = await new Promise<number>((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', runner, 'machine', ...argv], { stdio: ['inherit', 'inherit', 'pipe'] });
    let partial = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop()!;
      for (const line of lines) {
        if (!line.trim()) continue;
        if (last) process.stderr.write(`${last}\n`);
        last = line;
      }
    });
    child.on('error', reject);
    child.on('close', (c, signal) => {
      if (partial.trim()) {
        if (last) process.stderr.write(`${last}\n`);
        last = partial;
      }
      resolve(c ?? (signal ? 1 : 0));
    });
  });
  if (code === 0) {
    if (last) process.stderr.write(`${last}\n`);
    return;
  }
  throw new CliError(last ? last.replace(/^(mappa:\s*)?/, '') : `bench/machine.ts stopped (exit code ${code})`, code);
}
