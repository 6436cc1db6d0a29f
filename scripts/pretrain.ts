/**
 * `npm run pretrain -- --seed 0`: rebuilds the project's own tiny models, models/agent and
 * models/judge, from nothing but this repository: synthetic team transcripts -> a byte-level BPE
 * tokenizer -> a Llama agent model -> a judge model (continued from the agent) -> measurements ->
 * Hugging Face folders with model cards. Runs on tfjs `wasm` in Node, seeded throughout.
 *
 * For: reproducing the shipped models (about an hour on 2 cores). Not for: RL (the trainer does
 * that on top of these models).
 *
 * Flags (defaults in DEFAULTS): --seed, --out, --agent-tasks, --judge-tasks, --vocab, --hidden,
 * --layers, --agent-steps, --judge-steps, --tokens-per-batch, --lr, --judge-lr, --prompt-weight (agent loss
 * weight on prompt tokens; the judge trains on its answers only), --max-minutes,
 * --eval-tasks (held-out problems used for the card; 200 = all), --skip-eval.
 * Example: npm run pretrain -- --seed 0 --agent-steps 50 --judge-steps 20 --out .tmp/models   (a quick trial)
 */
import * as tf from '@tensorflow/tfjs-core';
import { mkdir, writeFile, stat } from 'node:fs/promises';
import { initBackend, describeBackend } from '../src/core/backend.ts';
import { parameterCount, parseConfig, expectedWeights, type ModelConfig } from '../src/core/model/config.ts';
import { loadModel } from '../src/core/model/load.ts';
import { encodeSafetensors } from '../src/core/model/safetensors.ts';
import { folderSource } from '../src/core/model/sources.ts';
import { coachPrompt } from '../src/core/mappa/coach-format.ts';
import { ruleScore } from '../src/core/mappa/rule-coach.ts';
import { generateMathTasks, mathHeldOut, isMathHeldOut } from '../src/core/tasks/math.ts';
import { Rng } from '../src/core/tasks/rng.ts';
import { TextTokenizer } from '../src/core/tokenizer/tokenizer.ts';
import { createSandbox, formatObservation } from '../src/core/tools/sandbox.ts';
import { trainBpe, tokenizerJson, tokenizerConfig } from './pretrain/bpe.ts';
import { judgeAgreement, teamAccuracy, type JudgeAgreement, type TeamAccuracy } from './pretrain/evaluate.ts';
import { initWeights, trainModel, type TrainReport } from './pretrain/train.ts';
import { MATH_FLAW_RATES, MATH_TEAM, agentExamples, judgeExamples, playTeam, type Transcript } from './pretrain/transcripts.ts';
import { actionInputText } from '../src/core/mappa/coach-format.ts';
import { writeCards, type RunSummary } from './pretrain/card.ts';

const DEFAULTS = {
  seed: 0, out: 'models', 'agent-tasks': 3000, 'judge-tasks': 1500, vocab: 1024, hidden: 128, layers: 4,
  'agent-steps': 1400, 'judge-steps': 160, 'tokens-per-batch': 2048, lr: 3e-3, 'judge-lr': 1e-3, 'prompt-weight': 0.2, 'max-minutes': 120,
  'eval-tasks': 200, 'skip-eval': 0,
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

const log = (msg: string) => console.log(`[pretrain ${new Date().toISOString().slice(11, 19)}] ${msg}`);

function modelConfigJson(flags: Flags, vocabSize: number, tok: TextTokenizer): Record<string, unknown> {
  const heads = 4;
  return {
    architectures: ['LlamaForCausalLM'], model_type: 'llama', vocab_size: vocabSize, hidden_size: flags.hidden,
    intermediate_size: flags.hidden * 3, num_hidden_layers: flags.layers, num_attention_heads: heads, num_key_value_heads: 2,
    head_dim: flags.hidden / heads, hidden_act: 'silu', max_position_embeddings: 1024, rms_norm_eps: 1e-5, rope_theta: 10000,
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
  const transcripts: Transcript[] = [];
  for (const t of tasks) transcripts.push(await playTeam(MATH_TEAM, t, { rng, runTool }));
  const scriptedAccuracy = transcripts.filter((t) => t.correct).length / transcripts.length;
  log(`${transcripts.length} transcripts, scripted team accuracy ${(scriptedAccuracy * 100).toFixed(1)}%`);

  // 2. Tokenizer: BPE on agent conversations and coach prompts of the first 600 transcripts.
  const corpus: string[] = [];
  for (const t of transcripts.slice(0, 600)) {
    for (const a of t.actions) {
      corpus.push(actionInputText(a.messages), a.text, a.observation ?? '');
      corpus.push(coachPrompt({ problem: t.task.problem, agentId: a.agentId, role: a.role, input: actionInputText(a.messages), output: a.text, observation: a.observation, groundTruth: a.final ? t.task.answer : undefined, final: a.final }));
    }
    corpus.push('PROCESS_SCORE: 0 1 2 3 4 5 6 7 8 9 10\nANSWER_CORRECT: 0 1');
  }
  const bpe = trainBpe(corpus, { vocabSize: flags.vocab });
  const tokJson = tokenizerJson(bpe);
  const tokConfig = tokenizerConfig(bpe, 1024);
  const tok = TextTokenizer.fromJson(tokJson, tokConfig);
  log(`tokenizer: ${bpe.vocab.size} tokens, ${bpe.merges.length} merges`);

  // 3. Agent model.
  const configJson = modelConfigJson(flags, bpe.vocab.size, tok);
  const config = parseConfig(configJson, 'generated config.json');
  const generation = { eos_token_id: [tok.tokenToId('<|im_end|>'), tok.tokenToId('<|endoftext|>')], pad_token_id: tok.tokenToId('<|endoftext|>'), do_sample: false, max_new_tokens: 96 };
  const agentData = transcripts.slice(0, flags['agent-tasks']).flatMap((t) => agentExamples(t, tok)).map((e) => e.example).filter((e) => e.ids.length <= 1024);
  const budget = flags['max-minutes'] * 60;
  const weights = initWeights(config, new Rng(`pretrain-init/${flags.seed}`));
  log(`agent: ${parameterCount(config)} parameters, ${agentData.length} examples, ${agentData.reduce((s, e) => s + e.ids.length, 0)} tokens`);
  const logEvery = (name: string) => (i: { step: number; loss: number; lr: number; tokens: number; seconds: number }) => {
    if (i.step % 10 === 0) log(`${name} step ${i.step} loss ${i.loss.toFixed(3)} lr ${i.lr.toExponential(2)} ${Math.round(i.tokens / i.seconds)} tok/s`);
  };
  const agentTrain = await trainModel(config, weights, agentData, {
    steps: flags['agent-steps'], tokensPerBatch: flags['tokens-per-batch'], lr: flags.lr, seed: flags.seed, promptWeight: flags['prompt-weight'],
    maxSeconds: budget * 0.55, log: logEvery('agent'),
  });
  log(`agent trained: ${JSON.stringify(agentTrain)}`);
  const agentDir = `${flags.out}/agent`;
  const files = { 'config.json': configJson, 'tokenizer.json': tokJson, 'tokenizer_config.json': tokConfig, 'generation_config.json': generation };
  await saveFolder(agentDir, files, weights, config);

  // 4. Judge model: continued from the agent on (coach prompt -> rule score) pairs.
  const judgeItems = transcripts.slice(0, flags['judge-tasks']).flatMap((t) => judgeExamples(t, tok));
  const judgeData = judgeItems.map((j) => j.example).filter((e) => e.ids.length <= 1024);
  log(`judge: ${judgeData.length} examples, ${judgeData.reduce((s, e) => s + e.ids.length, 0)} tokens`);
  const judgeTrain = await trainModel(config, weights, judgeData, {
    steps: flags['judge-steps'], tokensPerBatch: flags['tokens-per-batch'], lr: flags['judge-lr'], seed: flags.seed + 1, warmup: 10,
    maxSeconds: Math.max(60, budget * 0.8 - (performance.now() - started) / 1000), log: logEvery('judge'),
  });
  log(`judge trained: ${JSON.stringify(judgeTrain)}`);
  const judgeDir = `${flags.out}/judge`;
  await saveFolder(judgeDir, { ...files, 'generation_config.json': { ...generation, max_new_tokens: 16 } }, weights, config);
  for (const w of weights.values()) w.dispose();
  const trainSeconds = (performance.now() - started) / 1000;

  // 5. Measurements, with the models loaded back from their folders (the path every model takes).
  let greedy: TeamAccuracy | null = null;
  let sampled: TeamAccuracy | null = null;
  let judgeScripted: JudgeAgreement | null = null;
  let judgeTeam: JudgeAgreement | null = null;
  if (!flags['skip-eval']) {
    const heldOut = mathHeldOut().filter((_, i) => i % Math.max(1, Math.round(200 / flags['eval-tasks'])) === 0);
    const agent = await loadModel(folderSource(agentDir));
    greedy = await teamAccuracy(agent, heldOut, sandbox, { temperature: 0, seed: flags.seed });
    log(`team greedy: ${(greedy.accuracy * 100).toFixed(1)}% ${JSON.stringify(greedy.byLevel)} format ${JSON.stringify(greedy.onFormat)} (${greedy.seconds.toFixed(0)} s)`);
    sampled = await teamAccuracy(agent, heldOut, sandbox, { temperature: 1, seed: flags.seed });
    log(`team T=1.0: ${(sampled.accuracy * 100).toFixed(1)}% ${JSON.stringify(sampled.byLevel)} format ${JSON.stringify(sampled.onFormat)} (${sampled.seconds.toFixed(0)} s)`);
    agent.model.dispose();

    const judge = await loadModel(folderSource(judgeDir));
    const heldRng = new Rng(`pretrain-heldout-transcripts/${flags.seed}`);
    const scriptedItems = [];
    for (const t of heldOut.filter((_, i) => i % 2 === 0)) scriptedItems.push(...judgeExamples(await playTeam(MATH_TEAM, t, { rng: heldRng, runTool }), tok));
    judgeScripted = await judgeAgreement(judge, scriptedItems);
    log(`judge vs labeller, scripted held-out actions: ${JSON.stringify(judgeScripted)}`);
    const teamItems = greedy.trajectories.flatMap((traj) => traj.actions.map((a) => {
      const task = heldOut.find((t) => t.id === traj.task.id)!;
      const final = a.agentId === 'verifier';
      const context = { problem: task.problem, agentId: a.agentId, role: a.role, input: actionInputText(a.messages), output: a.text, observation: a.observation, groundTruth: final ? task.answer : undefined, final };
      return { context, ...ruleScore(task, context) };
    }));
    judgeTeam = await judgeAgreement(judge, teamItems.filter((_, i) => i % 2 === 0));
    log(`judge vs labeller, base team's held-out actions: ${JSON.stringify(judgeTeam)}`);
    judge.model.dispose();
  }
  await sandbox.dispose();

  const summary: RunSummary = {
    seed: flags.seed, flags, backend: describeBackend(backend), parameters: parameterCount(config), config: configJson,
    vocabSize: bpe.vocab.size, merges: bpe.merges.length, flawRates: MATH_FLAW_RATES, scriptedAccuracy,
    agentTasks: flags['agent-tasks'], judgeTasks: flags['judge-tasks'], agentExamples: agentData.length, judgeExamples: judgeData.length,
    agentTrain, judgeTrain, trainSeconds, totalSeconds: (performance.now() - started) / 1000,
    greedy: greedy && strip(greedy), sampled: sampled && strip(sampled), judgeScripted, judgeTeam,
  };
  await writeCards(agentDir, judgeDir, summary);
  await writeFile(`${flags.out}/pretrain-report.json`, JSON.stringify(summary, null, 2) + '\n');
  for (const d of [agentDir, judgeDir]) log(`${d}/model.safetensors: ${((await stat(`${d}/model.safetensors`)).size / 2 ** 20).toFixed(2)} MiB`);
  log(`done in ${(summary.totalSeconds / 60).toFixed(1)} min`);
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
