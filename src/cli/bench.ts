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
  const code = await new Promise<number>((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', runner, 'machine', ...argv], { stdio: 'inherit' });
    child.on('error', reject);
    child.on('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0)));
  });
  if (code !== 0) throw new CliError(`bench/machine.ts stopped (exit code ${code}); its reason is printed above`, code);
}
