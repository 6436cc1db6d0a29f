/**
 * The cost of the code tools' isolation, side by side with another checkout of the project (the old
 * path: Pyodide in a worker thread of the host): start-up (the first run of a fresh tool) and each run,
 * replayed on the code blocks that a math-team run's agents actually wrote (its trajectories.jsonl),
 * and what that changes in the run's iteration time.
 *
 * For: docs/threat-model.md's cost table. Not for: the red team (test/unit/tools/red-team.test.ts).
 *
 * Method: every round starts each side's tool fresh (alternating which side goes first), times its
 * first run (start-up), then replays every Python block of the run in order, one Workspace per
 * trajectory, with the rollout's own 2 s time limit. Rounds are paired: the interval of a difference is
 * Student's t over the rounds' differences. The change to an iteration is the difference in tool
 * seconds per iteration against the iteration's measured seconds (metrics.jsonl: rollout + coach +
 * update + eval + checkpoint, the mean over the run's iterations).
 *
 * Example: node bin/mappa.js train --config C --coach rule --threads 1 --backend wasm --yes --out runs/math-2it
 *          git worktree add ../old <commit> && ln -s "$PWD/node_modules" ../old/node_modules
 *          npm run -s bench -- sandbox --run runs/math-2it --old ../old --rounds 5
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { extractCodeBlocks } from '../src/core/tools/code-blocks.ts';
import type { Sandbox } from '../src/core/tools/sandbox.ts';
import { mean, tInterval, type Interval } from '../src/core/stats/intervals.ts';

interface Side {
  name: string;
  root: string;
  startupMs: number[];
  perIterationMs: number[]; // tool milliseconds per iteration, one per round
  perCallMs: number[]; // mean milliseconds per call, one per round
}

function flag(argv: string[], name: string): string | undefined {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : undefined;
}

export async function main(argv: string[]): Promise<void> {
  const runDir = flag(argv, 'run');
  const oldRoot = flag(argv, 'old');
  const rounds = Number(flag(argv, 'rounds') ?? 5);
  if (!runDir || !oldRoot) throw new Error('bench sandbox: give --run DIR (a math run folder with trajectories.jsonl) and --old DIR (the other checkout, with node_modules)');
  if (!Number.isInteger(rounds) || rounds < 2) throw new Error(`bench sandbox: --rounds must be an integer of at least 2, got ${flag(argv, 'rounds')}`);
  const trajectories = readFileSync(path.join(runDir, 'trajectories.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  const metrics = readFileSync(path.join(runDir, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l)).filter((m) => m.seconds);
  const iterations = metrics.length;
  const iterationSeconds = mean(metrics.map((m) => Object.values(m.seconds as Record<string, number>).reduce((a, b) => a + b, 0)));
  // Each trajectory's Python blocks, as the rollout ran them (in order, sharing that trajectory's workspace).
  const blocks = trajectories.map((t) => t.actions.flatMap((a: { output: string }) => extractCodeBlocks(a.output, ['python']).map((b) => b.code)));
  const calls = blocks.reduce((n, b) => n + b.length, 0);

  const sides: Side[] = [
    { name: 'old (worker thread)', root: path.resolve(oldRoot), startupMs: [], perIterationMs: [], perCallMs: [] },
    { name: 'new (jailed process)', root: path.resolve('.'), startupMs: [], perIterationMs: [], perCallMs: [] },
  ];
  for (let r = 0; r < rounds; r++) {
    for (const side of r % 2 === 0 ? sides : [...sides].reverse()) {
      const { createSandbox } = await import(path.join(side.root, 'src/core/tools/code-sandbox.ts'));
      const { Workspace } = await import(path.join(side.root, 'src/core/tools/workspace.ts'));
      const sandbox: Sandbox = createSandbox();
      let t0 = performance.now();
      const first = await sandbox.run('print(0)', { timeoutMs: 60_000 });
      if (!first.ok) throw new Error(`bench sandbox: ${side.name} failed to start: ${first.error?.message}`);
      side.startupMs.push(performance.now() - t0);
      t0 = performance.now();
      for (const list of blocks) {
        const workspace = new Workspace();
        for (const code of list) await sandbox.run(code, { timeoutMs: 2000, workspace, owner: 'executor' });
      }
      const total = performance.now() - t0;
      side.perIterationMs.push(total / iterations);
      side.perCallMs.push(total / calls);
      await sandbox.dispose();
      console.error(`round ${r + 1}/${rounds} ${side.name}: start-up ${side.startupMs.at(-1)!.toFixed(0)} ms, ${calls} calls in ${total.toFixed(0)} ms`);
    }
  }

  const [oldSide, newSide] = sides;
  const diff = (f: (s: Side) => number[]) => f(newSide).map((x, i) => x - f(oldSide)[i]);
  const fmt = (i: Interval, digits = 1) => `${i.p.toFixed(digits)} [${i.low.toFixed(digits)}, ${i.high.toFixed(digits)}]`;
  const shareOfIteration = (ms: Interval): Interval => ({
    p: (100 * ms.p) / 1000 / iterationSeconds, low: (100 * ms.low) / 1000 / iterationSeconds, high: (100 * ms.high) / 1000 / iterationSeconds,
  });
  console.log(`Code tools, old vs new isolation, on ${runDir}: ${trajectories.length} trajectories, ${calls} Python calls over ${iterations} iterations `
    + `(${(calls / iterations).toFixed(1)} per iteration); an iteration took ${iterationSeconds.toFixed(1)} s; ${rounds} paired rounds; mean [95 % t interval].\n`);
  console.log('| measure | old (worker thread) | new (jailed process) | new - old | new - old, % of an iteration |');
  console.log('|---|---:|---:|---:|---:|');
  const row = (label: string, f: (s: Side) => number[], share: boolean) => {
    const d = tInterval(diff(f));
    console.log(`| ${label} | ${fmt(tInterval(f(oldSide)))} | ${fmt(tInterval(f(newSide)))} | ${fmt(d)} | ${share ? `${fmt(shareOfIteration(d), 2)} %` : '-'} |`);
  };
  row('start-up: first run of a fresh tool, ms (paid once per run, and after a kill)', (s) => s.startupMs, true);
  row('one run, ms (mean over the run\'s calls)', (s) => s.perCallMs, false);
  row('tool time per iteration, ms', (s) => s.perIterationMs, true);
}
