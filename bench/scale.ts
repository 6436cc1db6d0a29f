/**
 * MAPPA's scaling claim, measured (`npm run -s bench -- scale`): the relay team of N = 2..128 agents
 * trained by process reward from the AI judge (models/relay-judge), process reward from the rubric,
 * outcome reward, and state groups (the coach-free method that scales: counterfactual replays cost
 * 2^(N+1) - 2 generations a prompt, 510 at N = 8 and 2^129 at N = 128, so they are left out past
 * small teams), at an equal number of rollouts per arm.
 *
 * For: bench/results/scale.md and scale.svg: per N and arm, over seeds, the final held-out team
 * accuracy (T = 1, pooled over seeds, Wilson) and mean step accuracy (t interval over seeds), and the
 * rollouts to a step-accuracy target per seed ("never" within the budget); a log-log plot of rollouts
 * to the target against N beside the two theory lines (Bagnell & Ng: samples linear in N under one
 * global reward, logarithmic under local rewards; both anchored at the rubric's smallest N) and
 * docs/credit.md's prediction for outcome reward (the rubric's rollouts x (1 + p + ... + p^(N-1)) / p^(N-1),
 * p the untrained step accuracy). The update is batched (update.batched: every agent's adapter in one
 * pass), so an iteration costs its samples rather than its agents. What each N cost is printed.
 * Runs go to --out (default runs/scale), one folder each as `mappa train` writes them; a finished run
 * is reused, so an interrupted sweep resumes.
 *
 * Example: npm run -s bench -- scale --agents 2,8,32 --seeds 0 --rollouts 64 --eval-tasks 50   (a small run)
 *          npm run -s bench -- scale                                                          (the whole experiment)
 */
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describeBackend, initBackend } from '../src/core/engine/backend.ts';
import { relayConfig, relayRuleCoach, RELAY_COACH_TEMPLATE, RELAY_JUDGE_MODEL } from '../src/core/domains/relay/team.ts';
import { RELAY_MAX_AGENTS } from '../src/core/domains/relay/tasks.ts';
import { cachedCoach, ModelCoach, type Coach } from '../src/core/coach/coach.ts';
import { resolveTrainConfig, type TrainConfig } from '../src/core/loop/config.ts';
import { evaluateTeam } from '../src/core/loop/eval-queue.ts';
import { LocalCompute } from '../src/core/compute/local.ts';
import { tInterval, wilson } from '../src/core/stats/intervals.ts';
import { openModel } from '../src/cli/common.ts';
import { finishedRun, runOne } from './rollouts.ts';
import { predictedRatio } from './relay.ts';
import { costToTarget, readCreditRun, type CreditRun } from './credit.ts';
import { svgPanels, type PlotSeries } from './plot.ts';

const ARMS = ['judge', 'rule', 'outcome', 'groups'] as const;
type Arm = (typeof ARMS)[number];
const ARM_WORDS: Record<Arm, string> = { judge: 'process, AI judge', rule: 'process, rubric', outcome: 'outcome', groups: 'state groups (no coach)' };
const COLORS: Record<Arm, string> = { judge: '#ff7f0e', rule: '#1f77b4', outcome: '#d62728', groups: '#9467bd' };
/** Rollouts (trajectories) an iteration: the relay config's 8 prompts x 2 samples. */
const PER_ITERATION = 16;

export interface ScaleOptions {
  agents: number[];
  arms: Arm[];
  seeds: number[];
  rollouts: number;
  evalEvery: number;
  evalTasks: number;
  target: number;
  out: string;
  results: string;
}

export function parseScaleArgs(argv: string[]): ScaleOptions {
  const o: ScaleOptions = {
    agents: [2, 4, 8, 16, 32, 64, 128], arms: [...ARMS], seeds: [0, 1, 2], rollouts: 640, evalEvery: 5, evalTasks: 200, target: 0.95,
    out: 'runs/scale', results: 'bench/results',
  };
  const ints = (v: string, flag: string, lo: number, hi: number) => v.split(',').map((s) => {
    const n = Number(s.trim());
    if (!Number.isInteger(n) || n < lo || n > hi) throw new Error(`bench scale: ${flag} takes whole numbers in ${lo}..${hi}, got "${s}"`);
    return n;
  });
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const v = argv[++i];
    if (v === undefined || v.startsWith('--')) throw new Error(`bench scale: ${flag} needs a value`);
    if (flag === '--agents') o.agents = ints(v, flag, 1, RELAY_MAX_AGENTS);
    else if (flag === '--arms') {
      o.arms = v.split(',').map((s) => s.trim()) as Arm[];
      if (!o.arms.length || o.arms.some((a) => !ARMS.includes(a))) throw new Error(`bench scale: --arms takes ${ARMS.join(',')}, got "${v}"`);
    } else if (flag === '--seeds') o.seeds = ints(v, flag, 0, 1e6);
    else if (flag === '--rollouts') {
      o.rollouts = ints(v, flag, PER_ITERATION, 1e6)[0];
      if (o.rollouts % PER_ITERATION) throw new Error(`bench scale: --rollouts must be a multiple of ${PER_ITERATION} (rollouts an iteration), got ${v}`);
    } else if (flag === '--eval-every') o.evalEvery = ints(v, flag, 1, 1e4)[0];
    else if (flag === '--eval-tasks') o.evalTasks = ints(v, flag, 1, 200)[0];
    else if (flag === '--target') {
      o.target = Number(v);
      if (!(o.target > 0 && o.target <= 1)) throw new Error(`bench scale: --target is a step accuracy in (0, 1], e.g. 0.95, got "${v}"`);
    } else if (flag === '--out') o.out = v;
    else if (flag === '--results') o.results = v;
    else throw new Error(`bench scale: unknown option "${flag}". Options: --agents 2,8,32 --arms ${ARMS.join(',')} --seeds 0,1,2 --rollouts N `
      + '--eval-every N --eval-tasks N --target 0.95 --out DIR --results DIR');
  }
  return o;
}

const log = (msg: string) => process.stderr.write(`[bench scale ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

/** One arm's run on the relay of n: the relay config, its rollouts, the arm's reward and coach, the batched update. */
export function scaleConfig(n: number, arm: Arm, seed: number, o: Pick<ScaleOptions, 'rollouts' | 'evalEvery' | 'evalTasks'>): TrainConfig {
  const base = relayConfig(n) as { update: Record<string, unknown> };
  return resolveTrainConfig({
    ...relayConfig(n), seed, iterations: o.rollouts / PER_ITERATION, evalEvery: o.evalEvery, evalTasks: o.evalTasks,
    update: { ...base.update, batched: true },
    coach: { kind: arm === 'judge' ? 'model' : 'rule' },
    rewards: { mode: arm === 'judge' || arm === 'rule' ? 'process' : arm },
  });
}

/** Rollouts (trajectories) at the first evaluation reaching the target; null: never within the budget. */
function rolloutsToTarget(run: CreditRun, target: number): number | null {
  const g = costToTarget(run, target, 'generations');
  return g === null ? null : g / run.n;
}

const pct = (x: number) => `${(100 * x).toFixed(1)} %`;

export async function main(argv: string[]): Promise<void> {
  const o = parseScaleArgs(argv);
  const info = await initBackend({ force: 'wasm' });
  const spec = resolveTrainConfig(relayConfig(2)).agentModel;
  if (!existsSync(spec)) throw new Error(`bench scale: "${spec}" does not exist; build it with: npx tsx scripts/pretrain-relay.ts --seed 0`);
  const model = await openModel(spec, { tokenizer: 'required' });
  const judgeModel = o.arms.includes('judge') ? await openModel(RELAY_JUDGE_MODEL, { tokenizer: 'required' }) : null;
  const coaches: Record<Arm, () => Coach> = {
    judge: () => cachedCoach(new ModelCoach(judgeModel!, RELAY_COACH_TEMPLATE)),
    rule: () => cachedCoach(relayRuleCoach()),
    // The coach-free arms never call it (a run whose credit reads no coach calls none).
    outcome: () => cachedCoach(relayRuleCoach()),
    groups: () => cachedCoach(relayRuleCoach()),
  };
  const started = performance.now();
  const rows = ['| agents N | arm | rollouts to target (seeds) | final team accuracy, pooled [95 %] | final mean step accuracy [95 %] | training s a run |',
    '|---:|---|---|---|---|---:|'];
  const costs: string[] = [];
  const notes: string[] = [];
  const reachSeries = new Map<Arm, PlotSeries>(o.arms.map((a) => [a, { label: `${ARM_WORDS[a]} (triangle: never, at the budget)`, points: [], color: COLORS[a] }]));
  const predicted: PlotSeries = { label: 'outcome, docs/credit.md\'s prediction (rubric x ratio)', points: [], dashed: true, color: '#7f7f7f' };
  const linear: PlotSeries = { label: 'theory: linear in N (one global reward)', points: [], dashed: true, color: '#bcbd22' };
  const logarithmic: PlotSeries = { label: 'theory: logarithmic in N (local rewards)', points: [], dashed: true, color: '#17becf' };
  let anchor: { n: number; rollouts: number } | null = null;
  const stepPanel: PlotSeries[] = o.arms.map((a) => ({ label: ARM_WORDS[a], points: [], color: COLORS[a] }));
  try {
    for (const n of o.agents) {
      const nStarted = performance.now();
      const config = resolveTrainConfig({ ...relayConfig(n), evalTasks: o.evalTasks });
      log(`N=${n}: the untrained team on ${o.evalTasks} held-out tasks, once for every arm and seed`);
      const baseline = (await evaluateTeam(config, LocalCompute.forTeam({ agentModel: model, tools: {} }))).result;
      const p = baseline.sampledMetrics?.stepAccuracy ?? NaN;
      const runs = new Map<Arm, CreditRun[]>();
      for (const seed of o.seeds) {
        for (const arm of o.arms) {
          const c = scaleConfig(n, arm, seed, o);
          const dir = path.join(o.out, `n${n}-${arm}-seed${seed}`);
          if (!(await finishedRun(c, dir, true))) {
            log(`N=${n} ${arm} seed ${seed}: ${c.iterations} iterations x ${PER_ITERATION} rollouts -> ${dir}`);
            await runOne(c, { agentModel: model, coach: coaches[arm](), tools: {} }, baseline, dir,
              (it, e) => log(`  iter ${it}: step ${pct(e.sampledMetrics?.stepAccuracy ?? NaN)}, team ${pct(e.sampled)}`));
          } else log(`N=${n} ${arm} seed ${seed}: finished run found in ${dir}, reused`);
          runs.set(arm, [...(runs.get(arm) ?? []), await readCreditRun(dir, n, arm === 'judge' || arm === 'rule' ? 'process' : arm, seed)]);
        }
      }
      for (const arm of o.arms) {
        const rs = runs.get(arm)!;
        const reach = rs.map((r) => rolloutsToTarget(r, o.target));
        const finals = rs.map((r) => r.evals.at(-1) ?? r.baseline);
        const team = wilson(finals.reduce((s, f) => s + Math.round(f.team * f.tasks), 0), finals.reduce((s, f) => s + f.tasks, 0));
        const steps = finals.map((f) => f.step);
        const step = steps.length > 1 ? tInterval(steps) : { p: steps[0], low: NaN, high: NaN };
        const stepText = steps.length > 1 ? `${pct(step.p)} [${(100 * step.low).toFixed(1)}, ${(100 * step.high).toFixed(1)}]` : `${pct(step.p)} (one seed: no interval)`;
        const seconds = rs.reduce((a, r) => a + r.budgetSeconds, 0) / rs.length;
        rows.push(`| ${n} | ${ARM_WORDS[arm]} | ${reach.map((x) => (x === null ? `never (>${o.rollouts})` : String(x))).join(' / ')} | `
          + `${pct(team.p)} [${(100 * team.low).toFixed(1)}, ${(100 * team.high).toFixed(1)}] | ${stepText} | ${seconds.toFixed(0)} |`);
        const reached = reach.filter((x): x is number => x !== null);
        const geo = reached.length ? Math.exp(reached.reduce((a, x) => a + Math.log(Math.max(x, 1)), 0) / reached.length) : null;
        reachSeries.get(arm)!.points.push(geo === null ? { x: Math.log2(n), y: o.rollouts, atLeast: true } : { x: Math.log2(n), y: geo, atLeast: reached.length < reach.length });
        stepPanel.find((s) => s.label === ARM_WORDS[arm])!.points.push({ x: Math.log2(n), y: step.p, low: step.low, high: step.high });
        if (arm === 'rule' && geo !== null) {
          anchor ??= { n, rollouts: geo };
          predicted.points.push({ x: Math.log2(n), y: geo * predictedRatio(n, p) });
        }
      }
      if (anchor) {
        linear.points.push({ x: Math.log2(n), y: (anchor.rollouts * n) / anchor.n });
        logarithmic.points.push({ x: Math.log2(n), y: (anchor.rollouts * Math.log(1 + n)) / Math.log(1 + anchor.n) });
      }
      notes.push(`- N = ${n}: untrained step accuracy p = ${pct(p)}, team ${pct(baseline.sampled)}; outcome's chance of a right chain p^N = ${p ** n < 1e-3 ? p ** n : pct(p ** n)}; `
        + `docs/credit.md's outcome / process ratio (1 + p + ... + p^(N-1)) / p^(N-1) = ${predictedRatio(n, p).toPrecision(3)}.`);
      costs.push(`| ${n} | ${((performance.now() - nStarted) / 60000).toFixed(1)} min | ${o.arms.length * o.seeds.length} | ${o.rollouts} |`);
    }
  } finally {
    model.model.dispose();
    judgeModel?.model.dispose();
  }
  await mkdir(o.results, { recursive: true });
  await writeFile(path.join(o.results, 'scale.svg'), svgPanels([
    { title: `Rollouts to mean step accuracy ${pct(o.target)} (log-log; x = log2 N)`, xLabel: 'log2 of agents in the relay', yLabel: 'rollouts (log scale)',
      logY: true, series: [...reachSeries.values(), predicted, linear, logarithmic] },
    { title: 'Final mean step accuracy (T = 1, held out)', xLabel: 'log2 of agents in the relay', yLabel: 'share of steps right', yMin: 0, yMax: 1, series: stepPanel },
  ], 'MAPPA at scale: the relay of 2 to 128 agents, process against outcome reward'));
  const total = (performance.now() - started) / 60000;
  process.stdout.write([
    '# MAPPA at scale: the relay of N agents, process against outcome reward', '',
    `\`npm run -s bench -- scale ${argv.join(' ')}\`; ${os.cpus()[0]?.model ?? 'unknown CPU'}, ${describeBackend(info)}, 1 thread, Node ${process.version}; `
      + `${total.toFixed(1)} min in all`, '',
    `- arms: ${o.arms.map((a) => ARM_WORDS[a]).join(', ')}; seeds ${o.seeds.join(', ')}; ${o.rollouts} rollouts per run (${o.rollouts / PER_ITERATION} iterations of 8 prompts x 2); `
      + `held-out evaluation every ${o.evalEvery} iterations on ${o.evalTasks} tasks at T = 1; batched update`,
    `- target: held-out mean step accuracy >= ${pct(o.target)}; counterfactual replays left out (2^(N+1) - 2 generations a prompt)`, '',
    ...rows, '', ...notes, '',
    '## What each N cost here', '', '| N | wall time | runs | rollouts a run |', '|---:|---:|---:|---:|', ...costs, '',
    'Rollouts to target: per seed, at the first evaluation reaching it ("never": not within the budget). Final team accuracy: every seed\'s last '
      + 'evaluation pooled, Wilson interval; final step accuracy: mean over seeds with its t interval. Plot (scale.svg): geometric mean over seeds of '
      + 'the rollouts to target against log2 N on a log scale (a triangle: some seed never reached it, drawn at the budget), beside the theory lines '
      + 'anchored at the rubric\'s smallest N and docs/credit.md\'s prediction for outcome reward.', '',
  ].join('\n'));
}
