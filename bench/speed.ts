/**
 * Speed at scale: agent steps per second of the relay of 32 and of 128, today's path (the shipped
 * config with the loop settings it had when issue 60 was filed patched in: TODAY_PATH) beside the new
 * one (the shipped config as it is, or with --new's patch), in one run, with each phase's achieved
 * matmul FLOP rate against this process's plain matmul rate.
 *
 * For: `npm run -s bench -- speed [--sizes 32,128] [--iterations 2] [--eval-tasks 20] [--new JSON] [--out FILE]`.
 * Not for: learning (the runs are a couple of iterations; bench/scale.ts measures what a run learns).
 *
 * Each (size, path) runs in a child process of its own (bench/child.ts): wasm, 1 thread, the real
 * loop (RunSession, the CLI's setUpRun), no untrained evaluation; the last iteration evaluates
 * `--eval-tasks` held-out problems (greedy and sampled, as every evaluation does). Paths alternate
 * (today, new, today, new) so that the machine's load falls on both alike.
 *   agent steps / s = rollouts x N / (rollout + coach + update seconds), over the timed iterations
 *                     (the first is a warm-up and is left out when there are two or more);
 *   with eval       = the same with the evaluation a run of this config pays per iteration added:
 *                     eval seconds x (config evalTasks / tasks measured) / config evalEvery;
 *   FLOP rate       = matmul FLOPs a phase ran (2·m·k·n counted at the BatchMatMul kernel, which
 *                     every matmul of the engine goes through, the fused decoder's included) / its
 *                     seconds; "of matmul" = that over a plain [2048, 64] x [64, 192] matmul (the
 *                     relay model's MLP shape) and a [2048, 576] x [576, 1536] one (the project's
 *                     usual reference, bench/update.ts) timed in the same process.
 * Matmuls are nearly all of the model's FLOPs (attention scores on ~40-token rows, norms and rope are not
 * counted), so a rate is a floor on the phase's efficiency.
 *
 * Example: npm run -s bench -- speed --sizes 32,128
 *          -> | 128 | today | 16 | 2048 | 3.2 | 3.4 | 10.2 | 120 | ... and | 128 | new | 64 | 8192 | ... | 4.1x |
 */
import os from 'node:os';
import path from 'node:path';
import { mkdtemp, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import * as tf from '@tensorflow/tfjs-core';
import { runAsChild, runInChild, fmt } from './child.ts';
import { tInterval } from '../src/core/stats/intervals.ts';

/**
 * Today's path: the loop settings configs/relay-32.json and relay-128.json had when the speed goal was set
 * (commit d9dfc7b): 16 rollouts an iteration in two passes of 8-row batches, the coach's and the update's
 * batches of 16, no shared prefix, 200 held-out tasks every 5 iterations. The engine under it is today's,
 * less the exact speed paths added since (src/core/engine/paths.ts: small products, RoPE, repeated rows).
 */
export const TODAY_PATH: Record<string, unknown> = {
  promptsPerIteration: 8, samplesPerPrompt: 2, rolloutPasses: 2, rolloutBatch: 16, evalEvery: 5, evalTemperature: 1,
  coach: { batch: 16 }, update: { microBatchSize: 16, sharedPrefix: false, reuseRolloutLogprobs: false, rememberReference: false, whitening: 'batch' },
};
/** The new path: the shipped configs/relay-N.json as they are (their recipe carries the speed settings). */
export const NEW_PATH: Record<string, unknown> = {};

/** Today's path also runs without the engine's later exact speed paths (src/core/engine/paths.ts). */
interface ChildOptions { config: string; patch: Record<string, unknown>; iterations: number; evalTasks: number; stockEngine?: boolean }
type Phase = 'rollout' | 'coach' | 'update' | 'eval';
interface ChildResult {
  n: number;
  rollouts: number;
  evalTasks: number; evalEvery: number; configEvalTasks: number;
  perIteration: Record<Phase, number>[];
  /** CPU seconds of this process per phase and iteration (the cores are shared: wall seconds carry the others' load). */
  cpuPerIteration: Record<Phase, number>[];
  flops: Record<Phase | 'other', number>;
  matmulRelay: number; matmulRef: number;
  backend: string;
}

const PHASES: Phase[] = ['rollout', 'coach', 'update', 'eval'];
const log = (m: string) => process.stderr.write(`[bench speed ${new Date().toISOString().slice(11, 19)}] ${m}\n`);

/** Median GFLOP/s of a plain [m, k] x [k, n] matmul by this process's CPU seconds (one warm-up run first). */
async function timeMatmul(m: number, k: number, n: number, runs: number): Promise<number> {
  const [a, b] = tf.tidy(() => [tf.randomNormal([m, k], 0, 1, 'float32', 1), tf.randomNormal([k, n], 0, 1, 'float32', 2)]);
  const once = async () => {
    const t0 = process.cpuUsage();
    const c = tf.matMul(a, b);
    await c.data();
    c.dispose();
    const t = process.cpuUsage(t0);
    return (t.user + t.system) / 1e6;
  };
  await once();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) times.push(await once());
  tf.dispose([a, b]);
  times.sort((x, y) => x - y);
  return (2 * m * k * n) / times[Math.floor(times.length / 2)] / 1e9;
}

/** Counts 2·batch·m·k·n of every BatchMatMul call into `into[phase()]` (the kernel is wrapped in place). */
function countMatmulFlops(into: Record<string, number>, phase: () => string): void {
  const base = tf.getKernel('BatchMatMul', 'wasm');
  if (!base) throw new Error('bench speed: no wasm BatchMatMul kernel to count');
  const inner = base.kernelFunc;
  tf.unregisterKernel('BatchMatMul', 'wasm');
  tf.registerKernel({
    ...base,
    kernelFunc: (args) => {
      const { a, b } = args.inputs as { a: tf.TensorInfo; b: tf.TensorInfo };
      const { transposeA, transposeB } = args.attrs as unknown as { transposeA: boolean; transposeB: boolean };
      const m = a.shape[a.shape.length - (transposeA ? 1 : 2)];
      const k = a.shape[a.shape.length - (transposeA ? 2 : 1)];
      const n = b.shape[b.shape.length - (transposeB ? 2 : 1)];
      const batch = Math.max(a.shape.slice(0, -2).reduce((x, y) => x * y, 1), b.shape.slice(0, -2).reduce((x, y) => x * y, 1));
      into[phase()] = (into[phase()] ?? 0) + 2 * batch * m * k * n;
      return inner(args);
    },
  });
}

/** Patch `patch` into `base` key by key (objects merged, the rest replaced). */
function patched(base: Record<string, unknown>, patch: Record<string, unknown>): Record<string, unknown> {
  const out = { ...base };
  for (const [k, v] of Object.entries(patch)) {
    out[k] = v && typeof v === 'object' && !Array.isArray(v) && base[k] && typeof base[k] === 'object'
      ? patched(base[k] as Record<string, unknown>, v as Record<string, unknown>) : v;
  }
  return out;
}

/** In the child: one config, `iterations` iterations through the real loop, phases timed and their FLOPs counted. */
async function measure(_backend: string, o: ChildOptions): Promise<ChildResult> {
  const { startBackend } = await import('../src/cli/common.ts');
  const { readConfig, setUpRun } = await import('../src/cli/run-setup.ts');
  const { RunSession } = await import('../src/core/loop/session.ts');
  const { computeFor } = await import('../src/core/compute/lanes.ts');
  const { FileStore } = await import('../src/platform/node/file-store.ts');
  const { describeBackend, currentBackend } = await import('../src/core/engine/backend.ts');
  await startBackend('wasm');
  if (o.stockEngine) {
    const { ENGINE_PATHS } = await import('../src/core/engine/paths.ts');
    for (const k of Object.keys(ENGINE_PATHS) as (keyof typeof ENGINE_PATHS)[]) ENGINE_PATHS[k] = false;
  }
  const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-speed-'));
  try {
    const raw = JSON.parse(await readFile(o.config, 'utf8')) as Record<string, unknown>;
    const configEvalTasks = Number((patched(raw, o.patch).evalTasks as number | undefined) ?? 200);
    const file = path.join(dir, 'config.json');
    // Relative model folders in the config are the project's: the copy is read from the project root.
    const spec = patched(patched(raw, o.patch), { iterations: o.iterations, evalEvery: o.iterations, evalTasks: o.evalTasks, checkpointEvery: 100000 });
    await writeFile(file, JSON.stringify(spec));
    const config = await readConfig(file, {});
    const evalEvery = Number((patched(raw, o.patch).evalEvery as number | undefined) ?? 15);
    const matmulRelay = await timeMatmul(2048, 64, 192, 15);
    const matmulRef = await timeMatmul(2048, 576, 1536, 5);
    let phase = 'other';
    const flops: Record<string, number> = {};
    countMatmulFlops(flops, () => phase);
    const parts = await setUpRun(config);
    const compute = computeFor(parts, null, (m) => log(`warning: ${m}`));
    await mkdir(path.join(dir, 'run'));
    const perIteration: Record<Phase, number>[] = [];
    const cpuPerIteration: Record<Phase, number>[] = [];
    let cpu = { rollout: 0, coach: 0, update: 0, eval: 0 };
    let cpuAt = 0;
    const cpuNow = () => {
      const u = process.cpuUsage();
      return (u.user + u.system) / 1e6;
    };
    const session = await RunSession.open(config, { ...parts, compute }, {
      store: new FileStore(path.join(dir, 'run')), baseline: false,
      emit: () => {},
    });
    session.trainer.on((e) => {
      if (e.type === 'phase') {
        phase = e.status === 'start' ? e.phase : 'other';
        if (e.status === 'start') cpuAt = cpuNow();
        else if (e.phase in cpu) cpu[e.phase as Phase] += cpuNow() - cpuAt;
      }
      if (e.type === 'iteration') {
        const s = e.metrics.seconds;
        perIteration.push({ rollout: s.rollout, coach: s.coach, update: s.update, eval: s.eval });
        cpuPerIteration.push(cpu);
        cpu = { rollout: 0, coach: 0, update: 0, eval: 0 };
        log(`N=${config.workflow.agents.length} iteration ${e.metrics.iteration}: ${PHASES.map((p) => `${p} ${s[p].toFixed(1)} s`).join(', ')}`);
      }
    });
    await session.run({});
    session.dispose();
    return {
      n: config.workflow.agents.length, rollouts: config.promptsPerIteration * config.samplesPerPrompt,
      evalTasks: o.evalTasks, evalEvery, configEvalTasks, perIteration, cpuPerIteration, flops: flops as ChildResult['flops'],
      matmulRelay, matmulRef, backend: describeBackend(currentBackend()!),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

runAsChild(import.meta.url, measure);

interface Row { n: number; path: string; rep: number; r: ChildResult }

/** Seconds (wall or this process's CPU) of the timed iterations (all but the first when there are two or more), summed per phase. */
function timed(r: ChildResult, clock: 'wall' | 'cpu'): Record<Phase, number> & { iterations: number } {
  const all = clock === 'wall' ? r.perIteration : r.cpuPerIteration;
  const its = all.length > 1 ? all.slice(1) : all;
  const sum = { rollout: 0, coach: 0, update: 0, eval: 0, iterations: its.length };
  for (const s of its) for (const p of PHASES) sum[p] += s[p];
  sum.eval = all.at(-1)!.eval; // the last iteration's, the only one that evaluated
  return sum;
}

/** Agent steps per second of a run by one clock: training phases alone, and with the evaluation its config pays per iteration. */
function speed(r: ChildResult, clock: 'wall' | 'cpu') {
  const t = timed(r, clock);
  const steps = r.rollouts * r.n;
  const train = (t.rollout + t.coach + t.update) / t.iterations;
  const evalPer = (t.eval * (r.configEvalTasks / r.evalTasks)) / r.evalEvery;
  return { t, steps, train, evalPer, sps: steps / train, spsEval: steps / (train + evalPer) };
}

/** "4.10x [3.52, 4.68]": the mean of the paired ratios (each run against the today run beside it) and its 95 % t interval. */
function ratioCell(xs: number[]): string {
  if (!xs.length) return '';
  const iv = tInterval(xs);
  return xs.length > 1 ? `${fmt(iv.p, 2)}x [${fmt(iv.low, 2)}, ${fmt(iv.high, 2)}]` : `${fmt(iv.p, 2)}x`;
}

function report(rows: Row[], o: { iterations: number; evalTasks: number; repeats: number; variants: Record<string, Record<string, unknown>> }, load: number[], minutes: number): string {
  const cpu = os.cpus()[0]?.model.trim() ?? 'unknown CPU';
  const first = rows[0].r;
  const lines = [
    '# Speed at scale: agent steps per second, today\'s path and the new one',
    '',
    `- date: ${new Date().toISOString()}; ${cpu}, ${os.cpus().length} cores (shared), Node ${process.version}; backend ${first.backend}, threads 1`,
    `- load average at start ${load.map((x) => x.toFixed(2)).join(' ')}, at the end ${os.loadavg().map((x) => x.toFixed(2)).join(' ')} (${minutes.toFixed(1)} min)`,
    `- today: configs/relay-N.json with ${JSON.stringify(TODAY_PATH)} (its loop settings at d9dfc7b), without the engine's exact speed paths of src/core/engine/paths.ts; ${Object.entries(o.variants).map(([k, v]) => `${k}: the same with ${JSON.stringify(v)}`).join('; ')}`,
    `- ${o.iterations} iteration(s) a run, the first a warm-up (left out when there are two or more); the last evaluates ${o.evalTasks} held-out tasks; ` +
      `${o.repeats} run(s) of each path, alternated (today, new, today, new...)`,
    `- plain matmul in these processes (by CPU seconds): [2048, 64] x [64, 192] ${rows.map((x) => fmt(x.r.matmulRelay)).join(' / ')} GFLOP/s; [2048, 576] x [576, 1536] ${rows.map((x) => fmt(x.r.matmulRef)).join(' / ')} GFLOP/s (one per run, in row order)`,
    '',
    'Agent steps per second by CPU seconds of the run\'s own process (1 thread: on a quiet machine, its wall seconds), the mean over the runs of a path; ' +
      '"vs today": the mean of each run\'s ratio to the today run beside it, with its 95 % t interval (over pairs). Wall-clock figures follow.',
    '',
    '| N | path | rollouts / it | agent steps / it | rollout s | coach s | update s | agent steps / s | vs today | eval s / it (amortised) | steps / s with eval | vs today |',
    '|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  const table = (clock: 'wall' | 'cpu') => {
    for (const n of [...new Set(rows.map((x) => x.n))]) {
      for (const path of [...new Set(rows.map((x) => x.path))]) {
        const mine = rows.filter((x) => x.n === n && x.path === path);
        if (!mine.length) continue;
        const sp = mine.map((x) => speed(x.r, clock));
        const mean = (f: (v: ReturnType<typeof speed>) => number) => sp.reduce((a, v) => a + f(v), 0) / sp.length;
        const pairs = mine.map((x) => [x, rows.find((y) => y.n === n && y.path === 'today' && y.rep === x.rep)] as const).filter(([, t]) => t);
        const ratio = (f: (v: ReturnType<typeof speed>) => number) => path === 'today' ? '' : ratioCell(pairs.map(([x, t]) => f(speed(x.r, clock)) / f(speed(t!.r, clock))));
        const per = (p: Phase) => mean((v) => v.t[p] / v.t.iterations);
        lines.push(`| ${n} | ${path} | ${mine[0].r.rollouts} | ${sp[0].steps} | ${fmt(per('rollout'))} | ${fmt(per('coach'))} | ${fmt(per('update'))} | ` +
          `${fmt(mean((v) => v.sps))} | ${ratio((v) => v.sps)} | ${fmt(mean((v) => v.evalPer))} | ${fmt(mean((v) => v.spsEval))} | ${ratio((v) => v.spsEval)} |`);
      }
    }
  };
  table('cpu');
  lines.push('', 'The same by wall seconds (other processes\' load included):', '');
  lines.push('| N | path | rollouts / it | agent steps / it | rollout s | coach s | update s | agent steps / s | vs today | eval s / it (amortised) | steps / s with eval | vs today |',
    '|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  table('wall');
  lines.push('', 'Achieved matmul FLOP rate per phase, by CPU seconds (all iterations and the evaluation, the first run of each path; GFLOP/s, and % of the ' +
    '[2048, 64] x [64, 192] / [2048, 576] x [576, 1536] rates of the same process), and the matmul GFLOP the phase ran:', '',
    '| N | path | rollout | coach | update | eval |', '|---:|---|---|---|---|---|');
  for (const row of rows.filter((x) => x.rep === 0)) {
    const r = row.r;
    const secs = { rollout: 0, coach: 0, update: 0, eval: 0 };
    for (const s of r.cpuPerIteration) for (const p of PHASES) secs[p] += s[p];
    const cell = (p: Phase) => {
      const g = (r.flops[p] ?? 0) / Math.max(secs[p], 1e-9) / 1e9;
      return `${fmt(g)} (${fmt((100 * g) / r.matmulRelay, 0)} % / ${fmt((100 * g) / r.matmulRef, 0)} %), ${fmt((r.flops[p] ?? 0) / 1e9)} GFLOP`;
    };
    lines.push(`| ${row.n} | ${row.path} | ${PHASES.map(cell).join(' | ')} |`);
  }
  lines.push('', 'agent steps / s = rollouts x N / (rollout + coach + update seconds) of an iteration. "with eval": plus the evaluation the config pays per iteration ' +
    '(eval seconds scaled to its evalTasks, divided by its evalEvery). Other processes share the cores: compare rows of one run, never across runs.', '');
  return lines.join('\n');
}

export async function main(argv: string[]): Promise<void> {
  const o = { sizes: [32, 128], iterations: 2, evalTasks: 20, repeats: 2, patch: NEW_PATH, out: '', paths: [] as string[], variants: {} as Record<string, Record<string, unknown>> };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (value === undefined) throw new Error(`bench speed: ${flag} needs a value`);
    if (flag === '--sizes') o.sizes = value.split(',').map(Number);
    else if (flag === '--iterations') o.iterations = Number(value);
    else if (flag === '--eval-tasks') o.evalTasks = Number(value);
    else if (flag === '--repeats') o.repeats = Number(value);
    else if (flag === '--new') o.patch = JSON.parse(value) as Record<string, unknown>;
    else if (flag === '--variant') {
      const at = value.indexOf('=');
      if (at < 1) throw new Error(`bench speed: --variant takes name=JSON, got ${value}`);
      o.variants[value.slice(0, at)] = JSON.parse(value.slice(at + 1)) as Record<string, unknown>;
    }
    else if (flag === '--paths') o.paths = value.split(',');
    else if (flag === '--out') o.out = value;
    else throw new Error(`bench speed: unknown option ${flag} (known: --sizes, --iterations, --eval-tasks, --repeats, --new, --variant, --paths, --out)`);
  }
  o.variants = { new: o.patch, ...o.variants };
  if (!o.paths.length) o.paths = ['today', ...Object.keys(o.variants)];
  for (const p of o.paths) if (p !== 'today' && !o.variants[p]) throw new Error(`bench speed: --paths names "${p}", which is neither today nor a --variant`);
  if (o.sizes.some((n) => ![1, 2, 3, 4, 5, 6, 8, 16, 32, 64, 128].includes(n))) throw new Error(`bench speed: --sizes must name configs/relay-N.json files, got ${o.sizes.join(',')}`);
  if (!(Number.isInteger(o.iterations) && o.iterations >= 1)) throw new Error('bench speed: --iterations must be a whole number of 1 or more');
  if (!(Number.isInteger(o.evalTasks) && o.evalTasks >= 1 && o.evalTasks <= 200)) throw new Error('bench speed: --eval-tasks must be a whole number in 1..200');
  const load = os.loadavg();
  const started = performance.now();
  const rows: Row[] = [];
  if (!(Number.isInteger(o.repeats) && o.repeats >= 1)) throw new Error('bench speed: --repeats must be a whole number of 1 or more');
  for (const n of o.sizes) for (let rep = 0; rep < o.repeats; rep++) {
    for (const p of o.paths) {
      log(`relay-${n}, ${p} path, run ${rep + 1} of ${o.repeats}...`);
      const r = await runInChild<ChildResult | null>(import.meta.url, 'wasm', {
        config: `configs/relay-${n}.json`, patch: p === 'today' ? TODAY_PATH : o.variants[p], iterations: o.iterations, evalTasks: o.evalTasks,
        ...(p === 'today' ? { stockEngine: true } : {}),
      } satisfies ChildOptions, (why) => {
        throw new Error(`bench speed: relay-${n} ${p}: ${why}`);
      });
      rows.push({ n, path: p, rep, r: r! });
    }
  }
  const text = report(rows, o, load, (performance.now() - started) / 60000);
  console.log(text);
  if (o.out) await writeFile(o.out, text + `\nCommand: \`npm run -s bench -- speed ${argv.join(' ')}\`\n`);
}
