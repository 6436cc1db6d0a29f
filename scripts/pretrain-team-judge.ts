/**
 * `npx tsx scripts/pretrain-team-judge.ts --stages base,RUN/checkpoint/adapters,...`: a math/data judge
 * trained, as MAPPA's feedback model is, on rated actions of the real team. models/judge learnt from
 * scripted transcripts only (scripts/pretrain.ts); this script continues it on what the team itself does.
 *
 * Data: for each stage (`base` = models/agent with no adapter, or a folder of PEFT adapters that
 * `mappa train` wrote, e.g. runs/x/checkpoint/adapters), the math team plays --math-tasks training
 * problems at the rollouts' temperature (1.0) and the data team --data-tasks training tables (0.5), every
 * code block run for real. Each agent's work becomes the coach's context exactly as coaching builds it
 * (agentContext, with the data team's workspace facts), labelled by the rubric that plays the human
 * rater (math ruleScore, data dataRuleScore) and balanced by score (no score over 40 % of a team's items).
 * Held-out problems and tables are never played (the task generators leave them out).
 *
 * Model: warm-started from --init (default models/judge: same tokenizer and shape), trained on the
 * answer tokens (trainModel, --threads data-parallel), checkpoints at --checkpoints steps (judges of
 * several training lengths: the steps axis of the judge-quality curve). Measured by
 * `npm run -s bench -- judge --judge DIR` (within-agent ranking on the base team's held-out work).
 *
 * How the math judge is asked (the data team's items keep the generic view): --template generic|team (the
 * math team's own, MATH_COACH_TEMPLATE: its work and the truth last), --truth final|every (whose actions it
 * sees the ground truth with: MAPPA's final agent only, or every agent), --scratchpad 0|1 (it first copies
 * the numbers the rubric compares: the agent's, the truth's and the upstream one, domains/math/coach.ts).
 * The folder's generation_config.json gets room for the scratchpad (max_new_tokens 40).
 *
 * Flags: --seed, --agent, --init, --stages (comma list), --math-tasks, --data-tasks (per stage),
 *        --steps, --lr, --tokens-per-batch, --threads, --max-seconds, --checkpoints (steps and ranges,
 *        e.g. 500-3000:500), --checkpoint-dir, --out, --template, --truth, --scratchpad.
 * Example: npx tsx scripts/pretrain-team-judge.ts --stages base --math-tasks 8 --data-tasks 2 --steps 4 --out /tmp/tj   (a quick trial)
 */
import * as tf from '@tensorflow/tfjs-core';
import { readFile, stat } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { initBackend, describeBackend } from '../src/core/engine/backend.ts';
import { parseConfig, parameterCount, type ModelConfig } from '../src/core/engine/model/config.ts';
import { loadModel, type LoadedModel } from '../src/core/engine/model/load.ts';
import { folderSource } from '../src/core/engine/model/sources.ts';
import { importPeft } from '../src/core/engine/lora/peft.ts';
import type { LoraAdapter } from '../src/core/engine/lora/adapter.ts';
import { EngineAgents } from '../src/core/loop/agents.ts';
import { runRollouts } from '../src/core/loop/rollout.ts';
import { type Trajectory } from '../src/core/loop/trajectory.ts';
import { MATH_CHAIN, mathOutcome } from '../src/core/domains/math/index.ts';
import { DATA_CHAIN, DATA_TEAM_SETTINGS, dataRolloutTask } from '../src/core/domains/data/team.ts';
import { dataOutcome } from '../src/core/domains/data/outcome.ts';
import { generateMathTasks } from '../src/core/domains/math/tasks.ts';
import { generateTabularTasks } from '../src/core/domains/data/tabular.ts';
import { Rng } from '../src/core/stats/rng.ts';
import { createSqlTool } from '../src/core/tools/sql.ts';
import { FIT_PREDICT } from '../src/core/domains/data/fit.ts';
import { createSandbox } from '../src/core/tools/code-sandbox.ts';
import { disposeTools, type ToolRunners } from '../src/core/tools/runners.ts';
import { dataJudgeItems } from './pretrain/data-transcripts.ts';
import { balanceByScore, judgeExamples, type JudgeItem } from './pretrain/transcripts.ts';
import { readModelFolder, writeModelFolder } from './pretrain/folder.ts';
import { DEFAULTS as PRETRAIN_DEFAULTS, MAX_TOKENS, trainer } from './pretrain/run.ts';
import { checkpointList, failWith, parseScriptFlags } from './pretrain/flags.ts';
import { MATH_COACH_TEMPLATE, mathScratchpad } from '../src/core/domains/math/coach.ts';
import { DEFAULT_COACH_TEMPLATE } from '../src/core/coach/coach-format.ts';
import type { JudgeView } from './pretrain/transcripts.ts';

const DEFAULTS = {
  seed: 0, agent: 'models/agent', init: 'models/judge', stages: 'base', 'math-tasks': 200, 'data-tasks': 40,
  steps: 300, lr: 1e-3, 'tokens-per-batch': 2048, threads: 2, 'max-seconds': 1500,
  checkpoints: '100,200', 'checkpoint-dir': '/tmp/team-judge-ckpt', out: '/tmp/team-judge',
  template: 'generic', truth: 'final', scratchpad: 0,
};
type Flags = typeof DEFAULTS;

const log = (msg: string) => console.log(`[pretrain-team-judge ${new Date().toISOString().slice(11, 19)}] ${msg}`);

/** Scores -> counts, e.g. {"0": 310, "10": 402}. */
export function scoreHistogram(items: readonly { score: number }[]): Record<string, number> {
  const h: Record<string, number> = {};
  for (const it of items) h[it.score] = (h[it.score] ?? 0) + 1;
  return h;
}

/** The adapters of one stage: `base` = none; else DIR/<agent>/adapter_config.json for every trainable agent. */
async function stageAdapters(stage: string, agentIds: string[], config: ModelConfig): Promise<Map<string, LoraAdapter | null>> {
  const out = new Map<string, LoraAdapter | null>();
  if (stage === 'base') return out;
  for (const id of agentIds) {
    const dir = path.join(stage, id);
    out.set(id, existsSync(path.join(dir, 'adapter_config.json')) ? await importPeft(folderSource(dir), config, id) : null);
  }
  if (![...out.values()].some(Boolean)) throw new Error(`pretrain-team-judge: stage "${stage}" holds no adapter of ${agentIds.join(', ')} (expected DIR/<agent>/adapter_config.json)`);
  return out;
}

/** How the math judge is asked, from the flags (--template, --truth, --scratchpad). */
export function mathView(flags: Pick<Flags, 'template' | 'truth' | 'scratchpad'>): JudgeView {
  if (flags.template !== 'team' && flags.template !== 'generic') throw new Error(`--template: team (the math team's own) or generic, got "${flags.template}"`);
  if (flags.truth !== 'final' && flags.truth !== 'every') throw new Error(`--truth: final (MAPPA) or every, got "${flags.truth}"`);
  return {
    template: flags.template === 'team' ? MATH_COACH_TEMPLATE : DEFAULT_COACH_TEMPLATE, truth: flags.truth,
    ...(flags.scratchpad ? { scratchpad: mathScratchpad } : {}),
  };
}

/** One stage's rated actions: the math team and the data team on their own training tasks (seeded by stage). */
async function playStage(flags: Flags, agent: LoadedModel, stage: string, index: number, tools: ToolRunners, tok: Parameters<typeof judgeExamples>[1]): Promise<{ math: JudgeItem[]; data: JudgeItem[]; mathRight: number; dataRight: number }> {
  const ids = [...new Set([...MATH_CHAIN.agents, ...DATA_CHAIN.agents].map((a) => a.id))];
  const adapters = await stageAdapters(stage, ids, agent.model.config);
  const agents = new EngineAgents(agent, adapters, 40);
  // A run's adapters train one team: a stage plays the teams it holds adapters for (base plays both).
  const plays = (team: typeof MATH_CHAIN) => stage === 'base' || team.agents.some((a) => adapters.get(a.id));
  const seed = `team-judge-${flags.seed}-${index}`;
  const math = plays(MATH_CHAIN) ? generateMathTasks({ seed, count: flags['math-tasks'] }) : [];
  const mathRuns: Trajectory[] = await runRollouts(MATH_CHAIN, math, { agents, tools, samplesPerTask: 1, temperature: 1, seed: 1000 * flags.seed + index,
    outcome: mathOutcome });
  const tables = plays(DATA_CHAIN) ? generateTabularTasks({ seed, count: flags['data-tasks'] }).map(dataRolloutTask) : [];
  const dataRuns: Trajectory[] = await runRollouts(DATA_CHAIN, tables, { agents, tools, samplesPerTask: 1, temperature: DATA_TEAM_SETTINGS.temperature,
    seed: 1000 * flags.seed + index, outcome: dataOutcome, toolTimeoutMs: 5000 });
  for (const a of adapters.values()) a?.dispose();
  const share = (ts: Trajectory[]) => ts.filter((t) => t.correct).length / Math.max(1, ts.length);
  return { math: mathRuns.flatMap((t) => judgeExamples(t, tok, mathView(flags))), data: dataRuns.flatMap((t) => dataJudgeItems(t, tok)), mathRight: share(mathRuns), dataRight: share(dataRuns) };
}

async function main(): Promise<void> {
  const flags: Flags = parseScriptFlags('pretrain-team-judge', DEFAULTS, process.argv.slice(2));
  const started = performance.now();
  const backend = await initBackend({ force: 'wasm' });
  log(`backend ${describeBackend(backend)}; flags ${JSON.stringify(flags)}`);
  const init = await readModelFolder(flags.init, MAX_TOKENS);
  const judge = await loadModel(folderSource(flags.init), { tokenizer: 'required' });
  const tok = judge.tokenizer!;
  judge.model.dispose();
  const sandbox = createSandbox();
  const tools: ToolRunners = { python: sandbox, javascript: sandbox, sql: createSqlTool({ functions: [FIT_PREDICT] }) };
  const agent = await loadModel(folderSource(flags.agent));

  // 1. Rated actions of the real team at each stage.
  const math: JudgeItem[] = [];
  const data: JudgeItem[] = [];
  const stages: Record<string, unknown>[] = [];
  try {
    for (const [i, stage] of flags.stages.split(',').map((s) => s.trim()).filter(Boolean).entries()) {
      const t0 = performance.now();
      const s = await playStage(flags, agent, stage, i, tools, tok);
      math.push(...s.math);
      data.push(...s.data);
      const row = { stage, math: scoreHistogram(s.math), data: scoreHistogram(s.data), mathRight: s.mathRight, dataRight: s.dataRight, seconds: (performance.now() - t0) / 1000 };
      stages.push(row);
      log(`stage ${stage}: ${JSON.stringify(row)}`);
    }
  } finally {
    agent.model.dispose();
    await disposeTools(tools);
  }
  const rng = new Rng(`team-judge-balance/${flags.seed}`);
  const items = [...balanceByScore(math, rng), ...balanceByScore(data, rng)];
  const examples = items.map((j) => j.example).filter((e) => e.ids.length <= MAX_TOKENS);
  const playSeconds = (performance.now() - started) / 1000;
  log(`${math.length} math and ${data.length} data actions; balanced ${JSON.stringify(scoreHistogram(items))}; ${examples.length} examples, ` +
    `${examples.reduce((s, e) => s + e.ids.length, 0)} tokens; played in ${playSeconds.toFixed(0)} s`);

  // 2. Continue the judge on them, with checkpoints on the way.
  const config = parseConfig(init.configJson);
  const checkpointSteps = new Set(checkpointList(String(flags.checkpoints)));
  const snapshots: { step: number; weights: Map<string, tf.Tensor> }[] = [];
  const train = trainer({ ...PRETRAIN_DEFAULTS, threads: flags.threads });
  const report = await train(config, init.weights, examples, {
    steps: flags.steps, tokensPerBatch: flags['tokens-per-batch'], lr: flags.lr, seed: flags.seed + 1, warmup: 10, maxSeconds: flags['max-seconds'],
    log: ({ step, loss, seconds }) => {
      if (step % 10 === 0) log(`step ${step}: loss ${loss.toFixed(4)} (${seconds.toFixed(0)} s)`);
      if (checkpointSteps.has(step)) snapshots.push({ step, weights: new Map([...init.weights].map(([k, v]) => [k, tf.clone(v)])) });
    },
  });
  log(`trained ${report.steps} steps in ${report.seconds.toFixed(0)} s: loss ${report.firstLoss.toFixed(3)} -> ${report.finalLoss.toFixed(3)}`);
  const json = async (name: string) => JSON.parse(await readFile(`${flags.init}/${name}`, 'utf8'));
  // A scratchpad needs room before the score lines (three numbers, then the two lines of the final agent).
  const generation = { ...(await json('generation_config.json')), ...(flags.scratchpad ? { max_new_tokens: 40 } : {}) };
  const files = { 'config.json': await json('config.json'), 'tokenizer.json': init.tokJson, 'tokenizer_config.json': await json('tokenizer_config.json'), 'generation_config.json': generation };
  for (const s of snapshots) {
    const dir = `${flags['checkpoint-dir']}/step-${s.step}`;
    await writeModelFolder(dir, { ...files, 'README.md': `Team judge checkpoint at step ${s.step} of ${flags.steps} (seed ${flags.seed}), continued from ${flags.init} on the real team's rated actions; not shipped.\n` }, s.weights);
    tf.dispose([...s.weights.values()]);
    log(`checkpoint ${dir}`);
  }
  const totalSeconds = (performance.now() - started) / 1000;
  const summary = {
    flags, backend: describeBackend(backend), parameters: parameterCount(config), stages, math: scoreHistogram(math), data: scoreHistogram(data),
    balanced: scoreHistogram(items), examples: examples.length, playSeconds, train: report, checkpoints: snapshots.map((s) => `${flags['checkpoint-dir']}/step-${s.step}`), totalSeconds,
  };
  await writeModelFolder(flags.out, { ...files, 'README.md': card(summary), 'report.json': summary }, init.weights);
  log(`${flags.out}/model.safetensors: ${((await stat(`${flags.out}/model.safetensors`)).size / 1024).toFixed(0)} KiB; done in ${(totalSeconds / 60).toFixed(1)} min`);
}

function card(s: { flags: Flags; backend: string; parameters: number; stages: Record<string, unknown>[]; balanced: Record<string, number>; examples: number; train: { steps: number; seconds: number; firstLoss: number; finalLoss: number }; totalSeconds: number }): string {
  return `# Team judge (math and data), continued on the real team's rated actions

Continued from \`${s.flags.init}\` (${s.parameters.toLocaleString('en')} parameters, same tokenizer) by
\`npx tsx scripts/pretrain-team-judge.ts ${Object.entries(s.flags).map(([k, v]) => `--${k} ${v === '' ? "''" : v}`).join(' ')}\`
(${s.backend}, ${s.flags.threads} training threads).

- Stages played (the team's own actions on training tasks, rated by the rubric):
${s.stages.map((r) => `  - ${JSON.stringify(r)}`).join('\n')}
- Balanced by score: ${JSON.stringify(s.balanced)}; ${s.examples} examples.
- Trained ${s.train.steps} steps in ${s.train.seconds.toFixed(0)} s: loss ${s.train.firstLoss.toFixed(3)} -> ${s.train.finalLoss.toFixed(3)}.
- Wall time: ${(s.totalSeconds / 60).toFixed(1)} min in all.

Measured by \`npm run -s bench -- judge --judge <this folder>\` (within-agent ranking against the rubric on held-out work).
`;
}

// Run when invoked as a script (tests import mathView without running it).
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch(failWith('pretrain-team-judge'));
}
