/**
 * How many corrections lift a weak judge, and which ones: the relay team's judge taught on K rated
 * actions picked by its own uncertainty (the spread of its score distribution, src/core/coach/uncertainty.ts)
 * or at random, ranked on held-out steps before and after. The relay rubric plays the person
 * ("rubric (simulated person)" in every record): its verdict is the correction.
 *
 * For: `npm run -s bench -- corrections [--judges DIR,...] [--ks 0,25,50,100] [--rules uncertainty,random]
 * [--seeds 0] [--flips 0,0.1,0.2] [--keep 100,400] [--pool-tasks 120] [--held-tasks 40] [--replay-tasks 40] [--epochs 6]
 * [--lr 0.0005] [--mix 1] [--out bench/results/corrections]`: a markdown table on stdout, and <out>.md and <out>.svg
 * (bench/corrections-report.ts: the summary over seeds and the findings), and <out>.rows.json (every row).
 * --report-from A.rows.json,B.rows.json: no teaching; one report over the rows of several calls (e.g. one call
 *   a judge, run side by side on two cores).
 * --flips: a careless person, that fraction of the K verdicts turned over (coach/corrections.ts carelessVerdicts).
 * --keep: the taught judges at these K are kept under /tmp/corrections-bench/keep/ (careful person only), so that
 *   `npm run -s bench -- judge-axis --judges <them>` can coach the relay of 4 with them (coaching against K).
 *
 * The actions (models/relay, no adapter, T = 1, the untrained team as the coach meets it):
 *   pool     relay steps of N = 2, 4, 6 on training tasks ("corrections-pool"), the ones a person is asked about;
 *   held-out the judge's own quick check: N = 2, 4, 6 on the first --held-tasks held-out tasks (480 steps at 40);
 *   replay   the judge's earlier training data, rebuilt as its build script made it (its report.json's
 *            template, scratchpad and twins; the same training tasks), mixed in so that it does not forget.
 * Ranking: within-agent pairs (one agent of one team size) the rater scores differently, ordered as the
 * rater does (ties half), with a Wilson interval over pairs (src/core/coach/corrections.ts rankAgainst).
 * Example: nice -n 10 npm run -s bench -- corrections --ks 0,25,50,100
 */
import os from 'node:os';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { describeBackend, initBackend } from '../src/core/engine/backend.ts';
import { loadModel, type LoadedModel } from '../src/core/engine/model/load.ts';
import { folderSource } from '../src/core/engine/model/sources.ts';
import { EngineAgents } from '../src/core/loop/agents.ts';
import { ModelCoach } from '../src/core/coach/coach.ts';
import { coachPrompt } from '../src/core/coach/coach-format.ts';
import { carelessVerdicts, rankAgainst, SIMULATED_RATER, type RatedAction } from '../src/core/coach/corrections.ts';
import { disposeJudge, TEACH_DEFAULTS, teachingAnswer, teachJudge, trainableJudge, type TeachExample } from '../src/core/coach/teach.ts';
import { pickRandom, pickUncertain, readJudge, type JudgeReading } from '../src/core/coach/uncertainty.ts';
import { RELAY_PRETRAINED_AGENTS, relayHeldOut, relayTasks } from '../src/core/domains/relay/tasks.ts';
import { judgeVsRater, relayRatedSteps, type RatedStep } from '../src/core/domains/relay/judge.ts';
import { formatPercent } from '../src/core/stats/intervals.ts';
import { Rng } from '../src/core/stats/rng.ts';
import { writeJudgeVersion } from '../src/cli/judge-store.ts';
import { balanceRated, counterfactualTwin, judgeChat, judgeTemplate } from '../scripts/pretrain-relay-judge.ts';
import { correctionsPlot, correctionsReport, type ReportContext, type Row } from './corrections-report.ts';

/** The team sizes the relay judges were built on (1..6; scripts/pretrain-relay-judge.ts at their commits). */
const REPLAY_SIZES = RELAY_PRETRAINED_AGENTS;
/** Where --keep puts the taught judges (outside the repository: they are a run's output, not shipped). */
const KEEP_DIR = '/tmp/corrections-bench/keep';

interface Options {
  judges: string[];
  ks: number[];
  rules: ('uncertainty' | 'random')[];
  seeds: number[];
  flips: number[];
  keep: number[];
  poolTasks: number;
  heldTasks: number;
  replayTasks: number;
  epochs: number;
  lr: number;
  mix: number;
  out: string;
  reportFrom: string[];
}

function parse(argv: string[]): Options {
  const o: Options = { judges: ['test/fixtures/relay-judge-weak'], ks: [0, 25, 50, 100], rules: ['uncertainty', 'random'], seeds: [0], flips: [0], keep: [], poolTasks: 120,
    heldTasks: 40, replayTasks: 40, epochs: TEACH_DEFAULTS.epochs, lr: TEACH_DEFAULTS.lr, mix: TEACH_DEFAULTS.mix, out: 'bench/results/corrections', reportFrom: [] };
  const ints = (flag: string, v: string) => v.split(',').map((x) => {
    const n = Number(x);
    if (!Number.isInteger(n) || n < 0) throw new Error(`bench corrections: ${flag} takes whole numbers, got "${v}"`);
    return n;
  });
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, v] = [argv[i], argv[i + 1]];
    if (v === undefined) throw new Error(`bench corrections: ${flag} needs a value`);
    if (flag === '--judges') o.judges = v.split(',');
    else if (flag === '--ks') o.ks = ints(flag, v);
    else if (flag === '--seeds') o.seeds = ints(flag, v);
    else if (flag === '--keep') o.keep = ints(flag, v);
    else if (flag === '--flips') {
      o.flips = v.split(',').map(Number);
      if (o.flips.some((f) => !(f >= 0 && f < 1))) throw new Error(`bench corrections: --flips takes fractions from 0 to below 1, e.g. 0,0.1,0.2, got "${v}"`);
    }
    else if (flag === '--rules') {
      o.rules = v.split(',') as Options['rules'];
      if (o.rules.some((r) => r !== 'uncertainty' && r !== 'random')) throw new Error(`bench corrections: --rules is uncertainty,random, got "${v}"`);
    } else if (flag === '--pool-tasks') o.poolTasks = ints(flag, v)[0];
    else if (flag === '--held-tasks') o.heldTasks = ints(flag, v)[0];
    else if (flag === '--replay-tasks') o.replayTasks = ints(flag, v)[0];
    else if (flag === '--epochs') o.epochs = ints(flag, v)[0];
    else if (flag === '--lr') o.lr = Number(v);
    else if (flag === '--mix') o.mix = Number(v);
    else if (flag === '--out') o.out = v;
    else if (flag === '--report-from') o.reportFrom = v.split(',');
    else throw new Error(`bench corrections: unknown option "${flag}". Options: --judges --ks --rules --seeds --flips --keep --pool-tasks --held-tasks --replay-tasks --epochs --lr --mix --out --report-from`);
  }
  return o;
}

/** How a judge folder was built (its report.json flags): the template, scratchpad and twins its training data had. */
export async function buildRecipe(dir: string): Promise<{ template: string; scratchpad: 0 | 1 | 2; pairs: boolean; seed: number; samples: number }> {
  const r = JSON.parse(await readFile(`${dir}/report.json`, 'utf8')) as { flags: Record<string, unknown> };
  const f = r.flags;
  return { template: judgeTemplate(String(f.template ?? 'generic')), scratchpad: Number(f.scratchpad ?? 1) as 0 | 1 | 2,
    pairs: Number(f.pairs ?? 0) === 1, seed: Number(f.seed ?? 0), samples: Number(f.samples ?? 2) };
}


async function scoreHeld(judge: LoadedModel, template: string, held: RatedStep[]): Promise<{ scores: number[]; mae: number }> {
  const scored = await new ModelCoach(judge, template).scoreBatch(held.map((s) => s.context));
  const scores = scored.map((r) => r.score);
  return { scores, mae: scores.reduce((s, x, i) => s + Math.abs(x - held[i].rating.score), 0) / held.length };
}

export async function main(argv: string[]): Promise<void> {
  const o = parse(argv);
  if (o.reportFrom.length) return reportFrom(o);
  const started = performance.now();
  const backend = await initBackend({ force: 'wasm' });
  const machine = `${os.cpus()[0]?.model.trim() ?? 'unknown CPU'}, ${os.availableParallelism()} cores, ${describeBackend(backend)}, load average ${os.loadavg()[0].toFixed(1)} at the start (shared cores)`;
  console.error(`bench corrections: ${machine}; the person is the relay rubric (${SIMULATED_RATER})`);
  const relay = await loadModel(folderSource('models/relay'), { tokenizer: 'required' });
  const agents = new EngineAgents(relay, new Map(), 64);
  const held: RatedStep[] = [];
  const pool: RatedStep[] = [];
  for (const n of [2, 4, 6]) {
    held.push(...(await relayRatedSteps(agents, n, relayHeldOut(n).slice(0, o.heldTasks), { seed: 77 + n })));
    pool.push(...(await relayRatedSteps(agents, n, relayTasks(n, 'corrections-pool', o.poolTasks), { seed: 500 + n })));
  }
  console.error(`held-out ${held.length} steps, pool ${pool.length} steps`);
  const rows: Row[] = [];
  for (const dir of o.judges) {
    const recipe = await buildRecipe(dir);
    const replaySteps: RatedStep[] = [];
    for (let n = 1; n <= REPLAY_SIZES; n++) {
      replaySteps.push(...(await relayRatedSteps(agents, n, relayTasks(n, `judge-${recipe.seed}`, o.replayTasks), { seed: 1000 * recipe.seed + n, samples: recipe.samples })));
    }
    if (recipe.pairs) {
      const twinRng = new Rng(`relay-judge-twins/${recipe.seed}`);
      replaySteps.push(...replaySteps.map((s) => counterfactualTwin(s, twinRng)).filter((s): s is RatedStep => s !== null));
    }
    const replay: TeachExample[] = balanceRated(replaySteps, new Rng('corrections-replay')).map((s) => {
      const [user, assistant] = judgeChat(s, recipe.scratchpad, recipe.template);
      return { prompt: user.content, answer: assistant.content };
    });
    const base = await loadModel(folderSource(dir), { tokenizer: 'required' });
    const before = await scoreHeld(base, recipe.template, held);
    const rater = held.map((s) => s.rating.score);
    const groups = held.map((s) => s.group);
    const r0 = rankAgainst(rater, before.scores, groups);
    console.error(`${dir}: ${replay.length} replay examples; untaught ranking ${formatPercent(r0.interval)}`);
    const boot = (scores: number[]) => judgeVsRater(rater, scores, groups).ranking;
    rows.push({ judge: dir, rule: '-', k: 0, seed: 0, flip: 0, ranking: r0.interval, boot: boot(before.scores), pairs: r0.pairs, mae: before.mae, changed: 0, teachSeconds: 0, teachCpu: 0, steps: 0 });
    const prompts = pool.map((s) => coachPrompt(s.context, recipe.template));
    const t0 = performance.now();
    const readings: JudgeReading[] = await readJudge(base, prompts);
    console.error(`read the judge on ${pool.length} pool steps in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
    base.model.dispose();
    for (const seed of o.seeds) {
      for (const rule of o.rules) {
        for (const flip of o.flips) {
          for (const k of o.ks.filter((x) => x > 0)) {
            const picks = rule === 'uncertainty' ? pickUncertain(readings, k) : pickRandom(pool.length, k, new Rng(`corrections-random/${seed}`));
            const careful: RatedAction[] = picks.map(({ index }) => ({
              prompt: prompts[index], score: pool[index].rating.score, correct: pool[index].rating.correct, by: SIMULATED_RATER,
              group: pool[index].group, was: readings[index].score ?? undefined,
            }));
            const flipRng = new Rng(`corrections-careless/${seed}/${rule}/${k}`);
            const corrections = carelessVerdicts(careful, flip, (xs) => flipRng.shuffle(xs), () => flipRng.next());
            const examples = corrections.map((c, j) => ({ prompt: c.prompt, answer: teachingAnswer(c, readings[picks[j].index].answer) }));
            const cpu = process.cpuUsage();
            const trainable = await trainableJudge(folderSource(dir));
            const taught = await teachJudge(trainable, examples, replay, { epochs: o.epochs, lr: o.lr, mix: o.mix, seed });
            disposeJudge(trainable);
            const used = process.cpuUsage(cpu);
            const teachCpu = (used.user + used.system) / 1e6;
            const name = `${dir.replace(/^[./]+/, '').replace(/[^\w.-]+/g, '_')}-${rule}-k${k}-seed${seed}${flip ? `-flip${flip}` : ''}`;
            const keep = flip === 0 && o.keep.includes(k);
            const outDir = keep ? `${KEEP_DIR}/${name}` : `/tmp/corrections-bench/${name}`;
            const folder = await writeJudgeVersion(dir, outDir, taught, { ratings: `${rule} picks${flip ? `, ${flip * 100} % flipped` : ''}`, corrections: k, by: corrections[0].by });
            const judge = await loadModel(folderSource(folder), { tokenizer: 'required' });
            const after = await scoreHeld(judge, recipe.template, held);
            judge.model.dispose();
            if (keep) console.error(`kept ${folder}`);
            else await rm(outDir, { recursive: true, force: true });
            const r = rankAgainst(rater, after.scores, groups);
            const changed = corrections.filter((c) => c.was !== c.score).length;
            rows.push({ judge: dir, rule, k, seed, flip, ranking: r.interval, boot: boot(after.scores), pairs: r.pairs, mae: after.mae, changed, teachSeconds: taught.seconds, teachCpu, steps: taught.steps });
            console.error(`${rule} K=${k} seed ${seed}${flip ? ` flip ${flip}` : ''}: ${changed} of ${k} verdicts differ from the judge's; taught in ${taught.seconds.toFixed(0)} s wall, `
              + `${teachCpu.toFixed(0)} s CPU (${taught.steps} steps, loss ${taught.firstLoss.toFixed(3)} -> ${taught.finalLoss.toFixed(3)}); ranking ${formatPercent(r.interval)}, `
              + `bootstrap ${formatPercent(boot(after.scores))}`);
          }
        }
      }
    }
  }
  relay.model.dispose();
  const command = `npm run -s bench -- corrections ${['--judges', o.judges.join(','), '--ks', o.ks.join(','), '--rules', o.rules.join(','), '--seeds', o.seeds.join(','),
    '--flips', o.flips.join(','), '--pool-tasks', o.poolTasks, '--epochs', o.epochs, '--lr', o.lr, '--mix', o.mix].join(' ')}`;
  const table = correctionsReport(rows, { command, machine, held: held.length, pool: pool.length, minutes: (performance.now() - started) / 60000 });
  console.log(table);
  await writeFile(`${o.out}.md`, table);
  await writeFile(`${o.out}.svg`, correctionsPlot(o.judges, rows));
  await writeFile(`${o.out}.rows.json`, JSON.stringify({ command, machine, held: held.length, pool: pool.length, minutes: (performance.now() - started) / 60000, rows }, null, 1));
}

/** One report over the rows of several calls: their commands and machines listed, minutes summed. */
async function reportFrom(o: Options): Promise<void> {
  const parts = await Promise.all(o.reportFrom.map(async (f) => JSON.parse(await readFile(f, 'utf8')) as ReportContext & { rows: Row[] }));
  // Each call ranks its judges untaught (K = 0): one such row per judge.
  const rows = parts.flatMap((p) => p.rows).filter((r, i, all) => r.k > 0 || all.findIndex((x) => x.k === 0 && x.judge === r.judge) === i);
  const judges = [...new Set(rows.map((r) => r.judge))];
  const table = correctionsReport(rows, {
    command: parts.map((p) => p.command).join('` and `'), machine: [...new Set(parts.map((p) => p.machine))].join('; '),
    held: parts[0].held, pool: parts[0].pool, minutes: parts.reduce((t, p) => t + p.minutes, 0),
  });
  console.log(table);
  await writeFile(`${o.out}.md`, table);
  await writeFile(`${o.out}.svg`, correctionsPlot(judges, rows));
}

