/**
 * The check every project wasm kernel's test makes: the committed bytes (src/core/engine/kernels/<name>-wasm-bytes.ts)
 * are what scripts/build-kernels.sh builds from the C source, where the clang that built them is installed (skipped,
 * saying so, elsewhere; .ci/run installs Debian's). The build rewrites every kernel's bytes file; all are put back.
 * Example: committedBytesTest('bmm', BMM_WASM_COMPILER);   // inside a describe block
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { repoRoot } from './webgpu.ts';

export function committedBytesTest(name: string, compiler: string): void {
  const version = spawnSync('clang', ['--version'], { encoding: 'utf8' });
  const clang = version.status === 0 ? version.stdout.split('\n')[0] : null;
  const why = clang === null || spawnSync('wasm-ld', ['--version']).status !== 0
    ? 'clang and wasm-ld are not installed; apt-get install clang lld'
    : clang !== compiler ? `this machine has "${clang}", the bytes were built with "${compiler}"` : null;
  it.skipIf(why !== null)(`the committed bytes are what scripts/build-kernels.sh builds from the C source${why ? ` (skipped: ${why})` : ''}`, () => {
    const dir = path.join(repoRoot, 'src/core/engine/kernels');
    const files = readdirSync(dir).filter((f) => f.endsWith('-wasm-bytes.ts')).map((f) => path.join(dir, f));
    const committed = files.map((f) => readFileSync(f, 'utf8'));
    try {
      execFileSync('sh', [path.join(repoRoot, 'scripts/build-kernels.sh')], { cwd: repoRoot, stdio: 'pipe' });
      expect(readFileSync(path.join(dir, `${name}-wasm-bytes.ts`), 'utf8')).toBe(committed[files.indexOf(path.join(dir, `${name}-wasm-bytes.ts`))]);
    } finally {
      // leave the committed files as they were, whatever the build wrote
      files.forEach((f, i) => writeFileSync(f, committed[i]));
    }
  });
}
