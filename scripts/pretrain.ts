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
 * Flags (defaults in DEFAULTS): --seed, --out, --agent-tasks, --judge-tasks (math), --data-tasks (data team), --vocab, --hidden,
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
 */
import * as tf from '@tensorflow/tfjs-core';
import { mkdir, readFile, writeFile, stat } from 'node:fs/promises';
import os from 'node:os';
import { initBackend, describeBackend } from '../src/core/engine/backend.ts';
import { parameterCount, parseConfig, expectedWeights, type ModelConfig } from '../src/core/engine/model/config.ts';
import { loadModel } from '../src/core/engine/model/load.ts';
import { decodeSafetensors, encodeSafetensors } from '../src/core/engine/model/safetensors.ts';
import { folderSource } from '../src/core/engine/model/sources.ts';
import { actionInputText, coachPrompt, type ActionContext } from '../src/core/coach/coach-format.ts';
import { DATA_TEAM_SETTINGS, dataHeldOut, dataRolloutTask } from '../src/core/domains/data/team.ts';
import { generateTabularTasks } from '../src/core/tasks/tabular.ts';
import { createSqlTool } from '../src/core/tools/sql.ts';
import { generateMathTasks, mathHeldOut, isMathHeldOut } from '../src/core/domains/math/tasks.ts';
import { Rng } from '../src/core/tasks/rng.ts';
import { TextTokenizer } from '../src/core/engine/tokenizer/tokenizer.ts';
import { formatObservation } from '../src/core/tools/sandbox.ts';
import { createSandbox } from '../src/core/tools/code-sandbox.ts';
import { disposeTools, type ToolRunners } from '../src/core/tools/runners.ts';
import { bpeFromJson, trainBpe, tokenizerJson, tokenizerConfig } from './pretrain/bpe.ts';
import { dataTeamAccuracy, judgeAgreement, solverReadsNumbers, teamAccuracy, type JudgeAgreement, type TeamAccuracy } from './pretrain/evaluate.ts';
import { CausalLM } from '../src/core/engine/model/llama.ts';
import { dataCoachContexts, dataJudgeItems, playDataTeam } from './pretrain/data-transcripts.ts';
import { extendEmbeddings, initWeights, trainModel, type TrainOptions, type TrainReport } from './pretrain/train.ts';
import { GradientWorkers } from './pretrain/data-parallel.ts';
import {
  mathTeam, agentExamples, asTrajectory, balanceByScore, judgeExamples, mathCoachContexts, parseFlawRates, playTeam,
  type JudgeItem, type Transcript,
} from './pretrain/transcripts.ts';
import { writeCards, type RunSummary, type Stage1Check } from './pretrain/card.ts';

const DEFAULTS = {
  seed: 0, out: 'models', 'agent-tasks': 3000, 'judge-tasks': 1500, vocab: 1024, hidden: 128, layers: 4,
  'data-tasks': 1200, 'agent-steps': 1400, 'mix-steps': 1200, 'judge-steps': 300, 'tokens-per-batch': 2048, lr: 3e-3, 'mix-lr': 2e-3,
  'judge-lr': 2e-3, 'prompt-weight': 0.2, 'max-minutes': 150, 'eval-tasks': 200, 'skip-eval': 0, init: '', 'extra-vocab': 512,
  threads: Math.min(4, os.availableParallelism()),
  flaws: '',
  'mix-math': 1500,
  'stage1-extensions': 3, 'stage1-extension-steps': 300,
  agent: '',
};
type Flags = typeof DEFAULTS;

function parseFlags(argv: string[]): Flags {
  const flags: Record<string, number | string> = { ...DEFAULTS };
  for (let i = 0; i < argv.length; i++) {
    const m = /^--([\w-]+)(?:=(.*))?$/.exec(argv[i]);
    if (!m || !(m[1] in DEFAULTS)) throw new Error(`pretrain: unknown argument "${argv[i]}" (flags: ${Object.keys(DEFAULTS).map((k) => '--' + k).join(' ')})`);
    const raw = m[2] ?? (m[1] === 'skip-eval' ? '1' : argv[++i]);
    flags[m[1]] = typeof DEFAULTS[m[1] as keyof Flags] === 'number' ? Number(raw) : raw;
    if (typeof flags[m[1]] === 'number' && !Number.isFinite(flags[m[1]])) throw new Error(`pretrain: --${m[1]} needs a number, got "${raw}"`);
  }
  return flags as Flags;
}

/** Stage 1 is done when the greedy Solver reads the problem's numbers on this share of check problems; else it trains on (--stage1-extensions). */
const READS_NUMBERS = 0.8;

/** Context length of the models; the data team's coach prompts (files, metrics) run past 1024 tokens. */
const MAX_TOKENS = 2048;

const log = (msg: string) => console.log(`[pretrain ${new Date().toISOString().slice(11, 19)}] ${msg}`);

function modelConfigJson(flags: Flags, vocabSize: number, tok: TextTokenizer, positions = MAX_TOKENS): Record<string, unknown> {
  const heads = 4;
  return {
    architectures: ['LlamaForCausalLM'], model_type: 'llama', vocab_size: vocabSize, hidden_size: flags.hidden,
    intermediate_size: flags.hidden * 3, num_hidden_layers: flags.layers, num_attention_heads: heads, num_key_value_heads: 2,
    head_dim: flags.hidden / heads, hidden_act: 'silu', max_position_embeddings: positions, rms_norm_eps: 1e-5, rope_theta: 10000,
    rope_scaling: null, attention_bias: false, mlp_bias: false, tie_word_embeddings: true, initializer_range: 0.02,
    eos_token_id: tok.tokenToId('<|im_end|>'), pad_token_id: tok.tokenToId('<|endoftext|>'), torch_dtype: 'float32', use_cache: true,
  };
}

async function saveFolder(dir: string, files: Record<string, unknown>, weights: Map<string, tf.Variable>, config: ModelConfig): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (const [name, json] of Object.entries(files)) await writeFile(`${dir}/${name}`, JSON.stringify(json, null, 2) + '\n');
  const tensors = [];
  for (const [name, shape] of expectedWeights(config)) tensors.push({ name, shape, data: (await weights.get(name)!.data()) as Float32Array });
  await writeFile(`${dir}/model.safetensors`, encodeSafetensors(tensors, { format: 'pt' }));
}

async function main(): Promise<void> {
  const flags = parseFlags(process.argv.slice(2));
  const started = performance.now();
  const backend = await initBackend({ force: 'wasm' }); // also registers gradients and the wasm kernels
  log(`backend ${describeBackend(backend)}; flags ${JSON.stringify(flags)}`);
  const sandbox = createSandbox();
  const runTool = async (code: string) => formatObservation(await sandbox.run(code, { language: 'python', timeoutMs: 2000 }));

  // 1. Transcripts of the scripted team on training problems (never held-out ones).
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
  // Played only when stage 1 is trained here: --init and --agent take it from a folder.
  const stage1Transcripts: Transcript[] = [];
  if (!flags.agent && !flags.init) for (const t of tasks.slice(0, flags['agent-tasks'])) stage1Transcripts.push(await playTeam(stage1Team, t, { rng: stage1Rng, runTool }));
  const sql = createSqlTool();
  const tools: ToolRunners = { python: sandbox, javascript: sandbox, sql };
  const dataTasks = [
    ...generateTabularTasks({ seed: `pretrain-${flags.seed}`, count: Math.round(flags['data-tasks'] * 0.85), kinds: ['classification', 'regression'] }),
    ...generateTabularTasks({ seed: `pretrain-${flags.seed}`, count: Math.round(flags['data-tasks'] * 0.15), kinds: ['table-question'] }),
  ].map(dataRolloutTask);
  const dataRuns = await playDataTeam(dataTasks, { rng: new Rng(`pretrain-data-transcripts/${flags.seed}`), tools });
  const dataScripted = dataRuns.filter((r) => r.trajectory.correct).length / Math.max(1, dataRuns.length);
  log(`${dataRuns.length} data-team transcripts, scripted success ${(dataScripted * 100).toFixed(1)}%`);

  // 2. Tokenizer: BPE on the math team's conversations and coach prompts of the first 600 transcripts
  //    (stage 1's recipe); after stage 1 it grows by --extra-vocab merges learnt on the data team's text.
  //    With --init, the stage-1 tokenizer and weights come from that folder instead.
  const logEvery = (name: string) => (i: { step: number; loss: number; lr: number; tokens: number; seconds: number }) => {
    if (i.step % 10 === 0) log(`${name} step ${i.step} loss ${i.loss.toFixed(3)} lr ${i.lr.toExponential(2)} ${Math.round(i.tokens / i.seconds)} tok/s`);
  };
  const budget = flags['max-minutes'] * 60;
  if (!Number.isInteger(flags.threads) || flags.threads < 1) throw new Error(`pretrain: --threads must be a whole number >= 1, got ${flags.threads}`);
  // Each stage gets its own worker pool: the model's shapes change between stages (vocabulary, positions).
  const train = async (config: ModelConfig, weights: Map<string, tf.Variable>, examples: Parameters<typeof trainModel>[2], opts: TrainOptions) => {
    const workers = flags.threads > 1 ? await GradientWorkers.start(flags.threads - 1, config, weights) : undefined;
    try {
      return await trainModel(config, weights, examples, { ...opts, workers });
    } finally {
      await workers?.close();
    }
  };
  let tokJson: Record<string, unknown>;
  let tokConfig: Record<string, unknown>;
  let stage1: TrainReport | null = null;
  const stage1Checks: Stage1Check[] = [];
  let configJson: Record<string, unknown>;
  let weights: Map<string, tf.Variable>;
  let agentReport: AgentReport | null = null;
  if (flags.agent) {
    ({ tokJson, tokConfig, configJson, weights } = await readModelFolder(flags.agent));
    agentReport = await readAgentReport(flags.agent);
    stage1 = agentReport.stage1;
    stage1Checks.push(...(agentReport.stage1Checks ?? []));
    log(`agent (stages 1-2) taken from ${flags.agent}, written ${(agentReport.seconds / 60).toFixed(1)} min into the run that made it`);
  } else if (flags.init) {
    ({ tokJson, tokConfig, configJson, weights } = await readModelFolder(flags.init));
    log(`stage 1 taken from ${flags.init} (tokenizer and weights)`);
  } else {
    const corpus: string[] = [];
    for (const t of stage1Transcripts.slice(0, 600)) {
      for (const a of t.actions) {
        corpus.push(actionInputText(a.messages), a.text, a.observation ?? '');
        corpus.push(coachPrompt({ problem: t.task.problem, agentId: a.agentId, role: a.role, input: actionInputText(a.messages), output: a.text, observation: a.observation, groundTruth: a.final ? t.task.answer : undefined, final: a.final }));
      }
      corpus.push('PROCESS_SCORE: 0 1 2 3 4 5 6 7 8 9 10\nANSWER_CORRECT: 0 1');
    }
    const bpe = trainBpe(corpus, { vocabSize: flags.vocab });
    tokJson = tokenizerJson(bpe);
    tokConfig = tokenizerConfig(bpe, MAX_TOKENS);
    log(`tokenizer: ${bpe.vocab.size} tokens, ${bpe.merges.length} merges`);
    const stage1Tok = TextTokenizer.fromJson(tokJson, tokenizerConfig(bpe, 1024));
    configJson = modelConfigJson(flags, bpe.vocab.size, stage1Tok, 1024);
    weights = initWeights(parseConfig(configJson, 'generated config.json'), new Rng(`pretrain-init/${flags.seed}`));
    // 3a. Stage 1: the math team alone, from scratch (a tiny model first learns to read and copy numbers).
    const mathOnly = stage1Transcripts.flatMap((t) => agentExamples(t, stage1Tok)).map((e) => e.example).filter((e) => e.ids.length <= 1024);
    log(`stage 1 (math team): ${parameterCount(parseConfig(configJson, 'config'))} parameters, ${mathOnly.length} examples`);
    const stage1Config = parseConfig(configJson, 'config');
    stage1 = await train(stage1Config, weights, mathOnly, {
      steps: flags['agent-steps'], tokensPerBatch: flags['tokens-per-batch'], lr: flags.lr, seed: flags.seed, promptWeight: flags['prompt-weight'],
      maxSeconds: budget * 0.4, log: logEvery('agent'),
    });
    log(`stage 1 trained: ${JSON.stringify(stage1)}`);
    // The copying of the problem's numbers arrives late and suddenly in a model this small (one stage 1 of
    // 1400 steps had it, the next one at loss 0.45 did not, and its team solved 0 of 200): check it on
    // problems outside both the training and the held-out sets, and train on in chunks until it is there.
    const checkTasks = generateMathTasks({ seed: `pretrain-check-${flags.seed}`, count: 40 });
    for (let extra = 0; ; extra++) {
      const read = await solverReadsNumbers(new CausalLM(stage1Config, weights as Map<string, tf.Tensor>), stage1Tok, checkTasks);
      stage1Checks.push({ steps: stage1.steps, readsNumbers: read });
      log(`stage 1 after ${stage1.steps} steps: the Solver reads both numbers of the first operation on ${(read * 100).toFixed(0)}% of ${checkTasks.length} check problems`);
      if (read >= READS_NUMBERS || extra >= flags['stage1-extensions']) break;
      const more = await train(stage1Config, weights, mathOnly, {
        steps: flags['stage1-extension-steps'], tokensPerBatch: flags['tokens-per-batch'], lr: flags.lr / 2, seed: flags.seed + 10 + extra, promptWeight: flags['prompt-weight'],
        warmup: 20, log: logEvery('agent+'),
      });
      stage1 = { ...more, steps: stage1.steps + more.steps, tokens: stage1.tokens + more.tokens, trainedTokens: stage1.trainedTokens + more.trainedTokens,
        seconds: stage1.seconds + more.seconds, firstLoss: stage1.firstLoss };
    }
    if (stage1Checks.at(-1)!.readsNumbers < READS_NUMBERS) log(`WARNING: stage 1 still does not read the problem's numbers; the math team will be weak (raise --agent-steps)`);
    configJson = { ...configJson, max_position_embeddings: MAX_TOKENS };
  }
  if (flags['extra-vocab'] > 0 && !flags.agent) {
    // The stage-1 merges were learnt on math text only and cut SQL and code into single bytes;
    // new merges learnt on the data team's text give it words, the math tokens keep their ids.
    const base = bpeFromJson(tokJson);
    const dataCorpus: string[] = [];
    for (const r of dataRuns.slice(0, 300)) {
      for (const a of r.trajectory.actions) dataCorpus.push(actionInputText(a.messages), a.text, a.observation ?? '');
      for (const c of dataCoachContexts(r.trajectory)) dataCorpus.push(coachPrompt(c));
    }
    const bpe = trainBpe(dataCorpus, { vocabSize: base.vocab.size + flags['extra-vocab'], base });
    tokJson = tokenizerJson(bpe);
    tokConfig = tokenizerConfig(bpe, MAX_TOKENS);
    extendEmbeddings(weights, base, bpe);
    configJson = { ...configJson, vocab_size: bpe.vocab.size };
    log(`tokenizer extended: ${base.vocab.size} -> ${bpe.vocab.size} tokens (${bpe.merges.length - base.merges.length} merges learnt on the data team's text)`);
  }
  const tok = TextTokenizer.fromJson(tokJson, tokConfig);
  const config = parseConfig(configJson, 'generated config.json');
  const generation = { eos_token_id: [tok.tokenToId('<|im_end|>'), tok.tokenToId('<|endoftext|>')], pad_token_id: tok.tokenToId('<|endoftext|>'), do_sample: false, max_new_tokens: 96 };

  // 3b. Stage 2: both teams mixed, at a lower rate, so the data roles are learnt without losing the math team.
  if (!agentReport) {
    const mathExamples = transcripts.slice(0, Math.min(flags['agent-tasks'], flags['mix-math'])).flatMap((t) => agentExamples(t, tok)).map((e) => e.example);
    const dataExamples = dataRuns.flatMap((r) => agentExamples(r.trajectory, tok)).map((e) => e.example);
    const agentData = [...mathExamples, ...dataExamples].filter((e) => e.ids.length <= MAX_TOKENS);
    log(`stage 2 examples: ${mathExamples.length} math, ${dataExamples.length} data (${dataExamples.filter((e) => e.ids.length > MAX_TOKENS).length} data ones over ${MAX_TOKENS} tokens dropped), ${agentData.reduce((s, e) => s + e.ids.length, 0)} tokens`);
    const agentTrain = await train(config, weights, agentData, {
      steps: flags['mix-steps'], tokensPerBatch: flags['tokens-per-batch'], lr: flags['mix-lr'], seed: flags.seed + 2, promptWeight: flags['prompt-weight'], warmup: 20,
      maxSeconds: Math.max(60, budget * 0.65 - (performance.now() - started) / 1000), log: logEvery('stage 2'),
    });
    log(`stage 2 trained: ${JSON.stringify(agentTrain)}`);
    agentReport = { stage1, stage1Checks, agentTrain, agentExamples: agentData.length, seconds: (performance.now() - started) / 1000 };
  }
  await mkdir(flags.out, { recursive: true });
  await writeFile(`${flags.out}/agent-report.json`, JSON.stringify(agentReport, null, 2) + '\n');
  const { agentTrain } = agentReport;
  const agentDir = `${flags.out}/agent`;
  const files = { 'config.json': configJson, 'tokenizer.json': tokJson, 'tokenizer_config.json': tokConfig, 'generation_config.json': generation };
  await saveFolder(agentDir, files, weights, config);
  const judgeStarted = performance.now();

  // 4. Judge model: continued from the agent on (coach prompt -> rule score) pairs.
  // Balanced by score: the scripted team is mostly competent, and a judge that sees 10 most of the time learns to say 10.
  const judgeRng = new Rng(`pretrain-judge/${flags.seed}`);
  const mathJudge = balanceByScore(transcripts.slice(0, flags['judge-tasks']).flatMap((t) => judgeExamples(asTrajectory(t), tok)), judgeRng);
  const dataJudge = balanceByScore(dataRuns.flatMap((r) => dataJudgeItems(r.trajectory, tok)), judgeRng);
  const judgeItems = [...mathJudge, ...dataJudge];
  const judgeData = judgeItems.map((j) => j.example).filter((e) => e.ids.length <= MAX_TOKENS);
  log(`judge items: ${mathJudge.length} math, ${dataJudge.length} data; scores ${JSON.stringify(histogram(judgeItems.map((j) => j.score)))}`);
  log(`judge: ${judgeData.length} examples, ${judgeData.reduce((s, e) => s + e.ids.length, 0)} tokens`);
  const judgeTrain = await train(config, weights, judgeData, {
    steps: flags['judge-steps'], tokensPerBatch: flags['tokens-per-batch'], lr: flags['judge-lr'], seed: flags.seed + 1, warmup: 10,
    maxSeconds: Math.max(60, budget * 0.8 - (performance.now() - started) / 1000), log: logEvery('judge'),
  });
  log(`judge trained: ${JSON.stringify(judgeTrain)}`);
  const judgeDir = `${flags.out}/judge`;
  await saveFolder(judgeDir, { ...files, 'generation_config.json': { ...generation, max_new_tokens: 16 } }, weights, config);
  for (const w of weights.values()) w.dispose();
  // With --agent, the time to both models is the earlier run's time to its agent plus this run's judge.
  const trainSeconds = flags.agent ? agentReport.seconds + (performance.now() - judgeStarted) / 1000 : (performance.now() - started) / 1000;

  // 5. Measurements, with the models loaded back from their folders (the path every model takes).
  let greedy: TeamAccuracy | null = null;
  let sampled: TeamAccuracy | null = null;
  let dataGreedy: TeamAccuracy | null = null;
  let dataSampled: TeamAccuracy | null = null;
  const judge: Record<string, JudgeAgreement> = {};
  if (!flags['skip-eval']) {
    const heldOut = mathHeldOut().filter((_, i) => i % Math.max(1, Math.round(200 / flags['eval-tasks'])) === 0);
    const dataHeld = dataHeldOut(['classification', 'regression', 'table-question']);
    const agent = await loadModel(folderSource(agentDir));
    const show = (name: string, a: TeamAccuracy) =>
      log(`${name}: ${(a.accuracy * 100).toFixed(1)}% ${JSON.stringify(a.byLevel)} format ${JSON.stringify(a.onFormat)}${a.metrics ? ' metrics ' + JSON.stringify(a.metrics) : ''} (${a.seconds.toFixed(0)} s)`);
    show('math team greedy', (greedy = await teamAccuracy(agent, heldOut, tools, { temperature: 0, seed: flags.seed })));
    show('math team T=1.0', (sampled = await teamAccuracy(agent, heldOut, tools, { temperature: 1, seed: flags.seed })));
    show('data team greedy', (dataGreedy = await dataTeamAccuracy(agent, dataHeld, tools, { temperature: 0, seed: flags.seed, batch: 10 })));
    show(`data team T=${DATA_TEAM_SETTINGS.temperature}`, (dataSampled = await dataTeamAccuracy(agent, dataHeld, tools, { temperature: DATA_TEAM_SETTINGS.temperature, seed: flags.seed, batch: 10 })));
    agent.model.dispose();

    // The judge against the labeller: on scripted held-out work, and on the base team's own held-out work.
    const judgeModel = await loadModel(folderSource(judgeDir));
    const heldRng = new Rng(`pretrain-heldout-transcripts/${flags.seed}`);
    const scripted: Transcript[] = [];
    for (const t of heldOut.filter((_, i) => i % 4 === 0)) scripted.push(await playTeam(team, t, { rng: heldRng, runTool }));
    const dataScriptedHeld = await playDataTeam(dataHeld, { rng: heldRng, tools });
    const sets: Record<string, JudgeItem[]> = {
      mathScripted: scripted.flatMap((t) => judgeExamples(asTrajectory(t), tok)),
      mathTeam: greedy.trajectories.filter((_, i) => i % 4 === 0).flatMap((t) => judgeExamples(t, tok)),
      dataScripted: dataScriptedHeld.flatMap((r) => dataJudgeItems(r.trajectory, tok)),
      dataTeam: dataGreedy.trajectories.flatMap((t) => dataJudgeItems(t, tok)),
    };
    for (const [name, items] of Object.entries(sets)) {
      judge[name] = await judgeAgreement(judgeModel, items, 16);
      log(`judge vs labeller, ${name}: ${JSON.stringify(judge[name])}`);
    }
    judgeModel.model.dispose();
  }
  await disposeTools(tools);

  const summary: RunSummary = {
    seed: flags.seed, flags, backend: describeBackend(backend), parameters: parameterCount(config), config: configJson,
    vocabSize: config.vocabSize, merges: (tokJson.model as { merges: unknown[] }).merges.length, flawRates, scriptedAccuracy,
    stage1, stage1Checks, stage1From: flags.init || null, agentFrom: flags.agent || null, agentSeconds: agentReport.seconds,
    agentTasks: flags['agent-tasks'], judgeTasks: flags['judge-tasks'], agentExamples: agentReport.agentExamples, judgeExamples: judgeData.length,
    agentTrain, judgeTrain, trainSeconds, totalSeconds: (performance.now() - started) / 1000,
    greedy: greedy && strip(greedy), sampled: sampled && strip(sampled), dataTasks: dataRuns.length, dataScriptedSuccess: dataScripted,
    dataGreedy: dataGreedy && strip(dataGreedy), dataSampled: dataSampled && strip(dataSampled), dataSampledTemperature: DATA_TEAM_SETTINGS.temperature, judge,
  };
  await writeCards(agentDir, judgeDir, summary);
  await writeFile(`${flags.out}/pretrain-report.json`, JSON.stringify(summary, null, 2) + '\n');
  for (const d of [agentDir, judgeDir]) log(`${d}/model.safetensors: ${((await stat(`${d}/model.safetensors`)).size / 2 ** 20).toFixed(2)} MiB`);
  log(`done in ${(summary.totalSeconds / 60).toFixed(1)} min`);
}

/** What stages 1-2 left next to the agent folder (<out>/agent-report.json), for a later `--agent <out>/agent` run. */
interface AgentReport {
  stage1: TrainReport | null;
  stage1Checks: Stage1Check[];
  agentTrain: TrainReport;
  agentExamples: number;
  /** Seconds from the start of that run until the agent was trained. */
  seconds: number;
  /** A note on where the report came from, when not written by the script itself. */
  source?: string;
}

async function readModelFolder(dir: string) {
  const tokJson: Record<string, unknown> = JSON.parse(await readFile(`${dir}/tokenizer.json`, 'utf8'));
  const tokConfig: Record<string, unknown> = { ...JSON.parse(await readFile(`${dir}/tokenizer_config.json`, 'utf8')), model_max_length: MAX_TOKENS };
  const configJson: Record<string, unknown> = { ...JSON.parse(await readFile(`${dir}/config.json`, 'utf8')), max_position_embeddings: MAX_TOKENS };
  const { tensors } = await decodeSafetensors(new Uint8Array(await readFile(`${dir}/model.safetensors`)), `${dir}/model.safetensors`);
  const weights = new Map([...tensors].map(([name, t]) => [name, tf.variable(tf.tensor(t.data, t.shape), true, name)]));
  return { tokJson, tokConfig, configJson, weights };
}

async function readAgentReport(agentDir: string): Promise<AgentReport> {
  const file = `${agentDir.replace(/\/+$/, '')}/../agent-report.json`;
  let report: Partial<AgentReport>;
  try {
    report = JSON.parse(await readFile(file, 'utf8'));
  } catch (e) {
    throw new Error(`pretrain: --agent ${agentDir} needs ${file}, which the run that trained that agent writes next to it (${(e as Error).message}); without it, rebuild the agent too (drop --agent)`);
  }
  if (!report.agentTrain || typeof report.seconds !== 'number' || typeof report.agentExamples !== 'number') {
    throw new Error(`pretrain: ${file} lacks agentTrain, agentExamples or seconds; it is not a report of stages 1-2 (rebuild the agent: drop --agent)`);
  }
  return { stage1: report.stage1 ?? null, stage1Checks: report.stage1Checks ?? [], agentTrain: report.agentTrain, agentExamples: report.agentExamples, seconds: report.seconds, source: report.source };
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

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
