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
 *          npm run -s bench -- sandbox --bombs [--root ../old]   (the memory and time bombs, on this checkout or another)
 */
import { readdirSync, readFileSync } from 'node:fs';
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

/** Resident MB of this process and all its descendants (Linux /proc; this process alone elsewhere). */
function treeRssMb(): number {
  const parents = new Map<number, number>();
  const rss = new Map<number, number>();
  try {
    for (const name of readdirSync('/proc')) {
      if (!/^\d+$/.test(name)) continue;
      try {
        const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        parents.set(Number(name), Number(fields[1]));
        rss.set(Number(name), Number(fields[21]) * 4096);
      } catch {
        /* gone meanwhile */
      }
    }
  } catch {
    return process.memoryUsage().rss / 2 ** 20;
  }
  let total = 0;
  for (const [pid, bytes] of rss) {
    for (let p: number | undefined = pid; p && p > 1; p = parents.get(p)) {
      if (p === process.pid) {
        total += bytes;
        break;
      }
    }
  }
  return total / 2 ** 20;
}

function flag(argv: string[], name: string): string | undefined {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : undefined;
}

/**
 * `--bombs`: each memory and time bomb of the issue on the tools of --root (default this checkout), with the host's peak
 * resident memory over its start (sampled every 10 ms), the run's wall time and how it ended.
 */
async function bombs(root: string): Promise<void> {
  const { createSandbox } = await import(path.join(root, 'src/core/tools/code-sandbox.ts'));
  const { createSqlTool } = await import(path.join(root, 'src/core/tools/sql.ts'));
  const { Workspace } = await import(path.join(root, 'src/core/tools/workspace.ts'));
  const code = createSandbox();
  const sql = createSqlTool();
  await code.run('print(0)', { timeoutMs: 60_000 });
  await code.run('0', { language: 'javascript' });
  await sql.run('SELECT 1');
  const cases: { name: string; run: () => Promise<{ error?: { kind: string } }>; limit: string }[] = [
    { name: 'Python: 15 x bytearray(100 MB) kept', limit: '256 MB', run: () => code.run('x = [bytearray(100 * 2**20) for _ in range(15)]', { memoryMb: 256 }) },
    { name: 'Python: print of 120 MB', limit: '512 MB', run: () => code.run("import sys; sys.stdout.write('x' * (120 * 2**20))", { memoryMb: 512 }) },
    { name: 'Python: 80 MB of files in the workspace', limit: '64 MB workspace', run: () => code.run("for i in range(20): open('f%d' % i, 'wb').write(b'x' * 4 * 2**20)", { memoryMb: 512, workspace: new Workspace() }) },
    { name: 'Python: while True: pass', limit: '2000 ms', run: () => code.run('while True: pass', { timeoutMs: 2000 }) },
    { name: 'JS: array bomb', limit: '256 MB', run: () => code.run('const a = []; for (;;) a.push(new Array(1e6).fill(1.5));', { language: 'javascript', memoryMb: 256, timeoutMs: 20_000 }) },
    { name: 'JS: console.log of 120 MB', limit: '512 MB', run: () => code.run('console.log("x".repeat(120 * 2**20))', { language: 'javascript', memoryMb: 512, timeoutMs: 20_000 }) },
    { name: 'JS: writeFile 8 x 64 MB', limit: '64 MB workspace', run: () => code.run('const s = "x".repeat(64 * 2**20); for (let i = 0; i < 8; i++) writeFile("f" + i, s);', { language: 'javascript', memoryMb: 512, timeoutMs: 20_000, workspace: new Workspace() }) },
    { name: 'JS: while (true) {}', limit: '2000 ms', run: () => code.run('while (true) {}', { language: 'javascript', timeoutMs: 2000 }) },
    { name: 'SQL: endless recursive CTE', limit: '2000 ms', run: () => sql.run('WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t) SELECT count(*) FROM t', { timeoutMs: 2000 }) },
  ];
  console.log('| bomb | limit | ended as | wall ms | host peak RSS over its start, MB | host + interpreter processes, peak over start, MB | longest event-loop stall, ms |');
  console.log('|---|---|---|---:|---:|---:|---:|');
  for (const c of cases) {
    const rss = () => process.memoryUsage().rss / 2 ** 20;
    const start = rss();
    const treeStart = treeRssMb();
    let peak = start;
    let treePeak = treeStart;
    const treeTimer = setInterval(() => (treePeak = Math.max(treePeak, treeRssMb())), 25);
    let last = performance.now();
    let stall = 0;
    const timer = setInterval(() => {
      const now = performance.now();
      stall = Math.max(stall, now - last);
      last = now;
      peak = Math.max(peak, rss());
    }, 10);
    const t0 = performance.now();
    const r = await c.run();
    const wall = performance.now() - t0;
    clearInterval(timer);
    clearInterval(treeTimer);
    // A run that held the thread let no sample through: the samples at its end count too.
    stall = Math.max(stall, performance.now() - last);
    peak = Math.max(peak, rss());
    treePeak = Math.max(treePeak, treeRssMb());
    console.log(`| ${c.name} | ${c.limit} | ${r.error?.kind ?? 'ok'} | ${wall.toFixed(0)} | ${(peak - start).toFixed(0)} | ${(treePeak - treeStart).toFixed(0)} | ${stall.toFixed(0)} |`);
  }
  await code.dispose();
  await sql.dispose();
}

export async function main(argv: string[]): Promise<void> {
  if (argv.includes('--bombs')) return bombs(path.resolve(flag(argv, 'root') ?? '.'));
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
