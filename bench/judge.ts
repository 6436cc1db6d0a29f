/**
 * The judge model against the rule labeller it learnt from, on the real base team's own held-out
 * work of both teams: the shipped agent plays the math chain (every 4th of the 200 held-out problems)
 * and the data team (the 36 held-out tables) greedy, the rule rubrics label each action in its
 * context, and the judge scores the same contexts greedy. The figure that matters is whether the
 * judge beats always answering the labels' mean, with the 95 % interval of the paired difference.
 *
 * For: `npm run bench -- judge [--judge models/judge] [--agent models/agent] [--math-every 4]`, a
 * markdown table on stdout. Not for: training the judge (scripts/pretrain.ts does, and measures the
 * same thing at its end for the judge it made).
 *
 * The interval: per action, d = |judge - label| - |mean - label|; mean(d) +- t * sd / sqrt(n). Actions
 * of one trajectory are not independent, so the interval is a little narrow; the table says so.
 * Example: npm run -s bench -- judge > bench/results/judge-wasm.md
 *   | math, the base team's actions | 150 | 100 % | 2.54 | 2.38 | +0.16 [-0.30, +0.62] | ...
 */
import os from 'node:os';
import { describeBackend, initBackend } from '../src/core/engine/backend.ts';
import { loadModel } from '../src/core/engine/model/load.ts';
import { folderSource } from '../src/core/engine/model/sources.ts';
import { dataHeldOut } from '../src/core/domains/data/team.ts';
import { mathHeldOut } from '../src/core/domains/math/tasks.ts';
import { tInterval } from '../src/core/stats/intervals.ts';
import { createSqlTool } from '../src/core/tools/sql.ts';
import { createSandbox } from '../src/core/tools/code-sandbox.ts';
import { disposeTools, type ToolRunners } from '../src/core/tools/runners.ts';
import { dataTeamAccuracy, judgeAgreement, teamAccuracy, type JudgeAgreement } from '../scripts/pretrain/evaluate.ts';
import { dataJudgeItems } from '../scripts/pretrain/data-transcripts.ts';
import { judgeExamples } from '../scripts/pretrain/transcripts.ts';

interface Options {
  judge: string;
  agent: string;
  mathEvery: number;
}

function parse(argv: string[]): Options {
  const o: Options = { judge: 'models/judge', agent: 'models/agent', mathEvery: 4 };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, v] = [argv[i], argv[i + 1]];
    if (v === undefined) throw new Error(`bench judge: ${flag} needs a value`);
    if (flag === '--judge') o.judge = v;
    else if (flag === '--agent') o.agent = v;
    else if (flag === '--math-every') {
      o.mathEvery = Number(v);
      if (!Number.isInteger(o.mathEvery) || o.mathEvery < 1) throw new Error(`bench judge: --math-every needs a positive integer, got "${v}"`);
    } else throw new Error(`bench judge: unknown option "${flag}". Options: --judge DIR --agent DIR --math-every N`);
  }
  return o;
}

/** Mean of the paired differences with its t interval. Example: [1, 0, -1, 0] -> 0 [-1.30, +1.30]. */
export function meanInterval(d: readonly number[]): { mean: number; lo: number; hi: number } {
  const i = tInterval(d);
  return { mean: i.p, lo: i.low, hi: i.high };
}

const signed = (x: number) => `${x >= 0 ? '+' : ''}${x.toFixed(2)}`;

/** One table row; `verdict` says whether the interval excludes 0. */
export function judgeRow(name: string, a: JudgeAgreement): string {
  const i = meanInterval(a.gains ?? []);
  const verdict = i.hi < 0 ? 'judge better' : i.lo > 0 ? 'mean better' : 'within noise';
  return `| ${name} | ${a.actions} | ${(a.parsed * 100).toFixed(0)} % | ${a.mae.toFixed(2)} | ${a.baselineMae.toFixed(2)} | ` +
    `${signed(i.mean)} [${signed(i.lo)}, ${signed(i.hi)}] | ${verdict} | ${(a.within1 * 100).toFixed(1)} % |`;
}

export async function main(argv: string[]): Promise<void> {
  const o = parse(argv);
  const info = await initBackend({ force: 'wasm' });
  const log = (m: string) => console.error(`[bench judge ${new Date().toISOString().slice(11, 19)}] ${m}`);
  const agent = await loadModel(folderSource(o.agent));
  const judge = await loadModel(folderSource(o.judge));
  const tok = judge.tokenizer;
  if (!tok) throw new Error(`bench judge: ${o.judge} has no tokenizer.json; the judge needs its tokenizer`);
  const sandbox = createSandbox();
  const tools: ToolRunners = { python: sandbox, javascript: sandbox, sql: createSqlTool() };
  const started = performance.now();
  try {
    const math = mathHeldOut().filter((_, i) => i % o.mathEvery === 0);
    log(`math team greedy on ${math.length} held-out problems`);
    const mathRun = await teamAccuracy(agent, math, tools, { temperature: 0, seed: 0 });
    log(`data team greedy on the held-out tables`);
    const dataRun = await dataTeamAccuracy(agent, dataHeldOut(['classification', 'regression', 'table-question']), tools, { temperature: 0, seed: 0, batch: 10 });
    const sets = {
      math: mathRun.trajectories.flatMap((t) => judgeExamples(t, tok)),
      data: dataRun.trajectories.flatMap((t) => dataJudgeItems(t, tok)),
    };
    const rows: string[] = [];
    for (const [name, items] of Object.entries(sets)) {
      log(`judging ${items.length} ${name} actions`);
      const a = await judgeAgreement(judge, items, 16, { gains: true });
      rows.push(judgeRow(`${name}, the base team's actions (${name === 'math' ? `${math.length} problems` : `${dataRun.tasks} tables`}, greedy ${(name === 'math' ? mathRun : dataRun).accuracy * 100 | 0} % right)`, a));
    }
    console.log(`Judge \`${o.judge}\` vs the rule labeller (src/core/domains/math/rule-coach.ts, data-coach.ts) on the base team's own held-out work; ` +
      `backend ${describeBackend(info)}, 1 thread, ${os.cpus().length} cores, ${((performance.now() - started) / 60000).toFixed(1)} min.\n`);
    console.log('| work judged | actions | parsable | judge MAE | mean MAE | judge - mean, 95 % interval | | within +-1 |');
    console.log('|---|---:|---:|---:|---:|---:|---|---:|');
    for (const r of rows) console.log(r);
    console.log('\nMean MAE: always answering the labels\' mean. The interval is over actions (actions of one trajectory are not independent, so it is a little narrow).');
  } finally {
    agent.model.dispose();
    judge.model.dispose();
    await disposeTools(tools);
  }
}
