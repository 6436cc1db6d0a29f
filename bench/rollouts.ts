/**
 * Rollout-cost benchmark (issue 5 acceptance; MAPPA.md section 5): process vs outcome reward with
 * equal budgets over several seeds — how many rollouts each needs to reach a target held-out
 * accuracy, the final accuracy, and the ratio of rollouts (process / outcome; the brief claims
 * about 0.6, i.e. 40 % fewer).
 *
 * For: driving a RunSession in-process (as `mappa train` does), one run after another, each into its own run folder laid out
 * as `mappa train` writes it (config.json, metrics.jsonl with the {iteration: 0, eval} baseline,
 * summary.json, checkpoint/, adapters are not exported), so `mappa compare DIR...` plots them. The
 * numbers come from the same code as `mappa compare` (src/cli/compare.ts).
 * Not for: timing (see bench/engine.ts, bench/update.ts).
 *
 * Equal budgets: both modes run the same iterations x prompts x samples, the same seeds (same
 * curriculum draws and sampling seeds until the policies diverge), the same coach for process.
 * The untrained team is evaluated once: it does not depend on the seed or the reward mode (base
 * model, fixed evaluation seed), so every run's baseline record is that one evaluation.
 * Target: --target, else that baseline's accuracy + 0.10; on the greedy accuracy, or with --metric sampled
 * on the accuracy at the evaluation temperature (MAPPA evaluates at 0.6). The report only reads the
 * finished runs, so one set of runs can be reported on both metrics.
 *
 * Example: npm run bench -- rollouts --seeds 0,1,2 --out runs/rollouts        (long: the full default)
 *          (on 2 cores: `--modes process` and `--modes outcome` as two processes into the same --out,
 *          then the plain command again: it reuses the finished runs and prints the whole report)
 *          npm run bench -- rollouts --quick                                   (tiny random team, ~seconds)
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { initBackend, describeBackend, type BackendName } from '../src/core/engine/backend.ts';
import type { Coach } from '../src/core/coach/coach.ts';
import { cachedCoach } from '../src/core/coach/coach.ts';
import { type TrainConfig } from '../src/core/loop/config.ts';
import { resolveTrainConfig, teamOf } from '../src/core/domains/index.ts';
import { evaluateTeam } from '../src/core/loop/eval-queue.ts';
import type { Team } from '../src/core/loop/team.ts';
import { LocalCompute } from '../src/core/compute/local.ts';
import type { EvalResult } from '../src/core/loop/records.ts';
import type { Compute } from '../src/core/loop/train.ts';
import { RunSession } from '../src/core/loop/session.ts';
import type { LoadedModel } from '../src/core/engine/model/load.ts';
import { disposeTools, type ToolRunners } from '../src/core/tools/runners.ts';
import { createSandbox } from '../src/core/tools/code-sandbox.ts';
import { readRun, summarizeRun, type RunSummary, type TargetMetric } from '../src/cli/compare.ts';
import { FileStore } from '../src/platform/node/file-store.ts';
import { readConfig, setUpRun } from '../src/cli/run-setup.ts';
import { pairCells, pairSeeds } from './arms.ts';
import { formatPercent, formatRatio, logRatioInterval, type Interval } from '../src/core/stats/intervals.ts';

const MODES = ['process', 'outcome'] as const;
type Mode = (typeof MODES)[number];

export interface RolloutsBenchOptions {
  seeds: number[];
  /** Reward modes to run (default both); the report covers the runs found for both. */
  modes: Mode[];
  iterations?: number;
  target?: number;
  /** The held-out accuracy the target is on (default greedy). */
  metric: TargetMetric;
  quick: boolean;
  out: string;
  config?: string;
  backend?: BackendName;
}

export function parseRolloutsArgs(argv: string[]): RolloutsBenchOptions {
  const o: RolloutsBenchOptions = { seeds: [0, 1, 2], modes: [...MODES], metric: 'greedy', quick: false, out: '' };
  const value = (i: number, flag: string) => {
    const v = argv[i + 1];
    if (v === undefined || v.startsWith('--')) throw new Error(`bench rollouts: ${flag} needs a value`);
    return v;
  };
  let seedsGiven = false;
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    if (flag === '--seeds') {
      o.seeds = value(i++, flag).split(',').map((s) => {
        const n = Number(s.trim());
        if (!Number.isInteger(n) || n < 0) throw new Error(`bench rollouts: --seeds must be non-negative integers like 0,1,2, got "${s}"`);
        return n;
      });
      seedsGiven = true;
    } else if (flag === '--modes') {
      o.modes = value(i++, flag).split(',').map((m) => {
        if (!(MODES as readonly string[]).includes(m.trim())) throw new Error(`bench rollouts: --modes takes process and/or outcome (e.g. process,outcome), got "${m}"`);
        return m.trim() as Mode;
      });
    } else if (flag === '--iterations') {
      const n = Number(value(i++, flag));
      if (!Number.isInteger(n) || n <= 0) throw new Error(`bench rollouts: --iterations must be a positive integer, got "${argv[i]}"`);
      o.iterations = n;
    } else if (flag === '--target') {
      const t = Number(value(i++, flag));
      if (!(t >= 0 && t <= 1)) throw new Error(`bench rollouts: --target must be an accuracy in [0, 1] (e.g. 0.4), got "${argv[i]}"`);
      o.target = t;
    } else if (flag === '--metric') {
      const m = value(i++, flag);
      if (m !== 'greedy' && m !== 'sampled') throw new Error(`bench rollouts: --metric takes greedy or sampled (the accuracy at the evaluation temperature), got "${m}"`);
      o.metric = m;
    } else if (flag === '--quick') o.quick = true;
    else if (flag === '--out') o.out = value(i++, flag);
    else if (flag === '--config') o.config = value(i++, flag);
    else if (flag === '--backend') {
      const b = value(i++, flag);
      if (!['cpu', 'wasm', 'webgpu'].includes(b)) throw new Error(`bench rollouts: --backend must be cpu, wasm or webgpu, got "${b}"`);
      o.backend = b as BackendName;
    } else throw new Error(`bench rollouts: unknown option "${flag}". Options: --seeds 0,1,2 --modes process,outcome --iterations N --target X --metric greedy|sampled --quick --out DIR --config FILE --backend cpu|wasm|webgpu`);
  }
  if (o.quick && !seedsGiven) o.seeds = [0, 1];
  if (!o.out) o.out = path.join(os.tmpdir(), `mappa-rollouts-${o.quick ? 'quick-' : ''}${process.pid}-${Date.now()}`);
  return o;
}

/**
 * Tiny settings for the smoke run: the three roles with 4-token budgets and no code tool (starting
 * the Python sandbox costs more than the whole tiny run), 2 iterations, rule-based coach.
 */
export function quickConfig(iterations = 2): TrainConfig {
  return resolveTrainConfig({
    iterations, promptsPerIteration: 2, samplesPerPrompt: 1, evalEvery: 1, evalTasks: 1, checkpointEvery: iterations,
    lora: { rank: 2, targetModules: ['q_proj', 'v_proj'] }, coach: { kind: 'rule' },
    workflow: {
      name: 'math-chain-quick', domain: 'math',
      agents: [
        { id: 'solver', role: 'Problem Solver', system: 'Solver {{position}}/{{count}}', user: 'Problem: {{problem}}', maxTokens: 4, turns: 1, tools: [], trainable: true },
        { id: 'executor', role: 'Code Executor', system: 'Executor', user: '{{problem}}\n{{output:solver}}', maxTokens: 4, turns: 1, tools: [], trainable: true },
        { id: 'verifier', role: 'Verifier', system: 'Verifier', user: '{{output:executor}}\n{{tool:executor}}', maxTokens: 4, turns: 1, tools: [], trainable: true, final: true },
      ],
    },
  });
}

const log = (msg: string) => process.stderr.write(`[bench rollouts ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

/** What a benchmark run trains with; `compute` says where the work runs (default: this thread alone, runOne adds it). */
export interface Parts { team: Team; agentModel: LoadedModel; coach: Coach; tools: ToolRunners; compute?: Compute }

async function openParts(o: RolloutsBenchOptions, config: TrainConfig): Promise<Parts> {
  if (o.quick) {
    const { tinyTeamModel } = await import('../test/helpers/tiny-team.ts');
    const tools: ToolRunners = {};
    if (config.workflow.agents.some((a) => a.tools.length > 0)) tools.python = tools.javascript = createSandbox();
    return { team: teamOf(config.workflow), agentModel: await tinyTeamModel(1), coach: cachedCoach(teamOf(config.workflow).ruleCoach()), tools };
  }
  for (const spec of [config.agentModel, ...(config.coach.kind === 'model' ? [config.coach.model] : [])]) {
    if (!/^https?:\/\//.test(spec) && !existsSync(spec)) {
      throw new Error(`bench rollouts: model folder "${spec}" does not exist. The shipped tiny models (models/agent, models/judge) ` +
        'are written by scripts/pretrain.ts; build them first, pass --config FILE naming other models, or use --quick');
    }
  }
  return setUpRun(config);
}

/**
 * Whether `dir` holds a finished run of `config` (its summary.json written): such a run is reused, so
 * the modes or seeds can run in separate processes (one per core) into one --out and a last call
 * reports them all. A run of another config is an error; an unfinished one is an error only when this
 * process would run it (`mine`): otherwise another process (the other `--modes`) may be writing it.
 */
export async function finishedRun(config: TrainConfig, dir: string, mine: boolean): Promise<boolean> {
  if (!existsSync(path.join(dir, 'metrics.jsonl'))) return false;
  // Compared once resolved: a key added to the config since the run, at its default, is the same run.
  const same = existsSync(path.join(dir, 'config.json')) &&
    JSON.stringify(resolveTrainConfig(JSON.parse(await readFile(path.join(dir, 'config.json'), 'utf8')))) === JSON.stringify(resolveTrainConfig(config));
  if (same && existsSync(path.join(dir, 'summary.json'))) return true;
  if (same && !mine) return false;
  throw new Error(`bench rollouts: ${dir} already holds ${same ? 'an unfinished run' : 'a run of another config'}; remove it or pass another --out`);
}

/** One run into `dir`, laid out as `mappa train` writes it; `onEval` reports each evaluation (default: greedy accuracy). */
export async function runOne(config: TrainConfig, parts: Parts, baseline: EvalResult, dir: string,
  onEval: (iteration: number, e: EvalResult) => void = (it, e) => log(`  iter ${it}: held-out greedy ${(e.greedy * 100).toFixed(1)}%`)): Promise<void> {
  const store = new FileStore(dir);
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, 'config.json'), JSON.stringify(config, null, 2) + '\n');
  await store.appendMetrics({ iteration: 0, eval: baseline });
  const started = Date.now();
  // The untrained team's record is written above (measured once for every seed and mode).
  const compute = parts.compute ?? LocalCompute.forTeam(parts);
  const session = await RunSession.open(config, { ...parts, compute }, { store, baseline: false, emit: () => undefined });
  session.trainer.on((e) => {
    if (e.type === 'iteration' && e.metrics.eval) onEval(e.metrics.iteration, e.metrics.eval);
  });
  await session.run();
  const metrics = session.trainer.metrics;
  const evals = metrics.filter((m) => m.eval);
  await store.writeFile('summary.json', JSON.stringify({
    out: dir, iterations: session.trainer.iteration, reward: config.rewards.mode, seed: config.seed, baseline,
    final: evals[evals.length - 1]?.eval ?? null, seconds: Math.round((Date.now() - started) / 1000),
    rollouts: metrics.reduce((n, m) => n + m.trajectories, 0),
  }, null, 2) + '\n');
  session.dispose();
}

const pct = (x: number | null | undefined) => (x === null || x === undefined ? 'n/a' : `${(x * 100).toFixed(1)}%`);
const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null);

/** The report from the summaries of every run (`rows` in seed order, both modes per seed). */
export function formatRolloutsReport(rows: RunSummary[], o: RolloutsBenchOptions, target: number, config: TrainConfig, backend: string): string {
  const out: string[] = [];
  const budget = config.iterations * config.promptsPerIteration * config.samplesPerPrompt;
  out.push(`# Rollouts to a target: process vs outcome reward${o.quick ? ' (quick smoke run, tiny random team)' : ''}`, '');
  out.push(`- backend: ${backend}; machine: ${os.cpus().length} cores, Node ${process.version}`);
  out.push(`- team: ${config.workflow.name} (${config.workflow.agents.map((a) => a.role).join(' -> ')}); agent model ${o.quick ? 'tiny random (test/helpers/tiny-team.ts)' : config.agentModel}; ` +
    `coach ${config.coach.kind === 'rule' ? 'rule-based' : config.coach.model}`);
  out.push(`- budget per run: ${config.iterations} iterations x ${config.promptsPerIteration} prompts x ${config.samplesPerPrompt} samples = ${budget} rollouts; ` +
    `held-out eval every ${config.evalEvery} iterations on ${config.evalTasks} problems`);
  const metricName = o.metric === 'sampled' ? `sampled accuracy (evaluation temperature ${config.evalTemperature})` : 'greedy accuracy';
  out.push(`- target: held-out ${metricName} ${pct(target)}${o.target === undefined ? ' (untrained baseline + 10 points)' : ''}`);
  out.push(`- run folders: ${o.out} (plot: mappa compare ${path.join(o.out, '*')})`, '');
  out.push('| reward | seed | rollouts to target | final greedy [95 %] | best greedy | final sampled [95 %] |');
  out.push('|---|---:|---:|---:|---:|---:|');
  const withInterval = (p: number | undefined, i: Interval | null) => (i ? formatPercent(i) : pct(p));
  for (const s of rows) {
    out.push(`| ${s.run.reward} | ${s.run.seed} | ${s.rolloutsToTarget ?? 'not reached'} | ${withInterval(s.final?.greedy, s.finalGreedyInterval)} | ${pct(s.bestGreedy)} | ${withInterval(s.final?.sampled, s.finalSampledInterval)} |`);
  }
  out.push('', '| reward | seeds reaching target | mean rollouts to target (those seeds) | mean final greedy | mean final sampled |');
  out.push('|---|---:|---:|---:|---:|');
  for (const mode of MODES) {
    const m = rows.filter((r) => r.run.reward === mode);
    const reached = m.filter((r) => r.rolloutsToTarget !== null).map((r) => r.rolloutsToTarget!);
    const meanReached = mean(reached);
    out.push(`| ${mode} | ${reached.length}/${m.length} | ${meanReached === null ? 'n/a' : meanReached.toFixed(1)} | ` +
      `${pct(mean(m.map((r) => r.final?.greedy ?? 0)))} | ${pct(mean(m.map((r) => r.final?.sampled ?? 0)))} |`);
  }
  // Ratio over the seeds where both modes reached the target. undefined: no run of that mode and seed
  // in this report (the other process of a two-process bench still writing it); null: not reached.
  const pairs = o.seeds.map((seed) => {
    const find = (mode: Mode) => rows.find((r) => r.run.seed === seed && r.run.reward === mode);
    const p = find('process'), q = find('outcome');
    return { seed, p: p ? p.rolloutsToTarget : undefined, q: q ? q.rolloutsToTarget : undefined };
  });
  const both = pairs.filter((x) => x.p != null && x.q != null && x.q > 0);
  out.push('');
  if (both.length) {
    const ratio = mean(both.map((x) => x.p!))! / mean(both.map((x) => x.q!))!;
    out.push(`Rollouts ratio process / outcome: ${ratio.toFixed(2)} over seeds ${both.map((x) => x.seed).join(', ')} ` +
      `(${ratio < 1 ? `${((1 - ratio) * 100).toFixed(0)}% fewer` : `${((ratio - 1) * 100).toFixed(0)}% more`} rollouts with process reward; the brief claims ~40% fewer).`);
    for (const x of both) out.push(`- seed ${x.seed}: ${x.p} / ${x.q} = ${(x.p! / x.q!).toFixed(2)}`);
    const across = both.every((x) => x.p! > 0 && x.q! > 0) ? logRatioInterval(both.map((x) => x.q!), both.map((x) => x.p!)) : null;
    out.push(across
      ? `- across those seeds, process / outcome as a ratio of geometric means with its 95 % log-scale t interval: ${formatRatio(across)} (df ${across.df})`
      : '- no interval across seeds: it needs at least 3 rollout counts in all, each above 0');
  } else {
    const absent = pairs.filter((x) => x.p === undefined).length + pairs.filter((x) => x.q === undefined).length;
    out.push('Rollouts ratio process / outcome: n/a (no seed where both modes reached the target within the budget; ' +
      `${pairs.filter((x) => x.q === null).length} outcome run(s) and ${pairs.filter((x) => x.p === null).length} process run(s) did not reach it` +
      `${absent ? `; ${absent} run(s) not in this report` : ''}).`);
  }
  const missing = pairs.filter((x) => x.p !== undefined && x.q !== undefined && (x.p === null) !== (x.q === null));
  for (const x of missing) out.push(`- seed ${x.seed}: only ${x.p !== null ? 'process' : 'outcome'} reached the target (${x.p ?? x.q} rollouts): a lower bound of the saving is not computed.`);
  out.push(...pairedFinals(rows, o.seeds, config.evalTemperature));
  return out.join('\n') + '\n';
}

/**
 * Final accuracy, process minus outcome, paired problem by problem (Newcombe) per seed and pooled over
 * the seeds (every seed's problems as more pairs), for greedy and sampled decoding. Seeds whose final
 * evaluations did not keep per-problem results on the same problems are left out, and said so.
 * Example line: | seed 0 | 28.0 % | 29.5 % | -1.5 pts [-5.2, +2.2] | 28.5 % | 22.5 % | +6.0 pts [+1.0, +11.1] |
 */
export function pairedFinals(rows: RunSummary[], seeds: number[], evalTemperature: number): string[] {
  const tasks = (reward: string) => seeds.map((seed) => rows.find((r) => r.run.seed === seed && r.run.reward === reward)?.final?.perTask);
  const { perSeed, pooled } = pairSeeds(tasks('process'), tasks('outcome'));
  const lines: string[] = [];
  perSeed.forEach((p, s) => {
    if (p) lines.push(`| seed ${seeds[s]} (${p.greedy[0].length} problems) | ${pairCells(...p.greedy)} | ${pairCells(...p.sampled)} |`);
  });
  if (!lines.length) return ['', 'Paired final accuracies: none (no seed with both modes\' final per-problem results).'];
  const head = [
    '', `Final accuracy, process - outcome, paired problem by problem (95 % Newcombe interval); sampled at T = ${evalTemperature}:`, '',
    '| runs | process greedy | outcome greedy | greedy: process - outcome | process sampled | outcome sampled | sampled: process - outcome |',
    '|---|---:|---:|---|---:|---:|---|',
  ];
  if (lines.length > 1) lines.push(`| seeds pooled (${pooled.greedy[0].length} pairs) | ${pairCells(...pooled.greedy)} | ${pairCells(...pooled.sampled)} |`);
  const skipped = seeds.filter((_, s) => !perSeed[s]);
  if (skipped.length) lines.push('', `Seeds without both final per-problem results, left out: ${skipped.join(', ')}.`);
  return [...head, ...lines];
}

export async function runRolloutsBenchmark(o: RolloutsBenchOptions): Promise<string> {
  const info = await initBackend(o.backend ? { force: o.backend } : o.quick ? { force: 'cpu' } : {});
  const backend = describeBackend(info);
  // The published runs' settings: 8 prompts per iteration, and, since rollouts-to-target needs frequent
  // evaluations, 50 held-out problems every 5 iterations (the loop's defaults: 12 prompts, all 200
  // problems every 15). A --config file sets its own.
  const published = { promptsPerIteration: 8, evalEvery: 5, evalTasks: 50 };
  const base = o.quick ? quickConfig(o.iterations) : await readConfig(o.config, { iterations: o.iterations, ...(o.config ? {} : published) });
  log(`backend ${backend}; runs into ${o.out}`);
  const parts = await openParts(o, base);
  try {
    // Every run already finished (a report over runs made earlier): their baseline record is the evaluation.
    const runs = o.seeds.flatMap((seed) => MODES.map((mode) => ({ config: { ...base, seed, rewards: { ...base.rewards, mode } } as TrainConfig, dir: path.join(o.out, `${mode}-seed${seed}`) })));
    let baseline = await savedBaseline(runs);
    if (baseline) log(`every run is finished: the untrained team's evaluation is the one they recorded`);
    else {
      log('evaluating the untrained team once (the same for every seed and mode)');
      baseline = (await evaluateTeam(base, parts.team, LocalCompute.forTeam(parts))).result;
    }
    log(`untrained: held-out greedy ${pct(baseline.greedy)}, sampled ${pct(baseline.sampled)}`);
    const target = o.target ?? Math.min(1, baseline[o.metric] + 0.1);
    const rows: RunSummary[] = [];
    for (const seed of o.seeds) {
      for (const mode of MODES) {
        const config: TrainConfig = { ...base, seed, rewards: { ...base.rewards, mode } };
        const dir = path.join(o.out, `${mode}-seed${seed}`);
        if (await finishedRun(config, dir, o.modes.includes(mode))) log(`${mode}, seed ${seed}: finished run found in ${dir}, reused`);
        else if (o.modes.includes(mode)) {
          log(`${mode}, seed ${seed}: ${config.iterations} iterations -> ${dir}`);
          await runOne(config, parts, baseline, dir);
        } else {
          log(`${mode}, seed ${seed}: not finished and not among --modes here, left out of this report`);
          continue;
        }
        rows.push(summarizeRun(await readRun(dir), target, o.metric));
      }
    }
    return formatRolloutsReport(rows, o, target, base, backend);
  } finally {
    await disposeTools(parts.tools);
    parts.agentModel.model.dispose();
  }
}

/** The untrained team's evaluation that every run recorded (iteration 0 of metrics.jsonl), when every run is finished; else null. */
async function savedBaseline(runs: { config: TrainConfig; dir: string }[]): Promise<EvalResult | null> {
  for (const r of runs) if (!(await finishedRun(r.config, r.dir, false))) return null;
  const first = (await readFile(path.join(runs[0].dir, 'metrics.jsonl'), 'utf8')).split('\n')[0];
  const record = first ? (JSON.parse(first) as { iteration: number; eval?: EvalResult }) : null;
  return record?.iteration === 0 && record.eval ? record.eval : null;
}

/** Entry point of `npm run bench -- rollouts [options]`. */
export async function main(argv: string[]): Promise<void> {
  process.stdout.write(await runRolloutsBenchmark(parseRolloutsArgs(argv)));
}
