/**
 * The shipped relay models at positions they never saw: the relay model (models/relay) and the relay
 * judge (models/relay-judge) were pretrained on teams of 1..6 (RELAY_PRETRAINED_AGENTS); a team of 128
 * asks them "Relay agent 57 of 128". This plays the real untrained team (models/relay, no adapter) on
 * the first --tasks held-out tasks of every size in --sizes, and reports, by position bucket (1-6 seen,
 * 7-16, 17-32, 33-64, 65-128 unseen):
 *   - the agent's step accuracy (the share of steps right given their input, by the relay rubric),
 *     at T = 1 (the rollouts' temperature) and greedy, with Wilson intervals;
 *   - with --judge: the judge's within-agent ranking accuracy on the same T = 1 steps (the coach's view,
 *     the relay coach template; judge.ts's judgeVsRater, bootstrap interval over actions).
 *
 * For: `npm run -s bench -- relay-positions [--sizes 6,32,128] [--tasks 50] [--judge [DIR]]`, a
 * markdown table on stdout. Not for: training (bench/scale.ts) or the judge's whole report (bench/judge.ts).
 *
 * Example: npm run -s bench -- relay-positions --sizes 6,128 --tasks 40 --judge
 *   | 128 | 65-128 | 2560 | 84.1 % [82.6, 85.5] | 100.0 % [...] | 52.0 % [...] |
 */
import os from 'node:os';
import { describeBackend, initBackend } from '../src/core/engine/backend.ts';
import { loadModel } from '../src/core/engine/model/load.ts';
import { folderSource } from '../src/core/engine/model/sources.ts';
import { EngineAgents } from '../src/core/loop/agents.ts';
import { ModelCoach } from '../src/core/coach/coach.ts';
import { RELAY_MAX_AGENTS, RELAY_PRETRAINED_AGENTS, relayHeldOut } from '../src/core/domains/relay/tasks.ts';
import { RELAY_COACH_TEMPLATE, RELAY_JUDGE_MODEL } from '../src/core/domains/relay/team.ts';
import { judgeVsRater, relayRatedSteps, type RatedStep } from '../src/core/domains/relay/judge.ts';
import { formatPercent, wilson } from '../src/core/stats/intervals.ts';

interface Options {
  sizes: number[];
  tasks: number;
  relay: string;
  judge: string | null;
  reps: number;
}

/** Position buckets: the pretrained positions, then doublings. Example: bucketOf(57) -> '33-64'. */
export const POSITION_BUCKETS: [number, number][] = [[1, RELAY_PRETRAINED_AGENTS], [7, 16], [17, 32], [33, 64], [65, 128]];

export function bucketOf(position: number): string {
  const b = POSITION_BUCKETS.find(([lo, hi]) => position >= lo && position <= hi)!;
  return `${b[0]}-${b[1]}`;
}

function parse(argv: string[]): Options {
  const o: Options = { sizes: [6, 8, 16, 32, 64, 128], tasks: 50, relay: 'models/relay', judge: null, reps: 100 };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const next = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`bench relay-positions: ${flag} needs a value`);
      return v;
    };
    if (flag === '--sizes') {
      const v = next();
      o.sizes = v.split(',').map(Number);
      if (o.sizes.some((n) => !Number.isInteger(n) || n < 1 || n > RELAY_MAX_AGENTS)) {
        throw new Error(`bench relay-positions: --sizes takes team sizes 1..${RELAY_MAX_AGENTS} like 6,32,128, got "${v}"`);
      }
    } else if (flag === '--tasks') {
      o.tasks = Number(next());
      if (!Number.isInteger(o.tasks) || o.tasks < 1 || o.tasks > 200) throw new Error(`bench relay-positions: --tasks takes 1..200, got "${argv[i]}"`);
    } else if (flag === '--relay-model') o.relay = next();
    else if (flag === '--judge') o.judge = argv[i + 1] && !argv[i + 1].startsWith('--') ? next() : RELAY_JUDGE_MODEL;
    else if (flag === '--reps') o.reps = Number(next());
    else throw new Error(`bench relay-positions: unknown option "${flag}". Options: --sizes 6,32,128 --tasks N --relay-model DIR --judge [DIR] --reps N`);
  }
  return o;
}

const pct = (i: { p: number; low: number; high: number }) => `${(i.p * 100).toFixed(1)} % [${(i.low * 100).toFixed(1)}, ${(i.high * 100).toFixed(1)}]`;

/** Step accuracy of the judged (non-neutral) steps. */
function stepAccuracy(steps: RatedStep[]): string {
  const judged = steps.filter((s) => s.kind !== 'neutral');
  return judged.length ? pct(wilson(judged.filter((s) => s.kind === 'right').length, judged.length)) : '-';
}

export async function main(argv: string[]): Promise<void> {
  const o = parse(argv);
  const info = await initBackend({ force: 'wasm' });
  const log = (m: string) => console.error(`[bench relay-positions ${new Date().toISOString().slice(11, 19)}] ${m}`);
  const started = performance.now();
  const relay = await loadModel(folderSource(o.relay), { tokenizer: 'required' });
  const agents = new EngineAgents(relay, new Map(), 64);
  const sampled = new Map<number, RatedStep[]>();
  const greedy = new Map<number, RatedStep[]>();
  for (const n of o.sizes) {
    const tasks = relayHeldOut(n).slice(0, o.tasks);
    sampled.set(n, await relayRatedSteps(agents, n, tasks, { seed: 500 + n }));
    greedy.set(n, await relayRatedSteps(agents, n, tasks, { seed: 500 + n, temperature: 0 }));
    log(`team of ${n}: ${sampled.get(n)!.length} steps at T = 1 and greedy (${((performance.now() - started) / 1000).toFixed(0)} s)`);
  }
  relay.model.dispose();
  const judged = new Map<string, string>();
  if (o.judge) {
    const judge = await loadModel(folderSource(o.judge), { tokenizer: 'required' });
    const coach = new ModelCoach(judge, RELAY_COACH_TEMPLATE);
    for (const n of o.sizes) {
      const steps = sampled.get(n)!;
      const scores = (await coach.scoreBatch(steps.map((s) => s.context))).map((r) => r.score);
      for (const [lo, hi] of POSITION_BUCKETS) {
        const idx = steps.map((s, i) => (s.position >= lo && s.position <= hi ? i : -1)).filter((i) => i >= 0);
        if (!idx.length) continue;
        const v = judgeVsRater(idx.map((i) => steps[i].rating.score), idx.map((i) => scores[i]), idx.map((i) => steps[i].group), { reps: o.reps });
        judged.set(`${n}:${lo}`, v.pairs ? formatPercent(v.ranking) : '- (no pairs)');
      }
      log(`judge on the team of ${n} (${((performance.now() - started) / 1000).toFixed(0)} s)`);
    }
    judge.model.dispose();
  }
  console.log(`# The relay models by position (seen in pretraining: 1..${RELAY_PRETRAINED_AGENTS})\n`);
  console.log(`\`npm run -s bench -- relay-positions ${argv.join(' ')}\`; ${os.cpus()[0]?.model ?? 'unknown CPU'}, ${describeBackend(info)}, `
    + `1 thread; ${o.tasks} held-out tasks per size, the untrained team (${o.relay}, no adapter)${o.judge ? `; judge ${o.judge}` : ''}.\n`);
  console.log(`| team size | positions | steps | step accuracy, T = 1 | step accuracy, greedy |${o.judge ? ' judge ranking (T = 1 steps) |' : ''}`);
  console.log(`|---:|---|---:|---|---|${o.judge ? '---|' : ''}`);
  for (const n of o.sizes) {
    for (const [lo, hi] of POSITION_BUCKETS) {
      const at = (s: RatedStep) => s.position >= lo && s.position <= hi;
      const t1 = sampled.get(n)!.filter(at);
      if (!t1.length) continue;
      const g = greedy.get(n)!.filter(at);
      const j = o.judge ? ` ${judged.get(`${n}:${lo}`) ?? '-'} |` : '';
      console.log(`| ${n} | ${lo}-${Math.min(hi, n)} | ${t1.length} | ${stepAccuracy(t1)} | ${stepAccuracy(g)} |${j}`);
    }
  }
  console.log(`\n${((performance.now() - started) / 1000).toFixed(0)} s in all.`);
}
