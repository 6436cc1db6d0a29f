/**
 * The judge model against the rule labeller it learnt from, on the real base team's own held-out
 * work of both teams: the shipped agent plays the math chain (every 4th of the 200 held-out problems)
 * and the data team (the 36 held-out tables) greedy, the rule rubrics label each action in its
 * context, and the judge scores the same contexts greedy. The figure that matters is whether the
 * judge beats always answering the labels' mean, with the 95 % interval of the paired difference.
 *
 * For: `npm run bench -- judge [--judge models/judge[,DIR...]] [--agent models/agent] [--math-every 4]`, a
 * markdown table on stdout. Not for: training the judge (scripts/pretrain.ts does, and measures the
 * same thing at its end for the judge it made).
 *
 * The interval: per action, d = |judge - label| - |mean - label|; mean(d) +- t * sd / sqrt(n). Actions
 * of one trajectory are not independent, so the interval is a little narrow; the table says so.
 * Example: npm run -s bench -- judge > bench/results/judge-wasm.md
 *   | math, the base team's actions | 150 | 100 % | 2.54 | 2.38 | +0.16 [-0.30, +0.62] | ...
 *
 * --relay: the relay team's judge (default models/relay-judge; --judges DIR,DIR,... for several, e.g. the
 * checkpoints scripts/pretrain-relay-judge.ts saves) against the relay rubric, the rater it learnt from,
 * on held-out relay steps the real team takes: models/relay (no adapter) at T = 1 on the first --tasks
 * (default 100) held-out tasks of every team size in --sizes (default 1..6). Within-agent pairwise
 * ranking accuracy (pairs of one agent, same team size, whose ratings differ; judge ties count half;
 * bootstrap interval over actions), MAE (t interval) and agreement at the pass line (score >= 5, Wilson),
 * beside always-the-mean and a fair coin between 0 and 10 (src/core/domains/relay/judge.ts). The judges
 * read the relay team's own coach template (--template team, what its judge is trained on; --template
 * generic for a judge trained on the generic one).
 * Example: npm run -s bench -- judge --relay --judges /tmp/relay-judge-ckpt/step-50,models/relay-judge
 */
import os from 'node:os';
import { describeBackend, initBackend } from '../src/core/engine/backend.ts';
import { loadModel } from '../src/core/engine/model/load.ts';
import { folderSource } from '../src/core/engine/model/sources.ts';
import { DATA_CHAIN, dataHeldOut } from '../src/core/domains/data/team.ts';
import { MATH_CHAIN } from '../src/core/domains/math/index.ts';
import { resolveTrainConfig } from '../src/core/domains/index.ts';
import { tInterval } from '../src/core/stats/intervals.ts';
import { createSqlTool } from '../src/core/tools/sql.ts';
import { FIT_PREDICT } from '../src/core/domains/data/fit.ts';
import { createSandbox } from '../src/core/tools/code-sandbox.ts';
import { disposeTools, type ToolRunners } from '../src/core/tools/runners.ts';
import { judgeAgreement, teamAccuracy, type JudgeAgreement } from '../scripts/pretrain/evaluate.ts';
import { dataJudgeItems } from '../scripts/pretrain/data-transcripts.ts';
import { judgeExamples, type JudgeItem } from '../scripts/pretrain/transcripts.ts';
import { mathView } from '../scripts/pretrain-team-judge.ts';
import { EngineAgents } from '../src/core/loop/agents.ts';
import { type Coach, ModelCoach } from '../src/core/coach/coach.ts';
import { relayHeldOut } from '../src/core/domains/relay/tasks.ts';
import { RELAY_COACH_TEMPLATE, RELAY_JUDGE_MODEL } from '../src/core/domains/relay/team.ts';
import { DEFAULT_COACH_TEMPLATE } from '../src/core/coach/coach-format.ts';
import { baselineScores, judgeVsRater, relayRatedSteps, type JudgeVsRater, type RatedStep } from '../src/core/domains/relay/judge.ts';
import { formatPercent, type Interval } from '../src/core/stats/intervals.ts';

interface Options {
  judge: string;
  agent: string;
  mathEvery: number;
  /** How the math judges are asked (scripts/pretrain-team-judge.ts mathView): template, truth view, scratchpad. */
  template: string;
  truth: string;
  scratchpad: number;
  /** Skip the data team (math judges only). */
  mathOnly: boolean;
}

function parse(argv: string[]): Options {
  const o: Options = { judge: 'models/judge', agent: 'models/agent', mathEvery: 4, template: 'generic', truth: 'final', scratchpad: 0, mathOnly: false };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, v] = [argv[i], argv[i + 1]];
    if (v === undefined) throw new Error(`bench judge: ${flag} needs a value`);
    if (flag === '--judge') o.judge = v;
    else if (flag === '--agent') o.agent = v;
    else if (flag === '--template') o.template = v;
    else if (flag === '--truth') o.truth = v;
    else if (flag === '--scratchpad') o.scratchpad = Number(v);
    else if (flag === '--math-only') o.mathOnly = v === '1';
    else if (flag === '--math-every') {
      o.mathEvery = Number(v);
      if (!Number.isInteger(o.mathEvery) || o.mathEvery < 1) throw new Error(`bench judge: --math-every needs a positive integer, got "${v}"`);
    } else throw new Error(`bench judge: unknown option "${flag}". Options: --judge DIR --agent DIR --math-every N --template generic|team --truth final|every --scratchpad 0|1 --math-only 0|1`);
  }
  return o;
}

/** Mean of the paired differences with its t interval. Example: [1, 0, -1, 0] -> 0 [-1.30, +1.30]. */
export function meanInterval(d: readonly number[]): { mean: number; lo: number; hi: number } {
  const i = tInterval(d);
  return { mean: i.p, lo: i.low, hi: i.high };
}

const signed = (x: number) => `${x >= 0 ? '+' : ''}${x.toFixed(2)}`;

/**
 * One table row; `verdict` says whether the interval excludes 0. `ranking`: the judge's within-agent
 * pairwise ranking accuracy against the labels, and a fair coin's (judgeVsRater), when measured.
 */
export function judgeRow(name: string, a: JudgeAgreement, ranking?: { judge: Interval; coin: Interval }): string {
  const i = meanInterval(a.gains ?? []);
  const verdict = i.hi < 0 ? 'judge better' : i.lo > 0 ? 'mean better' : 'within noise';
  return `| ${name} | ${a.actions} | ${(a.parsed * 100).toFixed(0)} % | ${a.mae.toFixed(2)} | ${a.baselineMae.toFixed(2)} | ` +
    `${signed(i.mean)} [${signed(i.lo)}, ${signed(i.hi)}] | ${verdict} | ${(a.within1 * 100).toFixed(1)} % | ` +
    `${ranking ? `${formatPercent(ranking.judge)} | ${formatPercent(ranking.coin)}` : '- | -'} |`;
}

/** Within-agent ranking of the judge's scores against the labels, beside a fair coin's (pairs within one agent id). */
export function labelRanking(items: { context: { agentId: string }; score: number }[], scores: number[]): { judge: Interval; coin: Interval } {
  const labels = items.map((it) => it.score);
  const groups = items.map((it) => it.context.agentId);
  return { judge: judgeVsRater(labels, scores, groups).ranking, coin: judgeVsRater(labels, baselineScores(labels).coin, groups).ranking };
}

interface RelayOptions {
  judges: string[];
  relayModel: string;
  tasks: number;
  sizes: number[];
  reps: number;
  /** Answers of each judge to print (the first N steps). */
  show: number;
  /** The coach template the judges read: the relay team's own ('team', what they are trained on) or 'generic'. */
  template: 'team' | 'generic';
}

export function parseRelay(argv: string[]): RelayOptions {
  const o: RelayOptions = { judges: [RELAY_JUDGE_MODEL], relayModel: 'models/relay', tasks: 100, sizes: [1, 2, 3, 4, 5, 6], reps: 200, show: 0, template: 'team' };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, v] = [argv[i], argv[i + 1]];
    if (v === undefined) throw new Error(`bench judge --relay: ${flag} needs a value`);
    if (flag === '--judge' || flag === '--judges') o.judges = v.split(',').map((s) => s.trim()).filter(Boolean);
    else if (flag === '--relay-model') o.relayModel = v;
    else if (flag === '--template') {
      if (v !== 'team' && v !== 'generic') throw new Error(`bench judge --relay: --template is team (the relay's own) or generic, got "${v}"`);
      o.template = v;
    }
    else if (flag === '--tasks' || flag === '--reps' || flag === '--show') {
      const n = Number(v);
      if (!Number.isInteger(n) || n < 1) throw new Error(`bench judge --relay: ${flag} needs a positive integer, got "${v}"`);
      if (flag === '--tasks') o.tasks = n;
      else if (flag === '--show') o.show = n;
      else o.reps = n;
    } else if (flag === '--sizes') {
      o.sizes = v.split(',').map(Number);
      if (o.sizes.some((n) => !Number.isInteger(n) || n < 1 || n > 6)) throw new Error(`bench judge --relay: --sizes takes team sizes 1..6 like 2,4,6, got "${v}"`);
    } else throw new Error(`bench judge --relay: unknown option "${flag}". Options: --judges DIR[,DIR...] --relay-model DIR --tasks N --sizes 1,2,... --reps N --show N --template team|generic`);
  }
  return o;
}

const ival = (i: Interval, digits = 2) => `${i.p.toFixed(digits)} [${i.low.toFixed(digits)}, ${i.high.toFixed(digits)}]`;

/** One row of the relay table. */
export function relayJudgeRow(name: string, v: JudgeVsRater, parsed?: number): string {
  return `| ${name} | ${v.n} | ${parsed === undefined ? '-' : `${(parsed * 100).toFixed(0)} %`} | ${formatPercent(v.ranking)} | ${ival(v.mae)} | ${formatPercent(v.agreement)} |`;
}

/** Held-out relay steps the real team takes (models/relay, no adapter, T = 1), each rated by the rubric. */
export async function relayHeldOutSteps(relayModel: string, tasks: number, sizes: number[]): Promise<RatedStep[]> {
  const relay = await loadModel(folderSource(relayModel), { tokenizer: 'required' });
  const steps: RatedStep[] = [];
  try {
    const agents = new EngineAgents(relay, new Map(), 64);
    for (const n of sizes) steps.push(...(await relayRatedSteps(agents, n, relayHeldOut(n).slice(0, tasks), { seed: 500 + n })));
  } finally {
    relay.model.dispose();
  }
  return steps;
}

/** Any coach scored against the rater on `steps`: ranking, MAE, agreement, the share of its answers that parsed, and the answers. */
export async function rankCoach(coach: Coach, steps: RatedStep[], reps: number): Promise<{ v: JudgeVsRater; parsed: number; seconds: number; raw: string[] }> {
  const t0 = performance.now();
  const scored = await coach.scoreBatch(steps.map((s) => s.context));
  const v = judgeVsRater(steps.map((s) => s.rating.score), scored.map((r) => r.score), steps.map((s) => s.group), { reps });
  return { v, parsed: scored.filter((r) => r.ok).length / scored.length, seconds: (performance.now() - t0) / 1000, raw: scored.map((r) => r.raw) };
}

/** A judge folder as the coach reading `template` (default: the relay team's own), ranked by rankCoach (the model is freed after). */
export async function rankJudge(dir: string, steps: RatedStep[], reps: number, template = RELAY_COACH_TEMPLATE): ReturnType<typeof rankCoach> {
  const judge = await loadModel(folderSource(dir), { tokenizer: 'required' });
  try {
    return await rankCoach(new ModelCoach(judge, template), steps, reps);
  } finally {
    judge.model.dispose();
  }
}

/** The relay judge(s) against the relay rubric on the real team's held-out steps (see the header). */
export async function relayMain(argv: string[]): Promise<void> {
  const o = parseRelay(argv);
  const info = await initBackend({ force: 'wasm' });
  const log = (m: string) => console.error(`[bench judge --relay ${new Date().toISOString().slice(11, 19)}] ${m}`);
  const started = performance.now();
  const steps = await relayHeldOutSteps(o.relayModel, o.tasks, o.sizes);
  const kinds: Record<string, number> = {};
  for (const s of steps) kinds[s.kind] = (kinds[s.kind] ?? 0) + 1;
  log(`${steps.length} held-out steps ${JSON.stringify(kinds)}`);
  const rater = steps.map((s) => s.rating.score);
  const groups = steps.map((s) => s.group);
  const rows: string[] = [];
  const seconds: string[] = [];
  for (const dir of o.judges) {
    const { v, parsed, seconds: s, raw } = await rankJudge(dir, steps, o.reps, o.template === 'team' ? RELAY_COACH_TEMPLATE : DEFAULT_COACH_TEMPLATE);
    // --show N: the judge's first answers beside the step and the rater's score (what its scratchpad got wrong).
    for (const [i, st] of steps.slice(0, o.show).entries()) {
      log(`  ${JSON.stringify(st.context.input.split('\n').at(-1))} answered ${JSON.stringify(st.context.output)}, rater ${st.rating.score}: ${JSON.stringify(raw[i])}`);
    }
    seconds.push(`${dir} ${s.toFixed(0)} s`);
    log(`${dir}: ranking ${formatPercent(v.ranking)}, MAE ${ival(v.mae)}, agreement ${formatPercent(v.agreement)}`);
    rows.push(relayJudgeRow(`judge \`${dir}\``, v, parsed));
  }
  const base = baselineScores(rater);
  rows.push(relayJudgeRow('always the raters\' mean', judgeVsRater(rater, base.mean, groups, { reps: o.reps })));
  rows.push(relayJudgeRow('a fair coin (0 or 10)', judgeVsRater(rater, base.coin, groups, { reps: o.reps })));
  console.log(`Relay judge(s) vs the relay rubric (relayRuleScore, the rater) on ${steps.length} held-out steps of the real relay team ` +
    `(${o.relayModel}, no adapter, T = 1; first ${o.tasks} held-out tasks of team sizes ${o.sizes.join(', ')}; ${JSON.stringify(kinds)}); ` +
    `coach template: ${o.template === 'team' ? 'the relay team\'s own' : 'the generic one'}; ` +
    `backend ${describeBackend(info)}, 1 thread, ${os.cpus().length} cores, ${((performance.now() - started) / 60000).toFixed(1)} min (judging: ${seconds.join('; ')}).\n`);
  console.log('| scorer | actions | parsable | within-agent ranking accuracy | MAE (0-10) | agreement at the pass line (>= 5) |');
  console.log('|---|---:|---:|---:|---:|---:|');
  for (const r of rows) console.log(r);
  console.log(`\n95 % intervals: ranking, bootstrap over actions (${o.reps} resamples; pairs are within one agent of one team size, ratings differing, judge ties half); ` +
    'MAE, t over actions; agreement, Wilson. Steps of one trajectory are not independent, so the intervals are a little narrow. ' +
    'The mean baseline uses the held-out raters\' own mean (slightly optimistic for it).');
}

export async function main(argv: string[]): Promise<void> {
  if (argv.includes('--relay')) return relayMain(argv.filter((a) => a !== '--relay'));
  const o = parse(argv);
  const info = await initBackend({ force: 'wasm' });
  const log = (m: string) => console.error(`[bench judge ${new Date().toISOString().slice(11, 19)}] ${m}`);
  const dirs = o.judge.split(',').map((d) => d.trim()).filter(Boolean);
  const agent = await loadModel(folderSource(o.agent));
  // The contexts are tokenized once, with the first judge's tokenizer (every judge here shares the agent's).
  const first = await loadModel(folderSource(dirs[0]));
  const tok = first.tokenizer;
  first.model.dispose();
  if (!tok) throw new Error(`bench judge: ${dirs[0]} has no tokenizer.json; the judge needs its tokenizer`);
  const sandbox = createSandbox();
  const tools: ToolRunners = { python: sandbox, javascript: sandbox, sql: createSqlTool({ functions: [FIT_PREDICT] }) };
  const started = performance.now();
  try {
    // The loop's evaluation of the untrained team (the held-out order of mappa train), its greedy pass.
    const math = { length: Math.ceil(200 / o.mathEvery) };
    log(`math team greedy on ${math.length} held-out problems`);
    const mathRun = (await teamAccuracy(agent, tools, resolveTrainConfig({ workflow: MATH_CHAIN, evalTasks: math.length }))).greedy;
    const dataHeld = dataHeldOut(['classification', 'regression', 'table-question']);
    const dataConfig = resolveTrainConfig({ workflow: DATA_CHAIN, evalTasks: dataHeld.length }); // with the team's own settings
    if (!o.mathOnly) log(`data team greedy on the held-out tables`);
    const dataRun = o.mathOnly ? null : (await teamAccuracy(agent, tools, dataConfig, dataHeld)).greedy;
    const view = mathView(o as unknown as Parameters<typeof mathView>[0]);
    const sets: Record<string, JudgeItem[]> = {
      math: mathRun.trajectories.flatMap((t) => judgeExamples(t, tok, view)),
      ...(dataRun ? { data: dataRun.trajectories.flatMap((t) => dataJudgeItems(t, tok)) } : {}),
    };
    const rows: string[] = [];
    for (const [name, items] of Object.entries(sets)) {
      for (const dir of dirs) {
        log(`${dir}: judging ${items.length} ${name} actions`);
        const judge = await loadModel(folderSource(dir));
        try {
          const a = await judgeAgreement(judge, items, 16, { gains: true, ...(name === 'math' ? { template: view.template } : {}) });
          const run = name === 'math' ? mathRun : dataRun!;
          const work = `${name}, the base team's actions (${name === 'math' ? `${math.length} problems` : `${run.tasks} tables`}, greedy ${run.accuracy * 100 | 0} % right)`;
          rows.push(judgeRow(dirs.length > 1 ? `${work}, judge \`${dir}\`` : work, a, labelRanking(items, a.scores!)));
        } finally {
          judge.model.dispose();
        }
      }
    }
    console.log(`Judge${dirs.length > 1 ? 's' : ''} ${dirs.map((d) => `\`${d}\``).join(', ')} vs the rule labeller (src/core/domains/math/rule-coach.ts, data-coach.ts) on the base team's own held-out work; ` +
      `math judges asked with the ${o.template} template, the truth shown for ${o.truth === 'every' ? 'every agent' : 'the final agent'}${o.scratchpad ? ', a scratchpad' : ''}; ` +
      `backend ${describeBackend(info)}, 1 thread, ${os.cpus().length} cores, ${((performance.now() - started) / 60000).toFixed(1)} min.\n`);
    console.log('| work judged | actions | parsable | judge MAE | mean MAE | judge - mean, 95 % interval | | within +-1 | within-agent ranking [95 %] | a fair coin\'s ranking |');
    console.log('|---|---:|---:|---:|---:|---:|---|---:|---:|---:|');
    for (const r of rows) console.log(r);
    console.log('\nMean MAE: always answering the labels\' mean. The interval is over actions (actions of one trajectory are not independent, so it is a little narrow). ' +
      'Ranking: pairs of one agent\'s actions whose labels differ, ordered as the labels order them (judge ties half; bootstrap over actions); always-the-mean ties every pair (50 %).');
  } finally {
    agent.model.dispose();
    await disposeTools(tools);
  }
}
