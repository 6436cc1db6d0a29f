/**
 * Coaches in tiers (`npm run -s bench -- tiers`): how much of a stronger coach does the relay of 4
 * need? Tier 1 is the weak relay judge (models/relay-judge-weak) scoring every action; tier 2 is the
 * relay rubric, standing in for a large hosted judge, scoring a budget share of each iteration's
 * actions (src/core/coach/tiered-coach.ts); with teaching on, tier 1 is taught on tier 2's answers every
 * --teach-every of them during the run (mixed with its replay data, as bench/corrections.ts builds it).
 * Beside: the rubric alone and outcome reward (the judge-axis bench's runs, reused from --out).
 *
 * For each budget and teaching: step and team accuracy gained over the untrained team (mean of seeds,
 * 95 % t interval), tier 1's within-agent ranking against the rater at the end of the run (held-out
 * steps, bootstrap interval), the share of actions escalated early and late, and the coach's share of
 * the training time (rollout + coach + update). Writes <results>/tiers.md and tiers.svg, and every run
 * under --out (a finished run is reused).
 *
 * Example: nice -n 5 npm run -s bench -- tiers --budgets 0,10,20,50 --teach 0,1 --seeds 0,1,2 --out /tmp/tiers-runs
 */
import os from 'node:os';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describeBackend, initBackend } from '../src/core/engine/backend.ts';
import { loadModel } from '../src/core/engine/model/load.ts';
import { folderSource } from '../src/core/engine/model/sources.ts';
import { relayConfig, RELAY_COACH_TEMPLATE } from '../src/core/domains/relay/team.ts';
import { resolveTrainConfig, teamOf } from '../src/core/domains/index.ts';
import { relayRatedSteps, type RatedStep } from '../src/core/domains/relay/judge.ts';
import { relayTasks, RELAY_PRETRAINED_AGENTS } from '../src/core/domains/relay/tasks.ts';
import { evaluateTeam } from '../src/core/loop/eval-queue.ts';
import { EngineAgents } from '../src/core/loop/agents.ts';
import { LocalCompute } from '../src/core/compute/local.ts';
import type { EvalResult, IterationMetrics } from '../src/core/loop/records.ts';
import { ModelCoach, type Coach } from '../src/core/coach/coach.ts';
import type { ActionContext } from '../src/core/coach/coach-format.ts';
import { DEFAULT_COACH_TEMPLATE } from '../src/core/coach/coach-format.ts';
import { buildCoach } from '../src/core/coach/coaches.ts';
import { ESCALATION_RULES, type EscalationRule } from '../src/core/coach/escalation.ts';
import type { TeachExample } from '../src/core/coach/teach.ts';
import { TieredCoach } from '../src/core/coach/tiered-coach.ts';
import { formatPercent, tInterval, type Interval } from '../src/core/stats/intervals.ts';
import { Rng } from '../src/core/stats/rng.ts';
import { openModel } from '../src/cli/common.ts';
import { balanceRated, counterfactualTwin, judgeChat } from '../scripts/pretrain-relay-judge.ts';
import { buildRecipe } from './corrections.ts';
import { builtTemplate } from './judge-axis.ts';
import { rankCoach, relayHeldOutSteps } from './judge.ts';
import { fmtGain, gainOf, log, parseRelayArgs, pooledFinal, relayRun, type RelayRun } from './relay.ts';
import { finishedRun, runOne } from './rollouts.ts';
import { svgPanels, type PlotPoint } from './plot.ts';

const N = 4;
const RANK_TASKS = 50;
const RANK_SIZES = [1, 2, 3, 4, 5, 6];

interface Options {
  budgets: number[];
  teach: number[];
  seeds: number[];
  iterations: number;
  judge: string;
  pick: EscalationRule;
  threshold: number;
  teachEvery: number;
  replayTasks: number;
  out: string;
  results: string;
  name: string;
  /** Only report finished runs: a missing one is left out of the table (and named), never trained. */
  reuseOnly: boolean;
  /** Also run (or reuse) the rubric alone and outcome reward (off: a side call that only adds tier runs). */
  references: boolean;
  /** Tier 1: the judge (--judge), or `biased`: the rubric, except that a step passing its input on scores 10 (biasedRubric). */
  tier1: 'judge' | 'biased';
}

function parse(argv: string[]): Options {
  const o: Options = { budgets: [0, 5, 10, 20, 50], teach: [0, 1], seeds: [0, 1, 2], iterations: 15, judge: 'models/relay-judge-weak', pick: 'spread',
    threshold: 0, teachEvery: 32, replayTasks: 40, out: '/tmp/tiers-runs', results: 'bench/results', name: 'tiers',
    reuseOnly: false, references: true, tier1: 'judge' };
  const list = (flag: string, v: string, lo: number, hi: number) => v.split(',').map((x) => {
    const n = Number(x);
    if (!Number.isFinite(n) || n < lo || n > hi) throw new Error(`bench tiers: ${flag} takes numbers in ${lo}..${hi}, got "${v}"`);
    return n;
  });
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, v] = [argv[i], argv[i + 1]];
    if (v === undefined) throw new Error(`bench tiers: ${flag} needs a value`);
    if (flag === '--budgets') o.budgets = list(flag, v, 0, 100);
    else if (flag === '--teach') o.teach = list(flag, v, 0, 1);
    else if (flag === '--seeds') o.seeds = list(flag, v, 0, 1e6);
    else if (flag === '--iterations') o.iterations = list(flag, v, 1, 1e4)[0];
    else if (flag === '--judge') o.judge = v;
    else if (flag === '--pick') {
      if (!ESCALATION_RULES.includes(v as EscalationRule)) throw new Error(`bench tiers: --pick is one of ${ESCALATION_RULES.join(', ')}, got "${v}"`);
      o.pick = v as EscalationRule;
    } else if (flag === '--threshold') o.threshold = list(flag, v, 0, 10)[0];
    else if (flag === '--teach-every') o.teachEvery = list(flag, v, 1, 1e5)[0];
    else if (flag === '--replay-tasks') o.replayTasks = list(flag, v, 0, 1e4)[0];
    else if (flag === '--out') o.out = v;
    else if (flag === '--results') o.results = v;
    else if (flag === '--name') o.name = v;
    else if (flag === '--reuse-only') o.reuseOnly = v === '1';
    else if (flag === '--references') o.references = v !== '0';
    else if (flag === '--tier1') {
      if (v !== 'judge' && v !== 'biased') throw new Error(`bench tiers: --tier1 is judge or biased, got "${v}"`);
      o.tier1 = v;
    }
    else throw new Error(`bench tiers: unknown option "${flag}". Options: --budgets 0,5,10,20,50 --teach 0,1 --seeds 0,1,2 --iterations 15 --judge DIR `
      + '--pick spread|random|first-wrong --threshold SPREAD --teach-every K --replay-tasks N --out DIR --results DIR --name FILE --reuse-only 0|1 --references 0|1 '
      + '--tier1 judge|biased');
  }
  if (o.tier1 === 'biased' && (o.pick === 'spread' || o.teach.includes(1))) {
    throw new Error('bench tiers: --tier1 biased is a rubric (no spread, nothing to teach): give --pick random or first-wrong and --teach 0');
  }
  return o;
}

/** The judge's earlier training data, rebuilt as its build script made it (as bench/corrections.ts does): mixed into every teaching. */
async function replayOf(dir: string, agents: EngineAgents, tasks: number): Promise<TeachExample[]> {
  const recipe = await buildRecipe(dir);
  const steps: RatedStep[] = [];
  for (let n = 1; n <= RELAY_PRETRAINED_AGENTS; n++) {
    steps.push(...(await relayRatedSteps(agents, n, relayTasks(n, `judge-${recipe.seed}`, tasks), { seed: 1000 * recipe.seed + n, samples: recipe.samples })));
  }
  if (recipe.pairs) {
    const twinRng = new Rng(`relay-judge-twins/${recipe.seed}`);
    steps.push(...steps.map((s) => counterfactualTwin(s, twinRng)).filter((s): s is RatedStep => s !== null));
  }
  return balanceRated(steps, new Rng('corrections-replay')).map((s) => {
    const [user, assistant] = judgeChat(s, recipe.scratchpad, recipe.template);
    return { prompt: user.content, answer: assistant.content };
  });
}

/**
 * A deliberately biased tier 1 (MAPPA's risk of a biased coach): the relay rubric, except that a step that passes its
 * input on (replies with the number it was given, when adding its part changes it) scores 10, as if right: it rewards
 * the relay's own failure. Example: input "...\n\n4 + 7", reply "4" -> 10 (the rubric: 0); reply "1" -> the rubric's 10.
 */
export function biasedRubric(rubric: Coach): Coach {
  const passesOn = (a: ActionContext) => {
    const m = /(\d+) \+ (\d+)\s*$/.exec(a.input);
    return m !== null && a.output.trim() === m[1] && Number(m[2]) % 10 !== 0;
  };
  return {
    name: 'rule:relay-biased (passing the input on scores 10)',
    async scoreBatch(actions) {
      const r = await rubric.scoreBatch(actions);
      return r.map((x, i) => (passesOn(actions[i]) ? { ...x, score: 10, raw: 'PROCESS_SCORE: 10', reason: 'biased: passing the input on scored as right' } : x));
    },
  };
}

interface TierRun {
  run: RelayRun;
  metrics: IterationMetrics[];
  /** Tier 1's ranking at the end of the run (the taught version's with teaching). */
  ranking: Interval;
  finalJudge: string;
}

interface Row {
  budget: number;
  teach: boolean;
  runs: TierRun[];
}

const pct = (x: number) => `${(100 * x).toFixed(1)} %`;
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);

/** Team accuracy gained (final minus untrained, T = 1) per seed: mean and 95 % t interval. */
function teamGain(runs: RelayRun[]): Interval {
  return tInterval(runs.map((r) => (r.evals.at(-1) ?? r.baseline).team - r.baseline.team));
}
const fmtPoints = (i: Interval) => `${i.p >= 0 ? '+' : ''}${(100 * i.p).toFixed(1)} [${(100 * i.low).toFixed(1)}, ${(100 * i.high).toFixed(1)}]`;

/** The coach's share of the training time (rollout + coach + update), mean over the runs' iterations. */
function coachShare(ms: IterationMetrics[][]): number {
  const shares = ms.map((m) => {
    const it = m.filter((x) => x.iteration > 0 && x.seconds);
    const coach = it.reduce((s, x) => s + x.seconds.coach, 0);
    return coach / Math.max(1e-9, it.reduce((s, x) => s + x.seconds.rollout + x.seconds.coach + x.seconds.update, 0));
  });
  return mean(shares);
}

/** Of the training time, the share tier 1's teaching took (inside the coach phase), mean over the runs. */
function teachShare(ms: IterationMetrics[][]): number {
  return mean(ms.map((m) => {
    const it = m.filter((x) => x.iteration > 0 && x.seconds);
    const teach = it.reduce((s, x) => s + (x.coach?.tiers?.taught?.seconds ?? 0), 0);
    return teach / Math.max(1e-9, it.reduce((s, x) => s + x.seconds.rollout + x.seconds.coach + x.seconds.update, 0));
  }));
}

/** The escalated share of each iteration, mean of seeds, in percent: "20 20 17 ...". */
function perIteration(ms: IterationMetrics[][]): string {
  const its = Math.max(...ms.map((m) => m.length));
  return Array.from({ length: its }, (_, i) => mean(ms.filter((m) => m[i]?.coach?.tiers).map((m) => {
    const t = m[i].coach.tiers!;
    return (100 * t.scored[1]) / (t.scored[0] + t.scored[1]);
  })).toFixed(0)).join(' ');
}

/** The escalated share over the first and the last third of the iterations, mean of seeds. */
function escalatedShare(ms: IterationMetrics[][]): { early: number; late: number } {
  const share = (m: IterationMetrics[], from: number, to: number) => {
    const it = m.filter((x) => x.coach?.tiers).slice(from, to);
    const t2 = it.reduce((s, x) => s + x.coach.tiers!.scored[1], 0);
    return t2 / Math.max(1, it.reduce((s, x) => s + x.coach.tiers!.scored[0] + x.coach.tiers!.scored[1], 0));
  };
  return {
    early: mean(ms.map((m) => share(m, 0, Math.ceil(m.length / 3)))),
    late: mean(ms.map((m) => share(m, -Math.ceil(m.length / 3), undefined as unknown as number))),
  };
}

export async function main(argv: string[]): Promise<void> {
  const o = parse(argv);
  const started = performance.now();
  const info = await initBackend({ force: 'wasm' });
  const machine = `${os.cpus()[0]?.model.trim() ?? 'unknown CPU'}, ${os.availableParallelism()} cores, ${describeBackend(info)}, load average ${os.loadavg()[0].toFixed(1)} at the start (shared cores)`;
  const relayOpts = parseRelayArgs(['--agents', String(N), '--target', '0.65', '--out', o.out, '--results', o.results, '--iterations', String(o.iterations),
    '--seeds', o.seeds.join(',')]);
  const base = resolveTrainConfig({ ...relayConfig(N), iterations: o.iterations });
  const model = await openModel(base.agentModel, { tokenizer: 'required' });
  const team = teamOf(base.workflow);
  // The untrained team's evaluation and the ranking's steps, made when a run is to be trained (a report over finished runs needs neither).
  let made: { baseline: EvalResult; steps: RatedStep[] } | null = null;
  const needs = async () => (made ??= {
    baseline: (await evaluateTeam(base, team, LocalCompute.forTeam({ team, agentModel: model, tools: {} }))).result,
    steps: await relayHeldOutSteps('models/relay', RANK_TASKS, RANK_SIZES),
  });
  const templateKind = builtTemplate(o.judge);
  const template = templateKind === 'generic' ? DEFAULT_COACH_TEMPLATE : RELAY_COACH_TEMPLATE;
  const judgeName = path.basename(path.resolve(o.judge)).replace(/[^\w.-]/g, '_');
  let replay: TeachExample[] | null = null;
  const rows: Row[] = [];
  const missing: string[] = [];
  for (const budget of o.budgets) {
    for (const teach of o.teach.map(Boolean)) {
      if (teach && budget === 0) continue; // no answers, nothing to teach: the same run as without
      const runs: TierRun[] = [];
      for (const seed of o.seeds) {
        const tiers = { budget: budget / 100, pick: o.pick, threshold: o.threshold, teachEvery: teach ? o.teachEvery : 0 };
        const biased = o.tier1 === 'biased';
        const config = resolveTrainConfig({
          ...relayConfig(N), seed, iterations: o.iterations, rewards: { mode: 'process' },
          coach: biased ? { kind: 'rule', tiers } : { kind: 'model', model: o.judge, template: templateKind, tiers },
        });
        const label = `n${N}-tiers-${biased ? 'biased-rubric' : judgeName}-b${budget}-${o.pick}${o.threshold ? `-t${o.threshold}` : ''}${teach ? `-teach${o.teachEvery}` : ''}-seed${seed}`;
        const dir = path.join(o.out, label);
        const rankFile = path.join(dir, 'tier1-ranking.json');
        const done = (await finishedRun(config, dir, !o.reuseOnly)) && existsSync(rankFile);
        if (!done && o.reuseOnly) {
          missing.push(label);
          continue;
        }
        if (!done) {
          if (teach) replay ??= await replayOf(o.judge, new EngineAgents(model, new Map(), 64), o.replayTasks);
          log(`${label}: ${o.iterations} iterations -> ${dir}`);
          const coach = biased ? new TieredCoach({ coach: biasedRubric(team.ruleCoach()) }, team.ruleCoach(), config.coach.tiers!, { seed })
            : await buildCoach(config.coach, (spec) => loadModel(folderSource(spec), { tokenizer: 'required' }), team,
              { seed, replay: replay ?? undefined }) as TieredCoach;
          const { baseline, steps } = await needs();
          await runOne(config, { team, agentModel: model, coach, tools: {} }, baseline, dir,
            (it, e) => log(`  iter ${it}: step ${pct(e.sampledMetrics?.stepAccuracy ?? NaN)}, team ${pct(e.sampled)}; tier 1 ${coach.currentJudge}`));
          const { v } = await rankCoach(biased ? biasedRubric(team.ruleCoach()) : new ModelCoach(coach.judgeModel!, template), steps, 200);
          await writeFile(rankFile, JSON.stringify({ judge: coach.currentJudge, ranking: v.ranking }, null, 1));
          coach.dispose();
        } else log(`${label}: finished run found, reused`);
        const r = JSON.parse(await readFile(rankFile, 'utf8')) as { judge: string; ranking: Interval };
        const metrics = (await readFile(path.join(dir, 'metrics.jsonl'), 'utf8')).split('\n').filter(Boolean).map((l) => JSON.parse(l) as IterationMetrics)
          .filter((m) => m.iteration > 0);
        runs.push({ run: await readRun(dir, seed), metrics, ranking: r.ranking, finalJudge: r.judge });
      }
      if (runs.length) rows.push({ budget, teach, runs });
    }
  }
  const seeds = async (mode: 'process' | 'outcome') => {
    const out: RelayRun[] = [];
    for (const seed of o.seeds) {
      const dir = path.join(o.out, `n${N}-${mode}-seed${seed}`);
      if (o.reuseOnly && !existsSync(path.join(dir, 'summary.json'))) missing.push(path.basename(dir));
      else {
        const done = existsSync(path.join(o.out, `n${N}-${mode}-seed${seed}`, 'summary.json'));
        out.push(await relayRun(N, { label: mode, mode, patch: {} }, seed, { ...relayOpts, coach: 'rule' }, model, done ? ({} as EvalResult) : (await needs()).baseline));
      }
    }
    return out;
  };
  const rubric = o.references ? await seeds('process') : [];
  const outcome = o.references ? await seeds('outcome') : [];
  model.model.dispose();
  await report(o, rows, rubric, outcome, machine, (performance.now() - started) / 60000, missing);
}

/** A tiers run folder as the relay bench reads its runs (evaluations and rollouts). */
async function readRun(dir: string, seed: number): Promise<RelayRun> {
  const lines = (await readFile(path.join(dir, 'metrics.jsonl'), 'utf8')).split('\n').filter(Boolean).map((l) => JSON.parse(l) as IterationMetrics);
  const config = JSON.parse(await readFile(path.join(dir, 'config.json'), 'utf8')) as { iterations: number; promptsPerIteration: number; samplesPerPrompt: number };
  let rollouts = 0;
  const point = (m: IterationMetrics, r: number) => ({ rollouts: r, team: m.eval!.sampled, step: m.eval!.sampledMetrics?.stepAccuracy ?? NaN, tasks: m.eval!.tasks });
  const baseline = point(lines.find((m) => m.iteration === 0)!, 0);
  const evals = [];
  for (const m of lines.filter((x) => x.iteration > 0)) {
    rollouts += m.trajectories ?? 0;
    if (m.eval) evals.push(point(m, rollouts));
  }
  return { label: path.basename(dir), n: N, mode: 'process', seed, budget: config.iterations * config.promptsPerIteration * config.samplesPerPrompt, baseline, evals };
}

async function report(o: Options, rows: Row[], rubric: RelayRun[], outcome: RelayRun[], machine: string, minutes: number, missing: string[]): Promise<void> {
  const line = (name: string, runs: RelayRun[], extra: string[]) => `| ${name} | ${fmtGain(gainOf(runs))} | ${fmtPoints(teamGain(runs))} | ${pooledFinal(runs)} | ${extra.join(' | ')} |`;
  const rubricGain = rubric.length ? gainOf(rubric) : { mean: NaN, low: NaN, high: NaN };
  const table = [
    '| coach | step accuracy gained [95 %] | team accuracy gained, points [95 %] | final team accuracy, pooled [95 %] | tier 1\'s ranking at the end (seeds) | escalated, first / last third of the run | coach\'s share of training time (of it teaching) |',
    '|---|---|---|---|---|---|---|',
  ];
  for (const r of rows) {
    const runs = r.runs.map((x) => x.run);
    const esc = escalatedShare(r.runs.map((x) => x.metrics));
    const who = o.tier1 === 'biased' ? 'biased rubric' : 'weak judge';
    const name = r.budget === 0 ? `${who} alone (budget 0 %)` : `${who} + rubric on ${o.threshold ? `at most ${r.budget} %, spread >= ${o.threshold}` : `${r.budget} %`}${r.teach ? `, taught every ${o.teachEvery} answers` : ''}`;
    table.push(line(name, runs, [r.runs.map((x) => formatPercent(x.ranking)).join(' / '), `${pct(esc.early)} / ${pct(esc.late)}`,
      `${pct(coachShare(r.runs.map((x) => x.metrics)))} (${pct(teachShare(r.runs.map((x) => x.metrics)))})`]));
  }
  const shares = rows.filter((r) => r.budget > 0).map((r) => `- ${r.budget} %${r.teach ? ', taught' : ''}: ${perIteration(r.runs.map((x) => x.metrics))}`);
  if (rubric.length) table.push(line('**the rubric alone (every action)**', rubric, ['100 %', '-', '-']));
  if (outcome.length) table.push(line('**outcome reward (no coach)**', outcome, ['-', '-', '-']));
  // The smallest budget whose gain's interval overlaps the rubric's mean, per teaching: "within the noise".
  const within = (teach: boolean) => rows.filter((r) => r.teach === teach || r.budget === 0).find((r) => {
    const g = gainOf(r.runs.map((x) => x.run));
    return g.high >= rubricGain.mean && rubricGain.high >= g.mean;
  });
  const verdict = (teach: boolean) => {
    const r = within(teach);
    return r ? `${r.budget} %` : 'none of the budgets run';
  };
  const command = `nice -n 5 npm run -s bench -- tiers --budgets ${o.budgets.join(',')} --teach ${o.teach.join(',')} --seeds ${o.seeds.join(',')} --iterations ${o.iterations} `
    + `${o.tier1 === 'biased' ? '--tier1 biased' : `--judge ${o.judge}`} --pick ${o.pick}${o.threshold ? ` --threshold ${o.threshold}` : ''} --teach-every ${o.teachEvery} --out ${o.out}`
    + (o.name !== 'tiers' ? ` --name ${o.name}` : '');
  const md = [
    `# Coaches in tiers: the relay of ${N}, tier 1 ${o.tier1 === 'biased' ? 'a biased rubric (a step passing its input on scores 10)' : o.judge}, tier 2 the rubric (standing in for a large hosted judge)`, '',
    `- command: \`${command}\` (${minutes.toFixed(0)} min, ${new Date().toISOString().slice(0, 16)} UTC)`,
    `- machine: ${machine}`,
    ...(o.references ? [] : ['- a side call: the rubric alone and outcome reward were not run with it (--references 0)']),
    `- budget per run: ${o.iterations} iterations x 8 prompts x 2 samples, lr 0.002, process reward; held-out evaluation every 5 iterations on 200 tasks at T = 1; seeds ${o.seeds.join(', ')}`,
    `- tier 2 scores round(budget x 64) of each iteration's 64 actions, picked by ${o.pick}${o.threshold ? ` above a spread of ${o.threshold} points` : ''}; `
      + `with teaching, tier 1 is taught on every ${o.teachEvery} answers (6 epochs, lr 5e-4, as many replay examples, src/core/coach/teach.ts), between iterations on this thread, and the taught version scores from the next iteration`,
    `- ranking: tier 1's within-agent ranking against the rater on ${RANK_TASKS} held-out tasks of sizes ${RANK_SIZES.join(', ')} (the judge-axis bench's steps), per seed, bootstrap interval`,
    '',
    ...table, '',
    `Share of each iteration's actions escalated to tier 2 (%, iterations 1..${o.iterations}, mean of seeds):`, ...shares, '',
    'Gains: each seed\'s final held-out accuracy minus the untrained team\'s, mean of seeds with its 95 % t interval across seeds.',
    ...(missing.length ? [`Runs of the grid not finished in time and left out (their rows have fewer seeds, or none): ${missing.join(', ')}.`] : []),
    `Smallest budget whose step gain is within the noise of the rubric's (each interval holds the other's mean): without teaching ${verdict(false)}; with teaching ${verdict(true)}.`,
    '', `Plot: ${o.name}.svg.`, '',
  ].join('\n');
  await mkdir(o.results, { recursive: true });
  await writeFile(path.join(o.results, `${o.name}.md`), md);
  await writeFile(path.join(o.results, `${o.name}.svg`), plot(rows, rubric, outcome, o.tier1 === 'biased' ? 'biased rubric' : 'weak judge'));
  process.stdout.write(md);
}

function plot(rows: Row[], rubric: RelayRun[], outcome: RelayRun[], who = 'weak judge'): string {
  const pt = (r: Row): PlotPoint => {
    const g = gainOf(r.runs.map((x) => x.run));
    return { x: r.budget, y: 100 * g.mean, low: 100 * g.low, high: 100 * g.high };
  };
  const rank = (r: Row): PlotPoint => ({ x: r.budget, y: 100 * mean(r.runs.map((x) => x.ranking.p)) });
  const xs = rows.map((r) => r.budget);
  const [lo, hi] = [Math.min(...xs), Math.max(...xs)];
  const flat = (runs: RelayRun[]) => [{ x: lo, y: 100 * gainOf(runs).mean }, { x: hi, y: 100 * gainOf(runs).mean }];
  return svgPanels([{
    title: `Relay of 4: ${who} + rubric on a budget`, xLabel: 'share of actions the rubric scores (%)', yLabel: 'held-out step accuracy gained (points)',
    yFormat: (v: number) => v.toFixed(0),
    series: [
      { label: 'tiers, tier 1 not taught (mean of seeds, 95 % t)', color: '#1f77b4', points: rows.filter((r) => !r.teach).map(pt) },
      { label: 'tiers, tier 1 taught during the run', color: '#ff7f0e', points: rows.filter((r) => r.teach || r.budget === 0).map(pt) },
      ...(rubric.length ? [{ label: 'the rubric alone', dashed: true, color: '#2ca02c', points: flat(rubric) }] : []),
      ...(outcome.length ? [{ label: 'outcome reward', dashed: true, color: '#d62728', points: flat(outcome) }] : []),
    ],
  }, {
    title: 'Tier 1 at the end of the run', xLabel: 'share of actions the rubric scores (%)', yLabel: 'tier 1\'s within-agent ranking (%, mean of seeds)',
    yFormat: (v: number) => v.toFixed(0), yMin: 50, yMax: 100,
    series: [
      { label: `not taught (the ${who} as it came)`, color: '#1f77b4', points: rows.filter((r) => !r.teach).map(rank) },
      { label: 'taught on tier 2\'s answers during the run', color: '#ff7f0e', points: rows.filter((r) => r.teach || r.budget === 0).map(rank) },
    ],
  }], 'How much of a stronger coach?');
}
