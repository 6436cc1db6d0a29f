/**
 * MAPPA's scaling claim, measured (`npm run -s bench -- scale`): the relay team of N = 2..128 agents
 * trained by process reward from the AI judge (models/relay-judge), process reward from the rubric,
 * outcome reward, and state groups (the coach-free method that scales: counterfactual replays cost
 * 2^(N+1) - 2 generations a prompt, 510 at N = 8 and 2^129 at N = 128, so they are left out), at an
 * equal number of rollouts per arm.
 *
 * For: bench/results/scale.md and scale.svg: per N and arm, the final held-out team accuracy (T = 1,
 * pooled over seeds, Wilson) and mean step accuracy and its gain over the untrained team (t interval
 * over seeds; with one seed, over the held-out steps), the rollouts to a step-accuracy target per seed
 * (read from the training rollouts, bench/scale-report.ts; "never" within the budget), the seconds an
 * iteration costs by phase, and a log-log plot of rollouts to the target against N beside the two theory
 * lines (Bagnell & Ng: samples linear in N under one global reward, logarithmic under local rewards;
 * both anchored at the rubric's smallest N whose held-out gain is above 0) and docs/credit.md's prediction for outcome reward (the
 * rubric's rollouts x P (1 - P) / (p (1 - p) lambda^(2(N-1))), p the untrained step accuracy, lambda = (10p - 1) / 9, P = 1/10 +
 * 9/10 lambda^N: the luck floor included; results written before it print (1 + p + ... + p^(N-1)) / p^(N-1)). The update is
 * batched (every agent's adapter in one pass), so an iteration costs its samples rather than its agents.
 * With --recipe (the sweep at the engine's new speed): every N on the shipped relay recipe (relayScaleRecipe, as
 * configs/relay-128.json runs it, 64 rollouts an iteration) on every core, greedy held-out evaluations every
 * --eval-every iterations, and rollouts to a greedy team-accuracy target (--team-target) beside the step target.
 *
 * Order: seed by seed, and within a seed the N and arms in the order --agents and --arms give them, so that
 * a sweep stopped by --max-minutes has the N it lists first at one seed before any at three. Runs go to --out (default runs/scale), one folder each as
 * `mappa train` writes them; a finished run is reused, so an interrupted sweep resumes and the report
 * can be written again from the runs alone.
 * Example: npm run -s bench -- scale --agents 2,8,32 --seeds 0 --rollouts 48 --eval-steps 200   (a small run)
 *          npm run -s bench -- scale                                                        (the whole experiment)
 *          npm run -s bench -- scale --recipe > bench/results/scale-recipe.md                (at the new speed)
 */
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describeBackend, initBackend } from '../src/core/engine/backend.ts';
import { relayConfig, relayRuleCoach, relayScaleRecipe, RELAY_COACH_TEMPLATE, RELAY_JUDGE_MODEL } from '../src/core/domains/relay/team.ts';
import { cachedCoach, ModelCoach, type Coach } from '../src/core/coach/coach.ts';
import { type TrainConfig } from '../src/core/loop/config.ts';
import { resolveTrainConfig, teamOf } from '../src/core/domains/index.ts';
import type { EvalResult } from '../src/core/loop/records.ts';
import type { Team } from '../src/core/loop/team.ts';
import { evaluateTeam } from '../src/core/loop/eval-queue.ts';
import { computeFor } from '../src/core/compute/lanes.ts';
import { startWorkerLanes } from '../src/cli/train-workers.ts';
import { tInterval, wilson, type Interval } from '../src/core/stats/intervals.ts';
import { openModel } from '../src/cli/common.ts';
import { finishedRun, runOne } from './rollouts.ts';
import { predictedRatio } from './relay.ts';
import { outcomePush, rewardedShare, stepForTeam } from '../src/core/domains/relay/luck.ts';
import { svgPanels, type PlotSeries } from './plot.ts';
import {
  ARM_WORDS, evalTasksFor, fitLine, parseScaleArgs, perIteration, readScaleRun, rolloutsToTarget, rolloutsToTeamTarget, seedsFor,
  type Arm, type ScaleOptions, type ScaleRun,
} from './scale-report.ts';

export { parseScaleArgs } from './scale-report.ts';
const COLORS: Record<Arm, string> = { judge: '#ff7f0e', rule: '#1f77b4', outcome: '#d62728', groups: '#9467bd' };
const log = (msg: string) => process.stderr.write(`[bench scale ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
const pct = (x: number) => `${(100 * x).toFixed(1)} %`;
const iv = (i: Interval, points = false) => (points
  ? `${i.p >= 0 ? '+' : ''}${(100 * i.p).toFixed(1)} [${(100 * i.low).toFixed(1)}, ${(100 * i.high).toFixed(1)}]`
  : `${pct(i.p)} [${(100 * i.low).toFixed(1)}, ${(100 * i.high).toFixed(1)}]`);

/**
 * One arm's run on the relay of n: the relay config, its rollouts, the arm's reward and coach, the batched update, one final
 * evaluation; with --recipe, the scale recipe of the shipped relay configs (at 16 agents' settings below 16) evaluated every evalEvery.
 */
export function scaleConfig(n: number, arm: Arm, seed: number,
  o: Pick<ScaleOptions, 'rollouts' | 'evalSteps' | 'microBatch' | 'recipe' | 'evalEvery'>): TrainConfig {
  const base = relayConfig(n) as { update: Record<string, unknown> };
  const iterations = o.rollouts / perIteration(o);
  const rewards = { mode: arm === 'judge' || arm === 'rule' ? 'process' : arm };
  if (o.recipe) {
    const recipe = relayScaleRecipe(Math.max(n, 16)) as { coach: Record<string, unknown> };
    return resolveTrainConfig({
      ...relayConfig(n), ...recipe, seed, iterations, evalEvery: o.evalEvery, checkpointEvery: iterations, evalTasks: evalTasksFor(n, o.evalSteps),
      coach: arm === 'judge' ? recipe.coach : { kind: 'rule' }, rewards,
    });
  }
  return resolveTrainConfig({
    ...relayConfig(n), seed, iterations, evalEvery: iterations, evalTasks: evalTasksFor(n, o.evalSteps),
    update: { ...base.update, batched: true, microBatchSize: o.microBatch },
    coach: { kind: arm === 'judge' ? 'model' : 'rule' },
    rewards,
  });
}

/** Mean over seeds with its t interval; one seed: the proportion over `steps` held-out steps (Wilson), or for a difference its normal interval. */
function overSeeds(xs: number[], steps: number, diffOf?: number[]): Interval & { oneSeed: boolean } {
  if (xs.length > 1) return { ...tInterval(xs), oneSeed: false };
  if (!diffOf) return { ...wilson(Math.round(xs[0] * steps), steps), p: xs[0], oneSeed: true };
  const [a, b] = [xs[0] + diffOf[0], diffOf[0]];
  const se = Math.sqrt((a * (1 - a) + b * (1 - b)) / steps);
  return { p: xs[0], low: xs[0] - 1.96 * se, high: xs[0] + 1.96 * se, oneSeed: true };
}

export async function main(argv: string[]): Promise<void> {
  const o = parseScaleArgs(argv);
  const info = await initBackend({ force: 'wasm' });
  const spec = resolveTrainConfig(relayConfig(2)).agentModel;
  if (!existsSync(spec)) throw new Error(`bench scale: "${spec}" does not exist; build it with: npx tsx scripts/pretrain-relay.ts --seed 0`);
  if (o.arms.includes('judge') && !existsSync(RELAY_JUDGE_MODEL)) throw new Error(`bench scale: "${RELAY_JUDGE_MODEL}" does not exist (the judge arm's coach)`);
  const model = o.reportOnly ? null : await openModel(spec, { tokenizer: 'required' });
  const judgeModel = o.arms.includes('judge') && !o.reportOnly ? await openModel(RELAY_JUDGE_MODEL, { tokenizer: 'required' }) : null;
  // The coach-free arms and outcome never call their coach (a run whose credit reads no coach calls none).
  const coachOf = (arm: Arm): Coach => cachedCoach(arm === 'judge' ? new ModelCoach(judgeModel!, RELAY_COACH_TEMPLATE) : relayRuleCoach());
  // Every core (--recipe): worker lanes with a replica of the agent model, shared by every run (a lane sets up each team it is sent).
  const lanes = model && o.threads > 1 ? await startWorkerLanes(o.threads - 1, model.model) : null;
  const computeOf = (team: Team) => computeFor({ team, agentModel: model!, tools: {} }, lanes, (m) => log(`warning: ${m}`));
  const started = performance.now();
  const baselines = new Map<number, EvalResult>();
  const skipped: Skipped[] = [];
  let last: { n: number; minutes: number } | null = null;
  try {
    for (const seed of o.seeds) {
      for (const n of o.agents) {
        if (!seedsFor(n, o).includes(seed)) continue;
        for (const arm of o.arms) {
          const c = scaleConfig(n, arm, seed, o);
          const dir = path.join(o.out, `n${n}-${arm}-seed${seed}`);
          if (await finishedRun(c, dir, !o.reportOnly)) {
            log(`N=${n} ${arm} seed ${seed}: finished run found in ${dir}, reused`);
            continue;
          }
          const minutes = (performance.now() - started) / 60000;
          // A run is started only if, at the last run's pace scaled by N, it ends within --max-minutes.
          const expected = last ? (last.minutes * n) / last.n : 0;
          if (o.reportOnly || (o.maxMinutes > 0 && minutes + expected >= o.maxMinutes)) {
            skipped.push({ n, arm, seed });
            continue;
          }
          const team = teamOf(c.workflow);
          if (!baselines.has(n)) {
            log(`N=${n}: the untrained team on ${c.evalTasks} held-out tasks, once for every arm and seed`);
            baselines.set(n, (await evaluateTeam(c, team, computeOf(team))).result);
          }
          log(`N=${n} ${arm} seed ${seed}: ${c.iterations} iterations x ${perIteration(o)} rollouts -> ${dir} (${minutes.toFixed(1)} min in)`);
          await runOne(c, { team, agentModel: model!, coach: coachOf(arm), tools: {}, compute: computeOf(team) }, baselines.get(n)!, dir,
            (it, e) => log(`  iter ${it}: held-out step ${pct(e.sampledMetrics?.stepAccuracy ?? NaN)}, team ${pct(e.sampled)}`));
          last = { n, minutes: (performance.now() - started) / 60000 - minutes };
        }
      }
    }
  } finally {
    await lanes?.close();
    model?.model.dispose();
    judgeModel?.model.dispose();
  }
  const runs: ScaleRun[] = [];
  for (const n of o.agents) {
    for (const seed of seedsFor(n, o)) {
      for (const arm of o.arms) {
        const dir = path.join(o.out, `n${n}-${arm}-seed${seed}`);
        if (existsSync(path.join(dir, 'summary.json'))) runs.push(await readScaleRun(dir, n, arm, seed));
      }
    }
  }
  const total = (performance.now() - started) / 60000;
  await mkdir(o.results, { recursive: true });
  const { markdown, svg } = scaleReport(runs, o, skipped);
  await writeFile(path.join(o.results, o.recipe ? 'scale-recipe.svg' : 'scale.svg'), svg);
  process.stdout.write([
    '# MAPPA at scale: the relay of N agents, process against outcome reward', '',
    `\`npm run -s bench -- scale ${argv.join(' ')}\`; ${os.cpus()[0]?.model ?? 'unknown CPU'}, ${describeBackend(info)}, `
      + `${o.threads > 1 ? `${o.threads} threads (this one and ${o.threads - 1} worker lane${o.threads > 2 ? 's' : ''})` : '1 thread'}, Node ${process.version}; `
      + `${total.toFixed(1)} min in all (finished runs reused count nothing)${o.recipe ? '' : ', the cores shared with other jobs'}`, '', markdown,
  ].join('\n'));
}

interface Skipped { n: number; arm: Arm; seed: number }

/**
 * One N's point on the rollouts plot: the geometric mean over the seeds that reached the target (a triangle when not all
 * did; at the budget when none did; none when every seed was there untrained). Returns that mean (0: there untrained),
 * null when none reached it. Example: [96, 384, null] -> 192, a triangle.
 */
function plotReach(series: PlotSeries, n: number, to: (number | null)[], budget: number): number | null {
  const reached = to.filter((x): x is number => x !== null);
  if (reached.length === to.length && reached.every((x) => x === 0)) return 0; // reached before training: no point on a log scale
  const geo = reached.length ? Math.exp(reached.reduce((a, x) => a + Math.log(Math.max(x, 1)), 0) / reached.length) : null;
  series.points.push(geo === null ? { x: Math.log2(n), y: budget, atLeast: true } : { x: Math.log2(n), y: geo, atLeast: reached.length < to.length });
  return geo;
}

/** The N where every seed reached the team target, and the growth of its rollouts over them (a power of N, least squares on logs). */
function teamFinding(series: PlotSeries): string {
  const all = series.points.filter((q) => !q.atLeast);
  if (!all.length) return 'at no N did every seed reach it within the budget';
  const text = `every seed reached it at N = ${all.map((q) => 2 ** q.x).join(', ')}`;
  if (all.length < 2) return text;
  const e = fitLine(all.map((q) => q.x * Math.LN2), all.map((q) => Math.log(Math.max(q.y, 1))));
  return `${text}; its rollouts grow as N^${e.slope.toFixed(2)} over those N`;
}

/** The runs not run, by seed and N. Example: [{n: 16, arm: 'rule', seed: 1}, {n: 16, arm: 'judge', seed: 1}] -> 'seed 1: N = 16 (rule, judge)' */
function skippedText(skipped: Skipped[]): string {
  const seeds = [...new Set(skipped.map((s) => s.seed))];
  return seeds.map((seed) => {
    const of = skipped.filter((s) => s.seed === seed);
    const ns = [...new Set(of.map((s) => s.n))].sort((a, b) => a - b);
    return `seed ${seed}: ${ns.map((n) => `N = ${n} (${of.filter((s) => s.n === n).map((s) => s.arm).join(', ')})`).join(', ')}`;
  }).join('; ');
}

/** The report's text and plot from the finished runs. */
export function scaleReport(runs: ScaleRun[], o: ScaleOptions, skipped: Skipped[]): { markdown: string; svg: string } {
  const perIt = perIteration(o);
  const how = o.recipe ? 'greedy' : 'T = 1';
  const rows = [`| N | arm | seeds | rollouts to step target (each seed) | rollouts to team target (each seed) | final team accuracy (${how}), pooled [95 %] `
    + `| final step accuracy (${how}) [95 %] | step accuracy gained [95 %] | greedy step accuracy | s an iteration: rollouts / coach / update |`,
  '|---:|---|---:|---|---|---|---|---|---:|---|'];
  const costRows = ['| N | runs | wall minutes (all arms and seeds) | s an iteration, AI judge arm | rubric arm | outcome arm | groups arm '
    + '| s a final evaluation (held-out tasks) | coach calls an iteration, AI judge |', '|---:|---:|---:|---:|---:|---:|---:|---|---:|'];
  const notes: string[] = [];
  const reach = new Map<Arm, PlotSeries>(o.arms.map((a) => [a, { label: `${ARM_WORDS[a]}: step target`, points: [], color: COLORS[a] }]));
  const teamReach = new Map<Arm, PlotSeries>(o.arms.map((a) => [a, { label: `${ARM_WORDS[a]}: team target`, points: [], color: COLORS[a], dashed: true }]));
  // The theory lines hang on the rubric's run where there is one, else on the AI judge's.
  const anchorArm: Arm = o.arms.includes('rule') ? 'rule' : 'judge';
  const teamUntrained = new Map<Arm, number[]>(o.arms.map((a) => [a, []]));
  const predicted: PlotSeries = {
    label: `outcome, docs/credit.md's prediction (${ARM_WORDS[anchorArm]} x ratio; off the plot above 10^6)`, points: [], dashed: true, color: '#7f7f7f',
  };
  const linear: PlotSeries = { label: 'theory: linear in N (one global reward)', points: [], dashed: true, color: '#bcbd22' };
  const logarithmic: PlotSeries = { label: 'theory: logarithmic in N (local rewards)', points: [], dashed: true, color: '#17becf' };
  const stepPanel: PlotSeries[] = o.arms.map((a) => ({ label: ARM_WORDS[a], points: [], color: COLORS[a] }));
  const gains = new Map<Arm, { n: number; gain: Interval }[]>(o.arms.map((a) => [a, []]));
  const secondsAt = new Map<Arm, { n: number; s: number; coach: number }[]>(o.arms.map((a) => [a, []]));
  let anchor: { n: number; rollouts: number } | null = null;
  const ns = [...o.agents].sort((a, b) => a - b).filter((n) => runs.some((r) => r.n === n));
  for (const n of ns) {
    const atN = runs.filter((r) => r.n === n);
    const base = atN[0].baseline;
    // The theory's p is a step's accuracy at T = 1: the held-out set's, or under --recipe (greedy evaluations) the first iteration's rollouts'.
    const p = o.recipe ? atN.reduce((a, r) => a + r.steps[0], 0) / atN.length : base.step;
    const heldSteps = n * base.tasks;
    for (const arm of o.arms) {
      const rs = atN.filter((r) => r.arm === arm);
      if (!rs.length) continue;
      // Under --recipe the held-out step accuracy is greedy: the T = 1 target is read from the rollouts alone.
      const toTarget = rs.map((r) => (!o.recipe && r.baseline.step >= o.target ? 0 : rolloutsToTarget(r.steps, o.target, o.window, r.perIteration)));
      const toTeam = rs.map((r) => (r.baseline.team >= o.teamTarget ? 0 : rolloutsToTeamTarget(r.evals, o.teamTarget, r.perIteration)));
      const team = wilson(rs.reduce((s, r) => s + Math.round(r.final.team * r.final.tasks), 0), rs.reduce((s, r) => s + r.final.tasks, 0));
      const step = overSeeds(rs.map((r) => r.final.step), heldSteps);
      const gain = overSeeds(rs.map((r) => r.final.step - r.baseline.step), heldSteps, rs.map((r) => r.baseline.step));
      gains.get(arm)!.push({ n, gain });
      const sec = (k: 'rollout' | 'coach' | 'update') => rs.reduce((a, r) => a + r.seconds[k], 0) / rs.length;
      secondsAt.get(arm)!.push({ n, s: sec('rollout') + sec('coach') + sec('update'), coach: sec('coach') });
      const greedy = rs.reduce((a, r) => a + r.final.greedyStep, 0) / rs.length;
      const each = (xs: (number | null)[]) => xs.map((x) => (x === null ? `never (>${o.rollouts})` : String(x))).join(' / ');
      rows.push(`| ${n} | ${ARM_WORDS[arm]} | ${rs.length} | ${each(toTarget)} | ${each(toTeam)} | ${iv(team)} | `
        + `${iv(step)}${step.oneSeed ? ' (1 seed: over steps)' : ''} | ${iv(gain, true)} | ${pct(greedy)} | `
        + `${sec('rollout').toFixed(1)} / ${sec('coach').toFixed(1)} / ${sec('update').toFixed(1)} |`);
      const geo = plotReach(reach.get(arm)!, n, toTarget, o.rollouts);
      if (plotReach(teamReach.get(arm)!, n, toTeam, o.rollouts) === 0) teamUntrained.get(arm)!.push(n);
      stepPanel.find((s) => s.label === ARM_WORDS[arm])!.points.push({ x: Math.log2(n), y: step.p, low: step.low, high: step.high });
      if (arm === anchorArm && geo) {
        // Anchored where the anchor arm's run demonstrably learnt (its held-out gain above 0), not on a crossing within the noise.
        if (gain.low > 0) anchor ??= { n, rollouts: geo };
        const y = geo * predictedRatio(n, p);
        if (y <= 1e6) predicted.points.push({ x: Math.log2(n), y });
      }
    }
    if (anchor) {
      linear.points.push({ x: Math.log2(n), y: (anchor.rollouts * n) / anchor.n });
      logarithmic.points.push({ x: Math.log2(n), y: (anchor.rollouts * Math.log(1 + n)) / Math.log(1 + anchor.n) });
    }
    const ratio = predictedRatio(n, p);
    notes.push(`- N = ${n}: untrained step accuracy p = ${pct(p)} (T = 1${o.recipe ? ', the first iteration\'s rollouts' : ', held out'}; greedy `
      + `${pct(base.greedyStep)}), team ${pct(base.team)} (${how}) on ${base.tasks} tasks; `
      + `a right chain p^N = ${p ** n < 1e-3 ? (p ** n).toExponential(1) : pct(p ** n)}; rewarded by outcome, 1/10 + 9/10 lambda^N = ${pct(rewardedShare(p, n))}; `
      + `outcome's push on a step, lambda^(N-1) of process's = ${outcomePush(p, n) < 1e-3 ? outcomePush(p, n).toExponential(1) : outcomePush(p, n).toFixed(3)}; `
      + `docs/credit.md's outcome / process ratio = ${ratio < 1e4 ? ratio.toPrecision(3) : ratio.toExponential(1)}; `
      + `a step accuracy of ${(100 * stepForTeam(o.teamTarget, n)).toFixed(2)} % for the team target ${pct(o.teamTarget)} (the luck floor included).`);
    const cell = (a: Arm) => {
      const x = secondsAt.get(a)?.find((q) => q.n === n);
      return x ? x.s.toFixed(1) : '-';
    };
    const evalS = atN.reduce((a, r) => a + r.evalSeconds, 0) / atN.length;
    const judge = atN.filter((r) => r.arm === 'judge');
    const calls = judge.length ? (judge.reduce((a, r) => a + r.coachCalls, 0) / judge.length / (o.rollouts / perIt)).toFixed(0) : '-';
    costRows.push(`| ${n} | ${atN.length} | ${(atN.reduce((a, r) => a + r.wallSeconds, 0) / 60).toFixed(1)} | ${cell('judge')} | ${cell('rule')} | ${cell('outcome')} | `
      + `${cell('groups')} | ${evalS.toFixed(1)} (${base.tasks}) | ${calls} |`);
  }
  // Where outcome stops learning: the smallest N from which on its gain's interval holds 0 (or lies below it).
  const stops = (arm: Arm) => {
    const g = gains.get(arm) ?? [];
    const i = g.findIndex((_, k) => g.slice(k).every((x) => x.gain.low <= 0));
    return i < 0 ? null : g[i].n;
  };
  const findings: string[] = [];
  for (const arm of o.arms) {
    const s = stops(arm);
    findings.push(`- ${ARM_WORDS[arm]}: ${s === null ? 'its step-accuracy gain is above 0 at every N measured' : `its step-accuracy gain's interval holds 0 (or lies below) from N = ${s} on`}.`);
  }
  for (const arm of o.arms) {
    const pts = secondsAt.get(arm)!;
    if (pts.length < 2) continue;
    const f = fitLine(pts.map((q) => q.n), pts.map((q) => q.s));
    const c = fitLine(pts.map((q) => q.n), pts.map((q) => q.coach));
    findings.push(`- cost of ${ARM_WORDS[arm]}: ${f.slope.toFixed(3)} s an iteration per added agent (least squares over N; ${perIt} rollouts an iteration)`
      + `${arm === 'judge' ? `, of which the coach ${c.slope.toFixed(3)} s` : ''}.`);
    const reached = reach.get(arm)!.points.filter((q) => !q.atLeast);
    if (reached.length >= 2) {
      const e = fitLine(reached.map((q) => q.x * Math.LN2), reached.map((q) => Math.log(q.y)));
      findings.push(`  its rollouts to the target grow as N^${e.slope.toFixed(2)} over the N where every seed reached it (linear theory: N^1).`);
    }
    const before = teamUntrained.get(arm)!;
    findings.push(`- ${ARM_WORDS[arm]}, team target: ${teamFinding(teamReach.get(arm)!)}${before.length ? ` (at N = ${before.join(', ')} the untrained team was there)` : ''}.`);
  }
  const svg = svgPanels([
    { title: `Rollouts to step ${pct(o.target)} (solid), team ${pct(o.teamTarget)} (dashed); ▲ not reached`,
      xLabel: 'log2 of agents in the relay', yLabel: 'rollouts (log scale)', logY: true,
      series: [...reach.values(), ...teamReach.values(), predicted, linear, logarithmic] },
    { title: `Final held-out step accuracy (${how}) [95 %]`, xLabel: 'log2 of agents in the relay', yLabel: 'share of steps right', yMin: 0, yMax: 1,
      series: stepPanel },
  ], 'MAPPA at scale: the relay of 2 to 128 agents, process against outcome reward');
  const seedsText = o.agents.map((n) => `${n}: ${seedsFor(n, o).join(',')}`).join('; ');
  const markdown = [
    `- arms: ${o.arms.map((a) => ARM_WORDS[a]).join(', ')}; ${o.rollouts} rollouts per run (${o.rollouts / perIt} iterations of ${perIt / 2} `
      + `prompts x 2, T = 1), lr 2e-3, ${o.recipe ? 'the shipped scale recipe (relayScaleRecipe: per-agent update, state baseline, judge batch 64)'
        : 'batched update'}; `
      + `seeds by N: ${seedsText}`,
    `- held-out: min(200, ceil(${o.evalSteps} / N)) tasks${o.recipe ? `, greedy, before training and every ${o.evalEvery} iterations`
      : ' at T = 1 (and greedy), before training and after the last iteration'}; the untrained team measured once per N`,
    `- team target: team accuracy ${pct(o.teamTarget)} (${how}) on the held-out set, the mean of two evaluations in a row (a run's only evaluation alone)`,
    `- target: step accuracy ${pct(o.target)} at T = 1, read from the training rollouts (the trailing mean of ${o.window} iterations, every step checked by the rubric); `
      + 'counterfactual replays left out (2^(N+1) - 2 generations a prompt)',
    ...(skipped.length ? [`- **not run** (no time left within the sweep's minutes on this shared machine): ${skippedText(skipped)}`] : []), '',
    ...rows, '', ...notes, '', '## Findings (computed from the rows above)', '', ...findings, '',
    '## What each N cost here', '', ...costRows, '',
    'Rollouts to target: per seed, the first iteration at which the mean training step accuracy of the last iterations reached the target '
      + '("never": not within the budget). Final team accuracy: every seed\'s last evaluation pooled, Wilson interval; final step accuracy and its gain '
      + 'over the untrained team: mean over seeds with its t interval (with one seed: over the held-out steps, Wilson / normal). '
      + `Rollouts to the team target: per seed, the first evaluation at which it and the one before averaged the target. Plot (${o.recipe ? 'scale-recipe.svg' : 'scale.svg'}): `
      + 'geometric mean over the seeds that reached it against log2 N on a log scale (a triangle: not every seed reached it; at the budget: none did), '
      + `beside the theory lines anchored at the ${ARM_WORDS[anchorArm]} arm's smallest N with a held-out gain above 0, and `
      + 'docs/credit.md\'s prediction for outcome reward.', '',
  ].join('\n');
  return { markdown, svg };
}
