/**
 * `npm run pretrain -- --seed 0`: rebuilds the project's own tiny models, models/agent and
 * models/judge, from nothing but this repository: synthetic transcripts of both teams (math chain
 * and data-analysis team, every code block run in the real sandbox / SQL engine) -> a byte-level BPE
 * tokenizer -> a Llama agent model -> a judge model (continued from the agent) -> measurements ->
 * Hugging Face folders with model cards. Runs on tfjs `wasm` in Node, seeded throughout.
 *
 * For: rebuilding the models (on 2 cores with --threads 2: models written after 57 min, 79 min with the
 * card's measurements; README 'Rebuild from nothing'). Not for: RL (the trainer does
 * that on top of these models).
 *
 * Flags (defaults in DEFAULTS, pretrain/run.ts): --seed, --out, --agent-tasks, --judge-tasks (math), --data-tasks (data team), --vocab, --hidden,
 * --layers, --agent-steps, --judge-steps, --tokens-per-batch, --lr, --judge-lr, --prompt-weight (agent loss
 * weight on prompt tokens; the judge trains on its answers only), --max-minutes,
 * --eval-tasks (held-out problems used for the card; 200 = all), --skip-eval, --init DIR (stage 1 = that model folder),
 * --extra-vocab N (after stage 1: N new BPE merges learnt on the data team's text, embeddings grown to match; 0 = none),
 * --threads N (training threads: this one and N - 1 worker threads, each computing a share of every batch's rows;
 * default the machine's cores, at most 4; tfjs wasm itself runs one thread in Node),
 * --mix-math N (math problems whose transcripts join the tables in stage 2), --stage1-extensions N (at most N
 * chunks of --stage1-extension-steps more stage-1 steps while the Solver does not yet read the problem's numbers), --flaws JSON (math flaw rates that
 * differ from MATH_FLAW_RATES, e.g. '{"literalShort": 0.5}'), --agent DIR (skip stages 1-2: take the agent folder an
 * earlier run wrote, with the agent-report.json that run wrote next to it, then train the judge and measure;
 * for a new labeller rubric or judge recipe without retraining the agent).
 * Example: npm run pretrain -- --seed 0 --agent-steps 50 --judge-steps 20 --out .tmp/models   (a quick trial)
 *
 * main reads as the run's stages in order, each a function that returns what the next ones need:
 * playMath, playData (1. transcripts) -> startingModel (2-3a. tokenizer and stage 1, or a folder's) ->
 * extendVocabulary -> trainStage2 (3b) -> writeAgent -> trainJudge (4) -> measure (5) -> writeReport.
 * The agent's stages are in pretrain/agent-stages.ts, the flags and the trainer in pretrain/run.ts.
 */
import { writeFile, stat } from 'node:fs/promises';
import { initBackend, describeBackend } from '../src/core/engine/backend.ts';
import { parameterCount } from '../src/core/engine/model/config.ts';
import { loadModel } from '../src/core/engine/model/load.ts';
import { folderSource } from '../src/core/engine/model/sources.ts';
import type { TextTokenizer } from '../src/core/engine/tokenizer/tokenizer.ts';
import { DATA_CHAIN, DATA_TEAM_SETTINGS, dataHeldOut, dataRolloutTask } from '../src/core/domains/data/team.ts';
import { MATH_CHAIN } from '../src/core/domains/math/index.ts';
import { resolveTrainConfig } from '../src/core/domains/index.ts';
import { generateMathTasks, mathHeldOut, isMathHeldOut } from '../src/core/domains/math/tasks.ts';
import { generateTabularTasks } from '../src/core/domains/data/tabular.ts';
import { Rng } from '../src/core/stats/rng.ts';
import { createSqlTool } from '../src/core/tools/sql.ts';
import { FIT_PREDICT } from '../src/core/domains/data/fit.ts';
import { formatObservation } from '../src/core/tools/sandbox.ts';
import { createSandbox } from '../src/core/tools/code-sandbox.ts';
import { disposeTools, type ToolRunners } from '../src/core/tools/runners.ts';
import { extendVocabulary, finalModel, startingModel, trainStage2, writeAgent, type AgentReport, type Model, type StartingModel } from './pretrain/agent-stages.ts';
import { writeCards, type PretrainReport } from './pretrain/card.ts';
import { dataJudgeItems, playDataTeam, type DataTranscript } from './pretrain/data-transcripts.ts';
import { judgeAgreement, teamAccuracy, type JudgeAgreement, type TeamAccuracy } from './pretrain/evaluate.ts';
import { writeModelFolder } from './pretrain/folder.ts';
import { failWith } from './pretrain/flags.ts';
import { MAX_TOKENS, budgetSeconds, log, logEvery, parseFlags, trainer, type Flags, type Run } from './pretrain/run.ts';
import type { TrainReport } from './pretrain/train.ts';
import {
  mathTeam, asTrajectory, balanceByScore, judgeExamples, parseFlawRates, playTeam,
  type JudgeItem, type MathFlawRates, type ToolRunner, type Transcript,
} from './pretrain/transcripts.ts';

async function main(): Promise<void> {
  const flags = parseFlags(process.argv.slice(2));
  const started = performance.now();
  const backend = await initBackend({ force: 'wasm' }); // also registers gradients and the wasm kernels
  log(`backend ${describeBackend(backend)}; flags ${JSON.stringify(flags)}`);
  const sandbox = createSandbox();
  const runTool = async (code: string) => formatObservation(await sandbox.run(code, { language: 'python', timeoutMs: 2000 }));
  const tools: ToolRunners = { python: sandbox, javascript: sandbox, sql: createSqlTool({ functions: [FIT_PREDICT] }) };

  const math = await playMath(flags, runTool);
  const data = await playData(flags, tools);
  const run: Run = { flags, started, train: trainer(flags) };
  const start = await startingModel(run, math.stage1Transcripts);
  const model = finalModel(flags['extra-vocab'] > 0 && !flags.agent ? extendVocabulary(flags, start.parts, data.runs) : start.parts);
  const agentReport = start.agentReport ?? (await trainStage2(run, model, math.transcripts, data.runs, start));
  const agentDir = await writeAgent(flags.out, agentReport, model);
  const judgeStarted = performance.now();
  const judge = await trainJudge(run, model, math.transcripts, data.runs);
  for (const w of model.weights.values()) w.dispose();
  // With --agent, the time to both models is the earlier run's time to its agent plus this run's judge.
  const trainSeconds = flags.agent ? agentReport.seconds + (performance.now() - judgeStarted) / 1000 : (performance.now() - started) / 1000;
  const measured = flags['skip-eval'] ? notMeasured() : await measure(flags, { agentDir, judgeDir: judge.dir }, tools, math, runTool, model.tok);
  await disposeTools(tools);
  await writeReport(run, { agentDir, judgeDir: judge.dir }, {
    backend: describeBackend(backend), math, data, start, model, agentReport, judgeTrain: judge.train, judgeExamples: judge.examples, trainSeconds, measured,
  });
}

// ---- 1. Transcripts of the scripted teams on training problems (never held-out ones) ----

interface MathPlays {
  flawRates: MathFlawRates;
  team: ReturnType<typeof mathTeam>;
  transcripts: Transcript[];
  scriptedAccuracy: number;
  /** Played only when stage 1 is trained here: --init and --agent take it from a folder. */
  stage1Transcripts: Transcript[];
}

/** The math team (with the --flaws rates) on the first max(--agent-tasks, --judge-tasks) training problems, and stage 1's plays of them. */
async function playMath(flags: Flags, runTool: ToolRunner): Promise<MathPlays> {
  const taskCount = Math.max(flags['agent-tasks'], flags['judge-tasks']);
  const tasks = generateMathTasks({ seed: `pretrain-${flags.seed}`, count: taskCount });
  if (tasks.some((t) => isMathHeldOut(t))) throw new Error('pretrain: a training task is in the held-out set');
  const rng = new Rng(`pretrain-transcripts/${flags.seed}`);
  const flawRates = parseFlawRates(flags.flaws);
  const team = mathTeam(flawRates);
  const transcripts: Transcript[] = [];
  for (const t of tasks) transcripts.push(await playTeam(team, t, { rng, runTool }));
  const scriptedAccuracy = transcripts.filter((t) => t.correct).length / transcripts.length;
  log(`${transcripts.length} transcripts, scripted team accuracy ${(scriptedAccuracy * 100).toFixed(1)}%`);
  // Stage 1 learns to read from the same problems played without the literal-code habit on short work
  // (literalShort = literalCode): the Executor transcribing a short solution into code is the easiest
  // copying a tiny model sees, and with the habit in stage 1 a rebuild never learnt to read the problem's
  // numbers (0 of 200 held-out problems). Stage 2 and the judge get the habit.
  const stage1Team = mathTeam({ ...flawRates, literalShort: flawRates.literalCode });
  const stage1Rng = new Rng(`pretrain-transcripts/${flags.seed}`);
  const stage1Transcripts: Transcript[] = [];
  if (!flags.agent && !flags.init) for (const t of tasks.slice(0, flags['agent-tasks'])) stage1Transcripts.push(await playTeam(stage1Team, t, { rng: stage1Rng, runTool }));
  return { flawRates, team, transcripts, scriptedAccuracy, stage1Transcripts };
}

/** The data team on --data-tasks generated tables (85 % prediction, 15 % table questions), every block run for real. */
async function playData(flags: Flags, tools: ToolRunners): Promise<{ runs: DataTranscript[]; scriptedSuccess: number }> {
  const dataTasks = [
    ...generateTabularTasks({ seed: `pretrain-${flags.seed}`, count: Math.round(flags['data-tasks'] * 0.85), kinds: ['classification', 'regression'] }),
    ...generateTabularTasks({ seed: `pretrain-${flags.seed}`, count: Math.round(flags['data-tasks'] * 0.15), kinds: ['table-question'] }),
  ].map(dataRolloutTask);
  const runs = await playDataTeam(dataTasks, { rng: new Rng(`pretrain-data-transcripts/${flags.seed}`), tools });
  const scriptedSuccess = runs.filter((r) => r.trajectory.correct).length / Math.max(1, runs.length);
  log(`${runs.length} data-team transcripts, scripted success ${(scriptedSuccess * 100).toFixed(1)}%`);
  return { runs, scriptedSuccess };
}

// ---- 4. The judge ----

/**
 * The judge: continued from the agent on (coach prompt -> rule score) pairs of the first --judge-tasks
 * math transcripts and every data one, balanced by score (the scripted team is mostly competent, and a
 * judge that sees 10 most of the time learns to say 10); written to <out>/judge.
 */
async function trainJudge(run: Run, model: Model, transcripts: Transcript[], dataRuns: DataTranscript[]): Promise<{ train: TrainReport; examples: number; dir: string }> {
  const { flags } = run;
  const judgeRng = new Rng(`pretrain-judge/${flags.seed}`);
  const mathJudge = balanceByScore(transcripts.slice(0, flags['judge-tasks']).flatMap((t) => judgeExamples(asTrajectory(t), model.tok)), judgeRng);
  const dataJudge = balanceByScore(dataRuns.flatMap((r) => dataJudgeItems(r.trajectory, model.tok)), judgeRng);
  const judgeItems = [...mathJudge, ...dataJudge];
  const judgeData = judgeItems.map((j) => j.example).filter((e) => e.ids.length <= MAX_TOKENS);
  log(`judge items: ${mathJudge.length} math, ${dataJudge.length} data; scores ${JSON.stringify(histogram(judgeItems.map((j) => j.score)))}`);
  log(`judge: ${judgeData.length} examples, ${judgeData.reduce((s, e) => s + e.ids.length, 0)} tokens`);
  const judgeTrain = await run.train(model.config, model.weights, judgeData, {
    steps: flags['judge-steps'], tokensPerBatch: flags['tokens-per-batch'], lr: flags['judge-lr'], seed: flags.seed + 1, warmup: 10,
    maxSeconds: Math.max(60, budgetSeconds(flags) * 0.8 - (performance.now() - run.started) / 1000), log: logEvery('judge'),
  });
  log(`judge trained: ${JSON.stringify(judgeTrain)}`);
  const dir = `${flags.out}/judge`;
  await writeModelFolder(dir, { ...model.files, 'generation_config.json': { ...model.files['generation_config.json'], max_new_tokens: 16 } }, model.weights);
  return { train: judgeTrain, examples: judgeData.length, dir };
}

// ---- 5. Measurements ----

interface Measured {
  greedy: TeamAccuracy | null;
  sampled: TeamAccuracy | null;
  dataGreedy: TeamAccuracy | null;
  dataSampled: TeamAccuracy | null;
  judge: Record<string, JudgeAgreement>;
}

/** What --skip-eval leaves in the report. */
const notMeasured = (): Measured => ({ greedy: null, sampled: null, dataGreedy: null, dataSampled: null, judge: {} });

/**
 * Both teams' accuracy on held-out problems (the loop's evaluation of --eval-tasks math problems and of
 * every held-out data task), greedy and sampled, and the judge against the labeller on scripted held-out
 * work and on the base team's own; the models are loaded back from their folders (the path every model takes).
 */
async function measure(flags: Flags, dirs: { agentDir: string; judgeDir: string }, tools: ToolRunners, math: MathPlays, runTool: ToolRunner, tok: TextTokenizer): Promise<Measured> {
  const dataHeld = dataHeldOut(['classification', 'regression', 'table-question']);
  const mathConfig = resolveTrainConfig({ workflow: MATH_CHAIN, evalTasks: flags['eval-tasks'], evalTemperature: 1 });
  const dataConfig = resolveTrainConfig({ workflow: DATA_CHAIN, evalTasks: dataHeld.length }); // with the team's own settings
  const agent = await loadModel(folderSource(dirs.agentDir));
  const show = (name: string, a: TeamAccuracy) => {
    log(`${name}: ${(a.accuracy * 100).toFixed(1)}% ${JSON.stringify(a.byLevel)} format ${JSON.stringify(a.onFormat)}${a.metrics ? ' metrics ' + JSON.stringify(a.metrics) : ''} (${a.seconds.toFixed(0)} s)`);
    return a;
  };
  const mathEval = await teamAccuracy(agent, tools, mathConfig);
  const greedy = show('math team greedy', mathEval.greedy);
  const sampled = show('math team T=1.0', mathEval.sampled);
  const dataEval = await teamAccuracy(agent, tools, dataConfig, dataHeld);
  const dataGreedy = show('data team greedy', dataEval.greedy);
  const dataSampled = show(`data team T=${dataConfig.evalTemperature}`, dataEval.sampled);
  agent.model.dispose();

  const judgeModel = await loadModel(folderSource(dirs.judgeDir));
  const heldRng = new Rng(`pretrain-heldout-transcripts/${flags.seed}`);
  const scripted: Transcript[] = [];
  const heldOut = mathHeldOut().filter((_, i) => i % Math.max(1, Math.round(200 / flags['eval-tasks'])) === 0);
  for (const t of heldOut.filter((_, i) => i % 4 === 0)) scripted.push(await playTeam(math.team, t, { rng: heldRng, runTool }));
  const dataScriptedHeld = await playDataTeam(dataHeld, { rng: heldRng, tools });
  const sets: Record<string, JudgeItem[]> = {
    mathScripted: scripted.flatMap((t) => judgeExamples(asTrajectory(t), tok)),
    mathTeam: greedy.trajectories.filter((_, i) => i % 4 === 0).flatMap((t) => judgeExamples(t, tok)),
    dataScripted: dataScriptedHeld.flatMap((r) => dataJudgeItems(r.trajectory, tok)),
    dataTeam: dataGreedy.trajectories.flatMap((t) => dataJudgeItems(t, tok)),
  };
  const judge: Record<string, JudgeAgreement> = {};
  for (const [name, items] of Object.entries(sets)) {
    judge[name] = await judgeAgreement(judgeModel, items, 16);
    log(`judge vs labeller, ${name}: ${JSON.stringify(judge[name])}`);
  }
  judgeModel.model.dispose();
  return { greedy, sampled, dataGreedy, dataSampled, judge };
}

// ---- 6. The report and the model cards ----

/** pretrain-report.json and both models' cards (README.md), from everything the stages returned. */
async function writeReport(run: Run, dirs: { agentDir: string; judgeDir: string }, r: {
  backend: string; math: MathPlays; data: { runs: DataTranscript[]; scriptedSuccess: number }; start: StartingModel; model: Model; agentReport: AgentReport;
  judgeTrain: TrainReport; judgeExamples: number; trainSeconds: number; measured: Measured;
}): Promise<void> {
  const { flags } = run;
  const { greedy, sampled, dataGreedy, dataSampled, judge } = r.measured;
  const summary: PretrainReport = {
    seed: flags.seed, flags, backend: r.backend, parameters: parameterCount(r.model.config), config: r.model.configJson,
    vocabSize: r.model.config.vocabSize, merges: (r.model.tokJson.model as { merges: unknown[] }).merges.length, flawRates: r.math.flawRates, scriptedAccuracy: r.math.scriptedAccuracy,
    stage1: r.start.stage1, stage1Checks: r.start.stage1Checks, stage1From: flags.init || null, agentFrom: flags.agent || null, agentSeconds: r.agentReport.seconds,
    agentTasks: flags['agent-tasks'], judgeTasks: flags['judge-tasks'], agentExamples: r.agentReport.agentExamples, judgeExamples: r.judgeExamples,
    agentTrain: r.agentReport.agentTrain, judgeTrain: r.judgeTrain, trainSeconds: r.trainSeconds, totalSeconds: (performance.now() - run.started) / 1000,
    greedy: greedy && strip(greedy), sampled: sampled && strip(sampled), dataTasks: r.data.runs.length, dataScriptedSuccess: r.data.scriptedSuccess,
    dataGreedy: dataGreedy && strip(dataGreedy), dataSampled: dataSampled && strip(dataSampled), dataSampledTemperature: DATA_TEAM_SETTINGS.temperature, judge,
  };
  await writeCards(dirs.agentDir, dirs.judgeDir, summary);
  await writeFile(`${flags.out}/pretrain-report.json`, JSON.stringify(summary, null, 2) + '\n');
  for (const d of [dirs.agentDir, dirs.judgeDir]) log(`${d}/model.safetensors: ${((await stat(`${d}/model.safetensors`)).size / 2 ** 20).toFixed(2)} MiB`);
  log(`done in ${(summary.totalSeconds / 60).toFixed(1)} min`);
}

/** Dataset-wide counts per score, e.g. {"0": 12, "10": 400}. */
function histogram(scores: number[]): Record<number, number> {
  const h: Record<number, number> = {};
  for (const v of scores) h[v] = (h[v] ?? 0) + 1;
  return h;
}

function strip(a: TeamAccuracy): Omit<TeamAccuracy, 'trajectories'> {
  const { trajectories: _, ...rest } = a;
  return rest;
}

export type { TrainReport };

main().catch(failWith('pretrain'));
