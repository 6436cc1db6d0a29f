/**
 * `mappa judge teach|ask|rank`: a person corrects a judge, headless.
 *
 *   mappa judge ask   --judge DIR --run DIR --k N [--simulate rater] [--template T] [--out FILE]
 *   mappa judge teach --judge DIR --ratings FILE --replay FILE|none [--out DIR] [--epochs N] [--lr X] [--mix X] [--seed S]
 *   mappa judge rank  --judge DIR --ratings FILE
 *
 * ask: the run's actions (trajectories.jsonl, as its coach saw them) that the judge is least sure of
 * (the spread of its score distribution, src/core/coach/uncertainty.ts), one JSON line each with the
 * prompt in the judge's template, the judge's score ("was"), why it was picked and "score": null for
 * the person to fill. With --simulate rater the team's rubric answers instead, and every line says
 * "by": "rubric (simulated person)".
 * teach: the judge fine-tuned on the ratings, mixed with --replay (its earlier training data, as rated
 * actions) so that it does not forget; written as a new folder beside the old one, named by the hash of
 * its weights, through a temporary folder renamed at the end (a failure or Ctrl-C leaves the old judge
 * and no half-written one). Prints the new folder on stdout: point a coach at it with coach.model.
 * rank: the judge's ranking of held-out rated actions (pairs within a "group" rated differently), with
 * its Wilson interval, and its mean absolute error.
 * Example: mappa judge ask --judge models/relay-judge --run runs/relay-4 --k 25 --simulate rater > r.jsonl
 *          mappa judge teach --judge models/relay-judge --ratings r.jsonl --replay old.jsonl --out models
 */
import { existsSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { coachTemplateOf } from '../core/coach/coaches.ts';
import { coachPrompt, type ActionContext } from '../core/coach/coach-format.ts';
import { parseRatings, rankAgainst, SIMULATED_RATER, type RatedAction } from '../core/coach/corrections.ts';
import { disposeJudge, teachingAnswer, teachJudge, trainableJudge, TEACH_DEFAULTS, type TeachExample } from '../core/coach/teach.ts';
import { pickUncertain, readJudge } from '../core/coach/uncertainty.ts';
import { teamOf, resolveTrainConfig } from '../core/domains/index.ts';
import { describeBackend, currentBackend } from '../core/engine/backend.ts';
import { folderSource } from '../core/engine/model/sources.ts';
import { agentContext } from '../core/loop/rewards.ts';
import type { Trajectory } from '../core/loop/trajectory.ts';
import { formatPercent } from '../core/stats/intervals.ts';
import { CliError, openModel, parseOptions, startBackend } from './common.ts';
import { removeUnfinished, writeJudgeVersion } from './judge-store.ts';

const USAGE = `usage:
  mappa judge ask   --judge DIR --run DIR --k N [--simulate rater] [--template team|generic|TEXT] [--out FILE]
  mappa judge teach --judge DIR --ratings FILE --replay FILE|none [--out DIR] [--epochs N] [--lr X] [--mix X] [--seed S]
  mappa judge rank  --judge DIR --ratings FILE
  (every one also takes --backend cpu|wasm|webgpu)
`;

/** A judge folder the commands can read, or a one-line refusal naming what is missing. */
function checkJudge(dir: string | undefined): string {
  if (!dir) throw new CliError(`--judge DIR is required: a judge model folder (e.g. models/relay-judge)\n\n${USAGE}`);
  const missing = ['config.json', 'model.safetensors', 'tokenizer.json'].filter((f) => !existsSync(path.join(dir, f)));
  if (missing.length) throw new CliError(`--judge ${dir}: not a judge folder (no ${missing.join(', ')})`);
  return dir;
}

function readRatings(file: string | undefined, flag: string): RatedAction[] {
  if (!file) throw new CliError(`${flag} FILE is required: rated actions, one JSON object a line (mappa judge ask writes them)`);
  if (!existsSync(file)) throw new CliError(`${flag} ${file}: no such file`);
  try {
    return parseRatings(readFileSync(file, 'utf8'), file);
  } catch (e) {
    throw new CliError((e as Error).message);
  }
}

function positive(v: string | undefined, flag: string, fallback: number, integer = false): number {
  if (v === undefined) return fallback;
  const n = Number(v);
  if (!(n > 0) || (integer && !Number.isInteger(n))) throw new CliError(`${flag} must be a ${integer ? 'whole ' : ''}number above 0, got "${v}"`);
  return n;
}

async function teach(argv: string[]): Promise<void> {
  const o = parseOptions(argv, {
    judge: { type: 'string' }, ratings: { type: 'string' }, replay: { type: 'string' }, out: { type: 'string' }, epochs: { type: 'string' },
    lr: { type: 'string' }, mix: { type: 'string' }, seed: { type: 'string' }, backend: { type: 'string' },
  }, USAGE);
  const dir = checkJudge(o.judge);
  const ratings = readRatings(o.ratings, '--ratings');
  if (o.replay === undefined) {
    throw new CliError('--replay FILE|none is required: the judge\'s earlier training data as rated actions, mixed in so that it does not forget; '
      + '"none" teaches without it');
  }
  const replayRated = o.replay === 'none' ? [] : readRatings(o.replay, '--replay');
  const opts = { epochs: positive(o.epochs, '--epochs', TEACH_DEFAULTS.epochs, true), lr: positive(o.lr, '--lr', TEACH_DEFAULTS.lr),
    mix: o.mix === '0' ? 0 : positive(o.mix, '--mix', TEACH_DEFAULTS.mix), seed: o.seed === undefined ? 0 : positive(o.seed, '--seed', 0, true) };
  const outDir = o.out ?? path.dirname(path.resolve(dir));
  await startBackend(o.backend);
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    const started = performance.now();
    const cpu = process.cpuUsage();
    const judge = await openModel(dir, { tokenizer: 'required' });
    // A rated action without its own answer teaches the judge's own answer (its scratchpad) with the verdict put in.
    const unanswered = [...ratings, ...replayRated].filter((r) => r.answer === undefined);
    const readings = await readJudge(judge, unanswered.map((r) => r.prompt));
    const own = new Map(unanswered.map((r, i) => [r, readings[i].answer]));
    judge.model.dispose();
    const example = (r: RatedAction): TeachExample => ({ prompt: r.prompt, answer: teachingAnswer(r, own.get(r) ?? '') });
    const examples = ratings.map(example);
    const replay = replayRated.map(example);
    const trainable = await trainableJudge(folderSource(dir));
    const result = await teachJudge(trainable, examples, replay, {
      ...opts, signal: controller.signal,
      onProgress: ({ step, steps, loss }) => process.stderr.write(`\rteaching: step ${step}/${steps}, loss ${loss.toFixed(3)}   `),
    });
    disposeJudge(trainable);
    process.stderr.write('\n');
    const folder = await writeJudgeVersion(dir, outDir, result, {
      ratings: o.ratings, corrections: ratings.length, replay: o.replay, replayed: replay.length, ...opts,
      backend: describeBackend(currentBackend()!),
    });
    const total = (performance.now() - started) / 1000;
    const used = process.cpuUsage(cpu);
    const cpuSeconds = (used.user + used.system) / 1e6;
    process.stderr.write(`taught ${ratings.length} corrections (+ ${replay.length} replayed) in ${total.toFixed(1)} s wall, ${cpuSeconds.toFixed(1)} s CPU `
      + `(${result.steps} steps; ${os.cpus()[0]?.model.trim()}, ${describeBackend(currentBackend()!)}, load average ${os.loadavg()[0].toFixed(1)}), `
      + `loss ${result.firstLoss.toFixed(3)} -> ${result.finalLoss.toFixed(3)}; the old judge ${dir} is unchanged\n`);
    process.stdout.write(`${folder}\n`);
  } catch (e) {
    await removeUnfinished();
    throw controller.signal.aborted ? new CliError('interrupted: nothing written, the old judge is unchanged', 130) : e;
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
}

/** A run's actions as its coach saw them: config.json's team, trajectories.jsonl's work. */
function runContexts(runDir: string): { contexts: ActionContext[]; template: string; rubric: ReturnType<ReturnType<typeof teamOf>['ruleCoach']> } {
  const cfgFile = path.join(runDir, 'config.json');
  const trajFile = path.join(runDir, 'trajectories.jsonl');
  for (const f of [cfgFile, trajFile]) if (!existsSync(f)) throw new CliError(`--run ${runDir}: no ${path.basename(f)}; is this a folder "mappa train" wrote?`);
  const config = resolveTrainConfig(JSON.parse(readFileSync(cfgFile, 'utf8')));
  const domain = teamOf(config.workflow);
  const contexts: ActionContext[] = [];
  readFileSync(trajFile, 'utf8').split('\n').forEach((line, i) => {
    if (!line.trim()) return;
    let l: {
      task: string; problem: string; answer: string;
      actions: { agent: string; turn: number; input: { role: string; content: string }[]; output: string; observation?: string }[];
    };
    try {
      l = JSON.parse(line);
    } catch (e) {
      throw new CliError(`${trajFile} line ${i + 1}: not JSON (${(e as Error).message})`);
    }
    const actions = l.actions.map((a) => ({ agentId: a.agent, turn: a.turn, messages: a.input, text: a.output, observation: a.observation }));
    const t = { task: { id: l.task, problem: l.problem, answer: l.answer }, actions } as unknown as Trajectory;
    for (const spec of config.workflow.agents) {
      const ctx = agentContext(config.workflow, t, spec.id, domain.facts?.(t, spec.id));
      if (ctx) contexts.push(ctx);
    }
  });
  return { contexts, template: coachTemplateOf(config.coach, domain), rubric: domain.ruleCoach() };
}

async function ask(argv: string[]): Promise<void> {
  const o = parseOptions(argv, {
    judge: { type: 'string' }, run: { type: 'string' }, k: { type: 'string' }, simulate: { type: 'string' }, template: { type: 'string' },
    out: { type: 'string' }, backend: { type: 'string' },
  }, USAGE);
  const dir = checkJudge(o.judge);
  if (!o.run) throw new CliError('--run DIR is required: a run folder of "mappa train" (its trajectories.jsonl holds the actions to ask about)');
  const k = positive(o.k, '--k', NaN, true);
  if (Number.isNaN(k)) throw new CliError('--k N is required: how many actions to ask about');
  if (o.simulate !== undefined && o.simulate !== 'rater') {
    throw new CliError(`--simulate takes "rater" (the team's rubric answers as the person), got "${o.simulate}"`);
  }
  const run = runContexts(o.run);
  const template = o.template === undefined ? run.template : coachTemplateOf({ template: o.template }, { ruleCoach: () => run.rubric });
  // The same action may recur across iterations: ask about each once.
  const seen = new Set<string>();
  const contexts = run.contexts.filter((c) => {
    const p = coachPrompt(c, template);
    return seen.has(p) ? false : (seen.add(p), true);
  });
  await startBackend(o.backend);
  const judge = await openModel(dir, { tokenizer: 'required' });
  const prompts = contexts.map((c) => coachPrompt(c, template));
  const readings = await readJudge(judge, prompts);
  const picks = pickUncertain(readings, Math.min(k, contexts.length));
  const verdicts = o.simulate ? await run.rubric.scoreBatch(picks.map((p) => contexts[p.index])) : null;
  const lines = picks.map((p, j) => {
    const c = contexts[p.index];
    const r: Record<string, unknown> = { prompt: prompts[p.index], score: verdicts ? verdicts[j].score : null };
    if (verdicts && c.final && verdicts[j].correct !== undefined) r.correct = verdicts[j].correct ? 1 : 0;
    return JSON.stringify({ ...r, by: verdicts ? SIMULATED_RATER : 'person', group: c.agentId, was: readings[p.index].score, why: p.why });
  });
  const text = lines.map((l) => l + '\n').join('');
  process.stderr.write(`${picks.length} of ${contexts.length} actions, picked by the spread of the judge's score distribution`
    + `${verdicts ? `; verdicts by the ${SIMULATED_RATER}` : '; fill in each "score" (0-10)'}\n`);
  if (o.out) await writeFile(o.out, text);
  else process.stdout.write(text);
  judge.model.dispose();
}

async function rank(argv: string[]): Promise<void> {
  const o = parseOptions(argv, { judge: { type: 'string' }, ratings: { type: 'string' }, backend: { type: 'string' } }, USAGE);
  const dir = checkJudge(o.judge);
  const ratings = readRatings(o.ratings, '--ratings');
  await startBackend(o.backend);
  const judge = await openModel(dir, { tokenizer: 'required' });
  const readings = await readJudge(judge, ratings.map((r) => r.prompt));
  judge.model.dispose();
  const scores = readings.map((r) => r.score ?? 5);
  const r = rankAgainst(ratings.map((x) => x.score), scores, ratings.map((x) => x.group));
  const mae = scores.reduce((s, x, i) => s + Math.abs(x - ratings[i].score), 0) / scores.length;
  const unread = readings.filter((x) => x.score === null).length;
  process.stdout.write(`${dir} on ${ratings.length} rated actions (${o.ratings}): ranking ${formatPercent(r.interval)} over ${r.pairs} pairs `
    + `(Wilson 95 %), MAE ${mae.toFixed(2)}, ${unread} unparsable answers (scored 5)\n`);
}

const SUB: Record<string, (argv: string[]) => Promise<void>> = { teach, ask, rank };

export async function judgeCommand(argv: string[]): Promise<void> {
  const [sub, ...rest] = argv;
  if (!sub || sub === '--help' || sub === '-h') {
    process.stdout.write(USAGE);
    if (!sub) throw new CliError('a subcommand is required: teach, ask or rank');
    return;
  }
  const run = SUB[sub];
  if (!run) throw new CliError(`unknown subcommand "${sub}": teach, ask or rank\n\n${USAGE}`);
  await run(rest);
}
