/**
 * The page's "Scale the team", headless: the lab's own runner (src/core/lab/experiments/scale/scale-run.ts,
 * ScaleExperiment with SCALE_PLAN) trains its runs in Node on one wasm thread, each run stored in a folder as
 * the page stores it, and prints what the page would draw: per size the untrained team and each mode's team
 * accuracy (greedy, Wilson) with the paired gains over the same held-out problems, the mean step accuracy,
 * the luck floor beside pᴺ, the team accuracy the trained steps predict, each run's seconds, and the words.
 *
 * For: measuring the experiment's budget (does team accuracy move beyond the noise, and in how long).
 * Not for: the page's drawing (test/e2e/scale.test.ts) or the sweep over methods (bench/scale.ts).
 *
 * Example: npm run -s bench -- scale-page                      (the shipped plan)
 *          npm run -s bench -- scale-page --iterations 4 --lr 0.004 --sizes 8,32 --out bench/results/scale-page.md
 */
import os from 'node:os';
import path from 'node:path';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { chanceText, SCALE_PLAN, type ScalePlan, type ScalePoint, type ScaleView } from '../src/core/lab/experiments/scale/scale-maths.ts';
import type { Interval } from '../src/core/stats/intervals.ts';

const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
const pts = (x: number) => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)}`;
const span = (i: Interval) => `[${pts(i.low)}, ${pts(i.high)}]`;
const acc = (p: ScalePoint | null) => (p ? `${pct(p.team.p)} [${(p.team.low * 100).toFixed(1)}, ${(p.team.high * 100).toFixed(1)}]` : '-');
const step = (p: ScalePoint | null) => (p ? `${pct(p.step.p)} (${p.right}/${p.judged})` : '-');
const gain = (i: Interval | null) => (i ? `${pts(i.p)} ${span(i)}${i.low > 0 ? ' **beyond the noise**' : i.high < 0 ? ' (below)' : ''}` : '-');
const chance = (x: number | null) => (x === null ? '-' : chanceText(x));

function parse(argv: string[]): { plan: ScalePlan; out: string } {
  const plan: ScalePlan = { ...SCALE_PLAN, sizes: [...SCALE_PLAN.sizes] };
  let out = '';
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (value === undefined) throw new Error(`bench scale-page: ${flag} needs a value`);
    const num = Number(value);
    if (flag === '--out') out = value;
    else if (flag === '--sizes') plan.sizes = value.split(',').map(Number);
    else if (flag === '--iterations' && Number.isInteger(num) && num > 0) plan.iterations = num;
    else if (flag === '--eval-tasks' && Number.isInteger(num) && num > 0) plan.evalTasks = num;
    else if (flag === '--prompts' && Number.isInteger(num) && num > 0) plan.promptsPerIteration = num;
    else if (flag === '--lr' && num > 0) plan.lr = num;
    else if (flag === '--seed' && Number.isInteger(num)) plan.seed = num;
    else {
      throw new Error(`bench scale-page: ${flag} ${value} is not understood `
        + '(flags: --sizes 8,16,32 --iterations N --eval-tasks N --prompts N --lr X --seed N --out FILE)');
    }
  }
  if (plan.sizes.some((n) => !Number.isInteger(n) || n < 1 || n > 128)) {
    throw new Error('bench scale-page: --sizes takes whole numbers from 1 to 128, e.g. 8,16,32');
  }
  return { plan, out };
}

export async function main(argv: string[]): Promise<void> {
  const { plan, out } = parse(argv);
  const { startBackend } = await import('../src/cli/common.ts');
  const { setUpRun } = await import('../src/cli/run-setup.ts');
  const { FileStore } = await import('../src/platform/node/file-store.ts');
  const { hashString } = await import('../src/core/stats/rng.ts');
  const { ScaleExperiment } = await import('../src/core/lab/experiments/scale/scale-run.ts');
  const { describeBackend, currentBackend } = await import('../src/core/engine/backend.ts');
  await startBackend('wasm');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-scale-page-'));
  const load0 = os.loadavg();
  const t0 = Date.now();
  const cpu0 = process.cpuUsage();
  let last: ScaleView | null = null;
  let said = '';
  try {
    const experiment = new ScaleExperiment({
      parts: (c) => setUpRun(c),
      store: (runId) => Object.assign(new FileStore(path.join(dir, runId)), { describe: async () => {} }),
      runId: (c) => `relay-${c.workflow.agents.length}-${c.rewards.mode}-${(hashString(JSON.stringify(c)) >>> 0).toString(36)}`,
      post: (v) => {
        last = v;
        const c = v.current;
        const line = c ? `${c.n} agents, ${c.mode}, iteration ${c.iteration} of ${c.iterations}` : v.status;
        if (line !== said) process.stderr.write(`[${((Date.now() - t0) / 1000).toFixed(0)} s] ${line}\n`);
        said = line;
      },
    }, plan);
    const how = await experiment.run(new AbortController().signal);
    if (how !== 'done' || !last) throw new Error(`bench scale-page: the experiment ended ${how}`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  const v = last as unknown as ScaleView;
  const wall = (Date.now() - t0) / 1000;
  const used = process.cpuUsage(cpu0);
  const cpu = (used.user + used.system) / 1e6;
  const lines = [
    `# Scale the team, headless (the page's runner in Node)`,
    '',
    `- date: ${new Date().toISOString()}; ${os.cpus()[0]?.model ?? 'cpu'}, ${os.cpus().length} cores (shared), Node ${process.version}; `
      + describeBackend(currentBackend()!),
    `- load average at start ${load0.map((x) => x.toFixed(2)).join(' ')}, at the end ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`,
    `- command: \`npm run -s bench -- scale-page${argv.length ? ` ${argv.join(' ')}` : ''}\``,
    `- plan: ${JSON.stringify(plan)} (${v.rolloutsPerIteration} rollouts an iteration); wall ${wall.toFixed(0)} s (${(wall / 60).toFixed(1)} min), `
      + `training and evaluating ${v.trained?.seconds.toFixed(0) ?? '?'} s; `
      + `CPU ${cpu.toFixed(0)} s (${(cpu / 60).toFixed(1)} min: on one quiet core, about its wall time)`,
    '',
    `Team accuracy: greedy, ${plan.evalTasks} held-out problems, Wilson 95 %; gains paired over the same problems. `
      + 'Step accuracy: greedy, pooled over the agents.',
    '',
    '| N | untrained team | process team | outcome team | process - untrained | outcome - untrained | process - outcome '
      + '| step: untrained / process / outcome | luck floor (untrained) | pᴺ (untrained) | team predicted by process\'s steps | s: process + outcome |',
    '|---:|---|---|---|---|---|---|---|---:|---:|---:|---|',
    ...v.rows.map((r) => `| ${r.n} | ${acc(r.untrained)} | ${acc(r.final.process)} | ${acc(r.final.outcome)} | `
      + `${gain(r.teamGain.process)} | ${gain(r.teamGain.outcome)} | `
      + `${gain(r.teamGap)} | ${step(r.untrained)} / ${step(r.final.process)} / ${step(r.final.outcome)} | ${chance(r.rewarded)} | ${chance(r.chance)} | `
      + `${chance(r.predictedTeam.process)} | ${r.seconds.process?.toFixed(0) ?? '-'} + ${r.seconds.outcome?.toFixed(0) ?? '-'} |`),
    '',
    `The page's words: ${v.words}`,
    '',
  ];
  const text = lines.join('\n');
  console.log(text);
  if (out) await writeFile(out, text);
}
