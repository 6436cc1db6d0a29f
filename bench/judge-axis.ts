/**
 * Judge quality as the experiment's axis (`npm run bench -- judge-axis`): how good must the coach be
 * before process reward from it beats outcome reward? On the relay of 4 agents, each judge folder
 * (checkpoints of one judge's training, judges of other recipes) is
 *   - measured: its within-agent ranking accuracy against the rater (the relay rubric) on held-out
 *     steps the real team takes (bench/judge.ts, rankJudge), with its bootstrap interval;
 *   - used: as the coach of process reward, 3 seeds, the relay bench's budget (bench/relay.ts);
 * and the step accuracy each run gains is plotted against the judge's ranking accuracy, with the
 * rubric itself (ranking 100 %) and outcome reward (no coach) as the two reference lines. Beside the
 * real judges, `--noise 1,2,4` adds the synthetic axis: the rubric with Gaussian noise sigma on its
 * 0-10 scores (MiscalibratedCoach), its ranking measured the same way on the same steps.
 *
 * For: bench/results/relay-judge-axis.md and relay-judge-axis.svg. Runs are reused from --out (the
 * relay bench's folders: n4-process-judge-<folder name>-seedS, n4-process-seedS, n4-outcome-seedS),
 * so the report over finished runs takes a few minutes (the ranking measurements); a missing run is trained.
 * Not for: the judges' own table of MAE and agreement (npm run bench -- judge --relay).
 *
 * Example: npm run -s bench -- judge-axis --judges /tmp/rj2-ckpt/step-300,/tmp/rj2,models/relay-judge --noise 2,4,8 --out /tmp --target 0.65
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describeBackend, initBackend } from '../src/core/engine/backend.ts';
import { relayConfig } from '../src/core/domains/relay/team.ts';
import { resolveTrainConfig, teamOf } from '../src/core/domains/index.ts';
import { evaluateTeam } from '../src/core/loop/eval-queue.ts';
import { LocalCompute } from '../src/core/compute/local.ts';
import { formatPercent } from '../src/core/stats/intervals.ts';
import { MiscalibratedCoach } from '../src/core/coach/coach.ts';
import { RELAY_COACH_TEMPLATE, relayRuleCoach } from '../src/core/domains/relay/team.ts';
import { DEFAULT_COACH_TEMPLATE } from '../src/core/coach/coach-format.ts';
import type { RatedStep } from '../src/core/domains/relay/judge.ts';
import { openModel } from '../src/cli/common.ts';
import { rankCoach, rankJudge, relayHeldOutSteps } from './judge.ts';
import { fmtGain, gainOf, header, log, parseRelayArgs, pooledFinal, reach, relayRun, type RelayRun } from './relay.ts';
import { svgPanels, type PlotPoint } from './plot.ts';

const N = 4;
/** Held-out steps for the ranking: the first 50 held-out tasks of every team size (as docs/judges.md). */
const RANK_TASKS = 50;
const RANK_SIZES = [1, 2, 3, 4, 5, 6];

interface AxisRow {
  name: string;
  ranking: { p: number; low: number; high: number } | null;
  runs: RelayRun[];
}

/**
 * The coach template a judge was built on: its report.json flags (none there, as in the older relay judges: 'generic'), or for a
 * taught version (taught.json) its parent's; 'team' when neither says. Example: builtTemplate('test/fixtures/relay-judge-weak') -> 'generic'
 */
export function builtTemplate(dir: string): 'team' | 'generic' {
  const read = (f: string) => (existsSync(f) ? JSON.parse(readFileSync(f, 'utf8')) as { flags?: { template?: string }; parent?: string } : null);
  const report = read(path.join(dir, 'report.json'));
  // A build report without a template predates the team's own (as bench/corrections.ts reads it): generic.
  if (report?.flags) return (report.flags.template ?? 'generic') === 'generic' ? 'generic' : 'team';
  const parent = read(path.join(dir, 'taught.json'))?.parent;
  return parent && path.resolve(parent) !== path.resolve(dir) ? builtTemplate(parent) : 'team';
}

/** `--judges A,B,...` and `--noise S,S,...` apart; every other flag is the relay bench's (--out, --seeds, --target, --results). */
function parseArgs(argv: string[]): { judges: string[]; noise: number[]; rest: string[] } {
  const take = (flag: string) => {
    const i = argv.indexOf(flag);
    if (i < 0) return null;
    if (!argv[i + 1]) throw new Error(`bench judge-axis: ${flag} needs a value`);
    const v = argv[i + 1].split(',').map((s) => s.trim()).filter(Boolean);
    argv = [...argv.slice(0, i), ...argv.slice(i + 2)];
    return v;
  };
  const judges = take('--judges');
  if (!judges) throw new Error('bench judge-axis: --judges DIR[,DIR...] is required (judge folders: checkpoints, other recipes, models/relay-judge)');
  const noise = (take('--noise') ?? []).map(Number);
  if (noise.some((x) => !(x > 0))) throw new Error('bench judge-axis: --noise takes positive sigmas like 2,4,8');
  return { judges, noise, rest: argv };
}

/** The rubric with noise sigma, as a coach, against the rater on the same steps (the synthetic axis). */
async function rankNoisyRubric(sigma: number, steps: RatedStep[]) {
  return (await rankCoach(new MiscalibratedCoach(relayRuleCoach(), { noise: sigma, seed: 0 }), steps, 200)).v;
}

const pts = (x: number) => 100 * x;

/** The plot: gain against ranking, judges and noisy rubrics as dots with their intervals, rubric and outcome as lines. */
function axisPlot(rows: AxisRow[], noisy: AxisRow[], rule: AxisRow, outcome: AxisRow): string {
  const gainPoint = (r: AxisRow, x: number): PlotPoint => {
    const g = gainOf(r.runs);
    return { x, y: pts(g.mean), low: pts(g.low), high: pts(g.high) };
  };
  const ruleGain = gainOf(rule.runs).mean;
  const outcomeGain = gainOf(outcome.runs).mean;
  return svgPanels([{
    title: `Relay of ${N}: process reward from judges of measured quality`, xLabel: 'judge\'s within-agent ranking accuracy vs the rater (%)',
    yLabel: 'held-out step accuracy gained (points)', xMin: 40, yMin: -60, yMax: 40, yFormat: (v: number) => v.toFixed(0),
    series: [
      { label: 'judge models this machine trained (mean of seeds, 95 % t interval)', dotsOnly: true, color: '#1f77b4', points: rows.map((r) => gainPoint(r, pts(r.ranking!.p))) },
      ...(noisy.length ? [{ label: 'the rubric with Gaussian noise (synthetic judges)', dotsOnly: true, color: '#9467bd', points: noisy.map((r) => gainPoint(r, pts(r.ranking!.p))) }] : []),
      { label: 'the rubric (the rater itself, ranking 100 %)', dashed: true, color: '#2ca02c', points: [{ x: 40, y: pts(ruleGain) }, { ...gainPoint(rule, 100) }] },
      { label: 'outcome reward (no coach)', dashed: true, color: '#d62728', points: [{ x: 40, y: pts(outcomeGain) }, { x: 100, y: pts(outcomeGain) }] },
    ],
  }], 'How good must the coach be?');
}

export async function main(argv: string[]): Promise<void> {
  const { judges, noise, rest } = parseArgs(argv);
  const o = parseRelayArgs(['--agents', String(N), '--target', '0.65', ...rest]);
  const info = await initBackend({ force: 'wasm' });
  const config = resolveTrainConfig({ ...relayConfig(N), ...(o.iterations ? { iterations: o.iterations } : {}) });
  const model = await openModel(config.agentModel, { tokenizer: 'required' });
  const baseline = (await evaluateTeam(config, teamOf(config.workflow), LocalCompute.forTeam({ team: teamOf(config.workflow), agentModel: model, tools: {} }))).result;
  const steps = await relayHeldOutSteps('models/relay', RANK_TASKS, RANK_SIZES);
  log(`${steps.length} held-out steps to rank the judges on`);
  const seeds = async (mode: 'process' | 'outcome', judge?: string, judgeTemplate?: 'team' | 'generic') => {
    const runs: RelayRun[] = [];
    for (const seed of o.seeds) runs.push(await relayRun(N, { label: mode, mode, patch: {} }, seed, { ...o, coach: judge ? 'model' : 'rule', judge, judgeTemplate }, model, baseline));
    return runs;
  };
  const rows: AxisRow[] = [];
  for (const dir of judges) {
    const judgeTemplate = builtTemplate(dir);
    const { v } = await rankJudge(dir, steps, 200, judgeTemplate === 'generic' ? DEFAULT_COACH_TEMPLATE : RELAY_COACH_TEMPLATE);
    log(`${dir}: ranking ${formatPercent(v.ranking)}`);
    rows.push({ name: `judge ${dir}${judgeTemplate === 'generic' ? ' (generic template)' : ''}`, ranking: v.ranking, runs: await seeds('process', dir, judgeTemplate) });
  }
  rows.sort((a, b) => a.ranking!.p - b.ranking!.p);
  const noisy: AxisRow[] = [];
  for (const sigma of noise) {
    const v = await rankNoisyRubric(sigma, steps);
    log(`rubric + noise sigma ${sigma}: ranking ${formatPercent(v.ranking)}`);
    const patch = { coach: { kind: 'rule', miscalibration: { noise: sigma, seed: 0 } } };
    const runs: RelayRun[] = [];
    for (const seed of o.seeds) runs.push(await relayRun(N, { label: `process-noise${sigma}`, mode: 'process', patch }, seed, o, model, baseline));
    noisy.push({ name: `the rubric + noise sigma ${sigma} (synthetic)`, ranking: v.ranking, runs });
  }
  const rule: AxisRow = { name: '**the rubric (the rater)**', ranking: null, runs: await seeds('process') };
  const outcome: AxisRow = { name: '**outcome reward (no coach)**', ranking: null, runs: await seeds('outcome') };
  model.model.dispose();
  await mkdir(o.results, { recursive: true });
  await writeFile(path.join(o.results, 'relay-judge-axis.svg'), axisPlot(rows, noisy, rule, outcome));
  const table = ['| coach of process reward | ranking vs the rater [95 %] | rollouts to target (seeds) | step accuracy gained [95 %] | final team accuracy, pooled [95 %] |', '|---|---|---|---|---|'];
  for (const r of [...rows, ...noisy, rule, outcome]) {
    const ranking = r === rule ? '100 %' : r.ranking ? formatPercent(r.ranking) : '-';
    table.push(`| ${r.name} | ${ranking} | ${reach(r.runs, o.target).text} | ${fmtGain(gainOf(r.runs))} | ${pooledFinal(r.runs)} |`);
  }
  process.stdout.write([
    `# Relay team (N = ${N}): process reward from judges of measured quality`, '', ...header({ ...o, coach: 'rule' }, describeBackend(info), config),
    `- ranking: within-agent pairwise ranking accuracy against the rater on ${steps.length} held-out steps of the untrained team (first ${RANK_TASKS} held-out tasks of sizes ${RANK_SIZES.join(', ')}), bootstrap interval (200 resamples)`,
    `- judge-coached runs: ${path.join(o.out, `n${N}-process-judge-<judge folder name>-seed<S>`)}`, '',
    ...table, '',
    'Gain: each seed\'s final held-out step accuracy minus the untrained one, mean of seeds with its 95 % t interval across seeds. Plot: relay-judge-axis.svg.', '',
  ].join('\n'));
}
