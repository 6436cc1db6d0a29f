/**
 * The agent model's stages of a pretraining run (scripts/pretrain.ts): the tokenizer and stage 1 (the
 * math team alone, from scratch, trained on until the Solver reads the problem's numbers), or either
 * taken from an earlier run's folder; the vocabulary grown on the data team's text; stage 2 (both
 * teams mixed); and the agent written as <out>/agent with <out>/agent-report.json next to it.
 *
 * For: scripts/pretrain.ts, which calls these in order. Not for: the transcripts (transcripts.ts,
 * data-transcripts.ts), the judge or the measurements (scripts/pretrain.ts), the training step (train.ts).
 *
 * Example (a run's stages 2-3, with `math` and `data` the scripted transcripts):
 *   const start = await startingModel(run, math.stage1Transcripts);   // trained here: tokenizer + stage 1
 *   const model = finalModel(extendVocabulary(run.flags, start.parts, data.runs));   // +--extra-vocab tokens
 *   const report = start.agentReport ?? (await trainStage2(run, model, math.transcripts, data.runs, start));
 *   await writeAgent(run.flags.out, report, model);   // -> '<out>/agent'
 */
import type * as tf from '@tensorflow/tfjs-core';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { parameterCount, parseConfig, type ModelConfig } from '../../src/core/engine/model/config.ts';
import { CausalLM } from '../../src/core/engine/model/llama.ts';
import { TextTokenizer } from '../../src/core/engine/tokenizer/tokenizer.ts';
import { actionInputText, coachPrompt } from '../../src/core/coach/coach-format.ts';
import { generateMathTasks } from '../../src/core/domains/math/tasks.ts';
import { Rng } from '../../src/core/stats/rng.ts';
import { bpeFromJson, trainBpe, tokenizerJson, tokenizerConfig } from './bpe.ts';
import type { Stage1Check } from './card.ts';
import { dataCoachContexts, type DataTranscript } from './data-transcripts.ts';
import { solverReadsNumbers } from './evaluate.ts';
import { llamaConfigJson, readModelFolder, writeModelFolder, type ModelParts } from './folder.ts';
import { MAX_TOKENS, budgetSeconds, log, logEvery, type Examples, type Flags, type Run } from './run.ts';
import { extendEmbeddings, initWeights, type TrainReport } from './train.ts';
import { agentExamples, type Transcript } from './transcripts.ts';

/** Stage 1 is done when the greedy Solver reads the problem's numbers on this share of check problems; else it trains on (--stage1-extensions). */
const READS_NUMBERS = 0.8;

export interface StartingModel {
  parts: ModelParts;
  /** Stage 1's training; null when it was taken from --init. */
  stage1: TrainReport | null;
  stage1Checks: Stage1Check[];
  /** Stages 1-2 done by an earlier run (--agent): stage 2 is skipped. */
  agentReport: AgentReport | null;
}

/** The model stage 2 starts from: stages 1-2 from --agent's folder, stage 1 from --init's, or stage 1 trained here. */
export async function startingModel(run: Run, stage1Transcripts: Transcript[]): Promise<StartingModel> {
  const { flags } = run;
  if (flags.agent) {
    const parts = await readModelFolder(flags.agent, MAX_TOKENS);
    const agentReport = await readAgentReport(flags.agent);
    log(`agent (stages 1-2) taken from ${flags.agent}, written ${(agentReport.seconds / 60).toFixed(1)} min into the run that made it`);
    return { parts, stage1: agentReport.stage1, stage1Checks: [...(agentReport.stage1Checks ?? [])], agentReport };
  }
  if (flags.init) {
    const parts = await readModelFolder(flags.init, MAX_TOKENS);
    log(`stage 1 taken from ${flags.init} (tokenizer and weights)`);
    return { parts, stage1: null, stage1Checks: [], agentReport: null };
  }
  return trainStage1(run, stage1Transcripts);
}

/**
 * The tokenizer (BPE on the math team's conversations and coach prompts of the first 600 stage-1
 * transcripts), then stage 1: the math team alone, from scratch (a tiny model first learns to read and
 * copy numbers), at 1024 positions. The parts come back with MAX_TOKENS positions.
 */
async function trainStage1(run: Run, stage1Transcripts: Transcript[]): Promise<StartingModel> {
  const { flags } = run;
  const bpe = trainBpe(mathCorpus(stage1Transcripts.slice(0, 600)), { vocabSize: flags.vocab });
  const tokJson = tokenizerJson(bpe);
  const tokConfig = tokenizerConfig(bpe, MAX_TOKENS);
  log(`tokenizer: ${bpe.vocab.size} tokens, ${bpe.merges.length} merges`);
  const stage1Tok = TextTokenizer.fromJson(tokJson, tokenizerConfig(bpe, 1024));
  const configJson = modelConfigJson(flags, bpe.vocab.size, stage1Tok, 1024);
  const weights = initWeights(parseConfig(configJson, 'generated config.json'), new Rng(`pretrain-init/${flags.seed}`));
  const mathOnly = stage1Transcripts.flatMap((t) => agentExamples(t, stage1Tok)).map((e) => e.example).filter((e) => e.ids.length <= 1024);
  log(`stage 1 (math team): ${parameterCount(parseConfig(configJson, 'config'))} parameters, ${mathOnly.length} examples`);
  const stage1Config = parseConfig(configJson, 'config');
  const first = await run.train(stage1Config, weights, mathOnly, {
    steps: flags['agent-steps'], tokensPerBatch: flags['tokens-per-batch'], lr: flags.lr, seed: flags.seed, promptWeight: flags['prompt-weight'],
    maxSeconds: budgetSeconds(flags) * 0.4, log: logEvery('agent'),
  });
  log(`stage 1 trained: ${JSON.stringify(first)}`);
  const { stage1, checks } = await trainUntilReading(run, { config: stage1Config, weights, tok: stage1Tok }, mathOnly, first);
  return { parts: { tokJson, tokConfig, configJson: { ...configJson, max_position_embeddings: MAX_TOKENS }, weights }, stage1, stage1Checks: checks, agentReport: null };
}

/** Stage 1's tokenizer corpus: each action's input, output and observation, its coach prompt, and the judge's answer format. */
function mathCorpus(transcripts: Transcript[]): string[] {
  const corpus: string[] = [];
  for (const t of transcripts) {
    for (const a of t.actions) {
      corpus.push(actionInputText(a.messages), a.text, a.observation ?? '');
      corpus.push(coachPrompt({ problem: t.task.problem, agentId: a.agentId, role: a.role, input: actionInputText(a.messages), output: a.text, observation: a.observation, groundTruth: a.final ? t.task.answer : undefined, final: a.final }));
    }
    corpus.push('PROCESS_SCORE: 0 1 2 3 4 5 6 7 8 9 10\nANSWER_CORRECT: 0 1');
  }
  return corpus;
}

/**
 * The copying of the problem's numbers arrives late and suddenly in a model this small (one stage 1 of
 * 1400 steps had it, the next one at loss 0.45 did not, and its team solved 0 of 200): check it on
 * problems outside both the training and the held-out sets, and train on in chunks of
 * --stage1-extension-steps (at most --stage1-extensions of them) until it is there. Returns stage 1's
 * whole training (`first` plus the chunks) and every check.
 */
async function trainUntilReading(run: Run, m: { config: ModelConfig; weights: Map<string, tf.Variable>; tok: TextTokenizer }, examples: Examples, first: TrainReport): Promise<{ stage1: TrainReport; checks: Stage1Check[] }> {
  const { flags } = run;
  const checkTasks = generateMathTasks({ seed: `pretrain-check-${flags.seed}`, count: 40 });
  const checks: Stage1Check[] = [];
  let stage1 = first;
  for (let extra = 0; ; extra++) {
    const read = await solverReadsNumbers(new CausalLM(m.config, m.weights as Map<string, tf.Tensor>), m.tok, checkTasks);
    checks.push({ steps: stage1.steps, readsNumbers: read });
    log(`stage 1 after ${stage1.steps} steps: the Solver reads both numbers of the first operation on ${(read * 100).toFixed(0)}% of ${checkTasks.length} check problems`);
    if (read >= READS_NUMBERS || extra >= flags['stage1-extensions']) break;
    const more = await run.train(m.config, m.weights, examples, {
      steps: flags['stage1-extension-steps'], tokensPerBatch: flags['tokens-per-batch'], lr: flags.lr / 2, seed: flags.seed + 10 + extra, promptWeight: flags['prompt-weight'],
      warmup: 20, log: logEvery('agent+'),
    });
    stage1 = { ...more, steps: stage1.steps + more.steps, tokens: stage1.tokens + more.tokens, trainedTokens: stage1.trainedTokens + more.trainedTokens,
      seconds: stage1.seconds + more.seconds, firstLoss: stage1.firstLoss };
  }
  if (checks.at(-1)!.readsNumbers < READS_NUMBERS) log(`WARNING: stage 1 still does not read the problem's numbers; the math team will be weak (raise --agent-steps)`);
  return { stage1, checks };
}

/** config.json of the agent's Llama at --hidden and --layers: 4 attention heads, 2 KV heads, MLP 3 x hidden. */
function modelConfigJson(flags: Flags, vocabSize: number, tok: TextTokenizer, positions = MAX_TOKENS): Record<string, unknown> {
  return llamaConfigJson({
    vocabSize, hidden: flags.hidden, layers: flags.layers, heads: 4, kvHeads: 2, intermediate: flags.hidden * 3, positions,
    eosTokenId: tok.tokenToId('<|im_end|>')!, padTokenId: tok.tokenToId('<|endoftext|>')!, // special tokens: always in the vocabulary
  });
}

/**
 * After stage 1: the stage-1 merges were learnt on math text only and cut SQL and code into single
 * bytes; --extra-vocab new merges learnt on the data team's text (its first 300 transcripts) give it
 * words, the math tokens keep their ids. Grows the embeddings in place (each new token's row starts as
 * the mean of the pair it merges); returns the parts with the new tokenizer and vocabulary size.
 */
export function extendVocabulary(flags: Flags, parts: ModelParts, dataRuns: DataTranscript[]): ModelParts {
  const base = bpeFromJson(parts.tokJson);
  const dataCorpus: string[] = [];
  for (const r of dataRuns.slice(0, 300)) {
    for (const a of r.trajectory.actions) dataCorpus.push(actionInputText(a.messages), a.text, a.observation ?? '');
    for (const c of dataCoachContexts(r.trajectory)) dataCorpus.push(coachPrompt(c));
  }
  const bpe = trainBpe(dataCorpus, { vocabSize: base.vocab.size + flags['extra-vocab'], base });
  extendEmbeddings(parts.weights, base, bpe);
  log(`tokenizer extended: ${base.vocab.size} -> ${bpe.vocab.size} tokens (${bpe.merges.length - base.merges.length} merges learnt on the data team's text)`);
  return { tokJson: tokenizerJson(bpe), tokConfig: tokenizerConfig(bpe, MAX_TOKENS), configJson: { ...parts.configJson, vocab_size: bpe.vocab.size }, weights: parts.weights };
}

/** The model once its vocabulary is final: its parts, tokenizer, parsed config, and the files of its folder. */
export interface Model extends ModelParts {
  tok: TextTokenizer;
  config: ModelConfig;
  /** config.json, tokenizer.json, tokenizer_config.json and generation_config.json (greedy, up to 96 new tokens). */
  files: Record<string, Record<string, unknown>>;
}

export function finalModel(parts: ModelParts): Model {
  const tok = TextTokenizer.fromJson(parts.tokJson, parts.tokConfig);
  const config = parseConfig(parts.configJson, 'generated config.json');
  const generation = { eos_token_id: [tok.tokenToId('<|im_end|>'), tok.tokenToId('<|endoftext|>')], pad_token_id: tok.tokenToId('<|endoftext|>'), do_sample: false, max_new_tokens: 96 };
  const files = { 'config.json': parts.configJson, 'tokenizer.json': parts.tokJson, 'tokenizer_config.json': parts.tokConfig, 'generation_config.json': generation };
  return { ...parts, tok, config, files };
}

/**
 * Stage 2: both teams mixed (the first --mix-math math transcripts and every data one), at a lower
 * rate, so the data roles are learnt without losing the math team. Trains the weights in place.
 */
export async function trainStage2(run: Run, model: Model, transcripts: Transcript[], dataRuns: DataTranscript[], start: StartingModel): Promise<AgentReport> {
  const { flags } = run;
  const mathExamples = transcripts.slice(0, Math.min(flags['agent-tasks'], flags['mix-math'])).flatMap((t) => agentExamples(t, model.tok)).map((e) => e.example);
  const dataExamples = dataRuns.flatMap((r) => agentExamples(r.trajectory, model.tok)).map((e) => e.example);
  const agentData = [...mathExamples, ...dataExamples].filter((e) => e.ids.length <= MAX_TOKENS);
  log(`stage 2 examples: ${mathExamples.length} math, ${dataExamples.length} data (${dataExamples.filter((e) => e.ids.length > MAX_TOKENS).length} data ones over ${MAX_TOKENS} tokens dropped), ${agentData.reduce((s, e) => s + e.ids.length, 0)} tokens`);
  const agentTrain = await run.train(model.config, model.weights, agentData, {
    steps: flags['mix-steps'], tokensPerBatch: flags['tokens-per-batch'], lr: flags['mix-lr'], seed: flags.seed + 2, promptWeight: flags['prompt-weight'], warmup: 20,
    maxSeconds: Math.max(60, budgetSeconds(flags) * 0.65 - (performance.now() - run.started) / 1000), log: logEvery('stage 2'),
  });
  log(`stage 2 trained: ${JSON.stringify(agentTrain)}`);
  return { stage1: start.stage1, stage1Checks: start.stage1Checks, agentTrain, agentExamples: agentData.length, seconds: (performance.now() - run.started) / 1000 };
}

/** Writes <out>/agent-report.json (for a later --agent run) and the agent's folder <out>/agent, which it returns. */
export async function writeAgent(out: string, agentReport: AgentReport, model: Model): Promise<string> {
  await mkdir(out, { recursive: true });
  await writeFile(`${out}/agent-report.json`, JSON.stringify(agentReport, null, 2) + '\n');
  const agentDir = `${out}/agent`;
  await writeModelFolder(agentDir, model.files, model.weights);
  return agentDir;
}

/** What stages 1-2 left next to the agent folder (<out>/agent-report.json), for a later `--agent <out>/agent` run. */
export interface AgentReport {
  stage1: TrainReport | null;
  stage1Checks: Stage1Check[];
  agentTrain: TrainReport;
  agentExamples: number;
  /** Seconds from the start of that run until the agent was trained. */
  seconds: number;
  /** A note on where the report came from, when not written by the script itself. */
  source?: string;
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
