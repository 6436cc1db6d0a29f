/**
 * Model cards (README.md) for the shipped tiny models, written from the measured run summary.
 *
 * For: scripts/pretrain.ts. Not for: anything measured elsewhere; every figure here comes from
 * the run that wrote the weights next to it.
 */
import { writeFile } from 'node:fs/promises';
import type { MathFlawRates } from './transcripts.ts';
import type { JudgeAgreement, TeamAccuracy } from './evaluate.ts';
import type { TrainReport } from './train.ts';

/** One reading check of stage 1: after `steps` steps, the share of check problems whose greedy Solver reads both numbers of the first operation. */
export interface Stage1Check {
  steps: number;
  readsNumbers: number;
}

export interface PretrainReport {
  seed: number;
  flags: Record<string, unknown>;
  backend: string;
  parameters: number;
  config: Record<string, unknown>;
  vocabSize: number;
  merges: number;
  flawRates: MathFlawRates;
  scriptedAccuracy: number;
  agentTasks: number;
  judgeTasks: number;
  agentExamples: number;
  judgeExamples: number;
  /** Stage 1 (math team alone, from scratch); null when it was taken from a folder (stage1From). */
  stage1: TrainReport | null;
  /** After stage 1 and each extension (see Stage1Check). */
  stage1Checks?: Stage1Check[];
  stage1From: string | null;
  /** The agent folder this run took with --agent (stages 1-2 done by an earlier run), or null. */
  agentFrom?: string | null;
  /** Seconds from the start of the run that trained the agent until it was written. */
  agentSeconds?: number;
  /** Stage 2 (both teams mixed). */
  agentTrain: TrainReport;
  judgeTrain: TrainReport;
  trainSeconds: number;
  totalSeconds: number;
  greedy: Omit<TeamAccuracy, 'trajectories'> | null;
  sampled: Omit<TeamAccuracy, 'trajectories'> | null;
  dataTasks: number;
  dataScriptedSuccess: number;
  dataGreedy: Omit<TeamAccuracy, 'trajectories'> | null;
  dataSampled: Omit<TeamAccuracy, 'trajectories'> | null;
  /** Sampling temperature of dataSampled: the data team's training temperature (DATA_TEAM_SETTINGS). */
  dataSampledTemperature: number;
  /** Judge vs labeller: mathScripted, mathTeam, dataScripted, dataTeam. */
  judge: Record<string, JudgeAgreement>;
}

const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
const min = (s: number) => `${(s / 60).toFixed(1)} min`;

function common(s: PretrainReport): string {
  const c = s.config;
  const threads = Number(s.flags.threads ?? 1);
  return `## Architecture and size
Llama (LlamaForCausalLM): ${c.num_hidden_layers} layers, hidden ${c.hidden_size}, MLP ${c.intermediate_size} (SwiGLU),
${c.num_attention_heads} attention heads / ${c.num_key_value_heads} KV heads (head dim ${c.head_dim}), RoPE theta ${c.rope_theta},
tied embeddings, ${c.max_position_embeddings} positions, float32. **${s.parameters.toLocaleString('en-US')} parameters.**

Tokenizer: byte-level BPE trained by the same script on the synthetic corpus: ${s.vocabSize} tokens (3 special,
256 bytes, ${s.merges} merges${Number(s.flags['extra-vocab']) > 0 ? `: the first ${s.merges - Number(s.flags['extra-vocab'])} learnt on the math team's text for stage 1, ${s.flags['extra-vocab']} more
learnt on the data team's text before stage 2, with the math tokens' ids and embeddings kept and each new token's
embedding started as the mean of the pair it merges` : ''}); digits are always single tokens (Digits pre-tokenizer), so any text round-trips.
Chat template: ChatML (\`<|im_start|>role\\n...<|im_end|>\`), eos \`<|im_end|>\`.

## How it was made
\`npm run pretrain -- --seed ${s.seed}\` (scripts/pretrain.ts), tfjs \`${s.backend}\` in Node${threads > 1
    ? `, ${threads} training threads (data-parallel: this thread and ${threads - 1} worker thread${threads > 2 ? 's' : ''} each compute the gradient of a share of every batch's rows, summed before one Adam step)`
    : ''}, seeded init and batch
order, Adam (beta2 0.95), linear warm-up then cosine decay to 10 %. Both models written after **${min(s.trainSeconds)}**
(data, tokenizer, training)${s.agentFrom
    ? `: the agent by a run of \`npm run pretrain -- --seed ${s.seed}\` after ${min(s.agentSeconds ?? 0)}, the judge then by \`--agent ${s.agentFrom}\` (same flags, the agent taken from that run's folder) in ${min(s.trainSeconds - (s.agentSeconds ?? 0))}; this second run, with all the measurements below, took **${min(s.totalSeconds)}**`
    : `; whole run with all measurements: **${min(s.totalSeconds)}**`}; wall times on a shared 2-core machine${s.stage1From
    ? `; this run took stage 1 from \`--init ${s.stage1From}\` (see Training), which a rebuild from nothing trains first (+36 min)` : ''}.
Flags: \`${JSON.stringify(s.flags)}\`.
`;
}

function teamTable(s: PretrainReport): string {
  if (!s.greedy || !s.sampled) return 'Not measured in this run (--skip-eval).\n';
  const row = (name: string, a: Omit<TeamAccuracy, 'trajectories'>) =>
    `| ${name} | ${a.correct}/${a.tasks} = **${pct(a.accuracy)}** | ${[1, 2, 3, 4, 5].map((l) => (a.byLevel[l] === undefined ? '-' : pct(a.byLevel[l]))).join(' | ')} | ${Object.entries(a.onFormat).map(([k, v]) => `${k} ${pct(v)}`).join(', ')} |`;
  return `| decoding | team accuracy | L1 | L2 | L3 | L4 | L5 | on-format outputs |
|---|---|---|---|---|---|---|---|
${row('greedy', s.greedy)}
${row('temperature 1.0', s.sampled)}
`;
}

function dataTable(s: PretrainReport): string {
  if (!s.dataGreedy || !s.dataSampled) return 'Not measured in this run (--skip-eval).\n';
  const metric = (a: Omit<TeamAccuracy, 'trajectories'>) => Object.entries(a.metrics ?? {}).map(([k, v]) => `${k} ${v.toFixed(3)}`).join(', ') || '-';
  const row = (name: string, a: Omit<TeamAccuracy, 'trajectories'>) =>
    `| ${name} | ${a.correct}/${a.tasks} = **${pct(a.accuracy)}** | ${metric(a)} | ${Object.entries(a.onFormat).map(([k, v]) => `${k} ${pct(v)}`).join(', ')} |`;
  return `| decoding | team success | mean quality metrics (tasks that reach a submission) | on-format turns |
|---|---|---|---|
${row('greedy', s.dataGreedy)}
${row(`temperature ${s.dataSampledTemperature.toFixed(1)} (the team's training temperature)`, s.dataSampled)}
`;
}

export function agentCard(s: PretrainReport): string {
  const t = s.agentTrain;
  const r = s.flawRates;
  return `---
license: apache-2.0
library_name: mappa-sandbox
tags: [llama, tiny, synthetic, multi-agent, mappa]
---
# mappa-sandbox tiny agent (base model of the math team and the data-analysis team)

The base model every agent of the MAPPA math chain (Problem Solver -> Code Executor -> Verifier) and of the
data-analysis team (Data Engineer -> Modeler -> Analyst) starts from; each agent gets its own LoRA adapter on
top of it during RL. It is deliberately imperfect, so
that training has room to show an effect. It is a toy for the sandbox, not a general language model.

${common(s)}
## Data
Synthetic multi-agent transcripts: ${s.agentTasks} generated math problems (generateMathTasks, seed
\`pretrain-${s.seed}\`, levels 1-5; no problem of the held-out set: checked by isMathHeldOut). A scripted team plays
each problem with prompts rendered from the MATH_CHAIN templates (src/core/loop/workflow.ts) exactly as the
rollout runner renders them, code run in the real Python sandbox. Realistic flaws at fixed rates: Solver misreads
an operation ${pct(r.opMisread)} / slips on one step's arithmetic ${pct(r.slip)}; Executor's code fails
${pct(r.malformedCode)} / prints the Solver's answer as a literal instead of recomputing it, ${pct(r.literalShort)} when the Solver's work
has one or two steps (a habit of skipping the check on simple-looking work, which training can remove: the tiny
Solver's own arithmetic is rarely right; stage 1 plays the same problems without it, see Training) and
${pct(r.literalCode)} otherwise; Verifier copies the
Solver's answer ${pct(r.verifierCopiesSolver)}. The scripted team itself is right on ${pct(s.scriptedAccuracy)}.
Data-analysis team: ${s.dataTasks} generated tables (85 % classification / regression, 15 % table questions;
never a held-out table) played by a scripted Data Engineer -> Modeler -> Analyst through the real rollout runner,
SQL on DuckDB-wasm over a per-trajectory workspace (scripts/pretrain/data-transcripts.ts); the Data Engineer's
prompt profiles each column (mean and missing count of a number, levels of a text column), so its SQL copies the
fill values it needs. Flaws: a misspelled column or target (repaired on the next turn after the error 60 % of the
time), a column left with missing cells, a forgotten test table, a Modeler that fits 'linear' to a 0/1 target
(60 % of classification tables: a habit training can remove; its predictions carry no probability, so the
Analyst's submission fails and the coach blames the Modeler), 'logistic' for a number, constant predictions, hard
labels instead of probabilities, a LIMIT that drops test ids, no \\boxed{}, a wrong aggregate or number. The
scripted data team succeeds on
${pct(s.dataScriptedSuccess)}.

One example per agent per task (${s.agentExamples} examples, all of an agent's turns in one example); loss
weight 1 on the assistant tokens and ${s.flags['prompt-weight']} on the prompt tokens (they are ~85 % of the text
and teach reading and copying the problem; with weight 0 a short CPU run did not even learn the roles).

Training in two stages (a model this small learns to read and copy numbers first on the short math
transcripts; trained on both teams from scratch for the same time, it never did: 4 % held-out math):
- stage 1, the math team alone, from scratch, on the problems played without the short-work habit (the Executor
  transcribing a short solution into code is the easiest copying this model sees: with the habit in stage 1, a
  rebuild never learnt to read the problem's numbers and its team solved 0 of 200), lr ${s.flags.lr}: ${s.stage1
    ? `${s.stage1.steps} steps, ${s.stage1.tokens.toLocaleString('en-US')} tokens, ${min(s.stage1.seconds)}; loss ${s.stage1.firstLoss.toFixed(3)} -> ${s.stage1.finalLoss.toFixed(3)}${s.stage1Checks?.length
      ? `; the greedy Solver read both numbers of the first operation on ${s.stage1Checks.map((c) => `${pct(c.readsNumbers)} of 40 check problems after ${c.steps} steps`).join(', ')} (stage 1 trains on in chunks of ${s.flags['stage1-extension-steps']} steps, at most ${s.flags['stage1-extensions']}, until it is 80 %)` : ''}`
    : `taken from \`${s.stage1From}\` (--init): a model made by this stage (${s.flags['agent-steps']} steps) in an earlier run of the script, the math-only model shipped before stage 2 existed (its stage took 36 min); a rebuild from nothing runs stage 1 first`};
- stage 2, both teams mixed (${s.flags['mix-math']} of the math problems and all ${s.dataTasks} tables), lr ${s.flags['mix-lr']}: ${t.steps} steps, ${t.tokens.toLocaleString('en-US')} tokens seen (${t.trainedTokens.toLocaleString('en-US')} of them trained targets),
  ${min(t.seconds)}; loss ${t.firstLoss.toFixed(3)} -> ${t.finalLoss.toFixed(3)} (smoothed, nats per target token).

## Measured: base team on the held-out math set
The three agents all use this model without adapters, run by src/core/loop/rollout.ts with the real
sandbox, on ${s.greedy?.tasks ?? 0} problems of mathHeldOut() (40 per level when all 200):

${teamTable(s)}
## Measured: base team on the held-out tables
Data Engineer -> Modeler -> Analyst, all on this model without adapters, DuckDB SQL tool, on the
${s.dataGreedy?.tasks ?? 0} held-out tabular tasks (dataHeldOut: classification, regression, table questions). Success =
ROC-AUC >= 0.7 / RMSE <= 0.6 IQR on the held-out split, or the right number for a table question.

${dataTable(s)}
## Use
\`\`\`
mappa generate --model models/agent --chat --temperature 0 \\
  --system 'You are the Problem Solver, agent 1 of 3 in a team: Problem Solver -> Code Executor -> Verifier. Solve the problem step by step, one operation per line, and end with "Answer: <number>". Use at most 96 tokens.' \\
  --prompt "Problem: Maya has 12 stickers. She gives 5 stickers to Tom. How many stickers does Maya have at the end?"
\`\`\`
The system prompt is the Solver's from MATH_CHAIN (src/core/loop/workflow.ts) as the rollout runner renders it;
without a role's system prompt the model has no role to play.
Loaded with \`loadModel(folderSource('models/agent'))\`, the same code path as any Hugging Face checkpoint.
`;
}

export function judgeCard(s: PretrainReport): string {
  const t = s.judgeTrain;
  const agree = (name: string, a: JudgeAgreement | undefined) => (a
    ? `| ${name} | ${a.actions} | ${pct(a.parsed)} | **${a.mae.toFixed(2)}** | **${pct(a.within1)}** | ${a.answerCorrectAccuracy === null ? '-' : pct(a.answerCorrectAccuracy)} | ${a.baselineMae.toFixed(2)} |`
    : `| ${name} | not measured | | | | | |`);
  return `---
license: apache-2.0
library_name: mappa-sandbox
tags: [llama, tiny, synthetic, judge, process-reward, mappa]
---
# mappa-sandbox tiny judge (coach model)

Scores one agent's work in a trajectory in the coach format of src/core/coach/coach-format.ts:
\`PROCESS_SCORE: <0-10>\` and, for the final agent (given the ground truth), \`ANSWER_CORRECT: <0|1>\`.
It reads \`coachPrompt(context)\` as a single user message, where the context is exactly what training builds
(src/core/loop/rewards.ts \`agentContext\`: all of the agent's turns, its tool outputs, and for the data team
the workspace facts: files, their owners, and the held-out metrics for the Analyst).

${common(s)}
## Data
(context, verdict) pairs from the same synthetic transcripts: ${s.judgeTasks} math problems and ${s.dataTasks} tables,
one per agent per trajectory, labelled by the rule-based labellers (math: src/core/domains/math/rule-coach.ts \`ruleScore\`;
data: src/core/domains/data/coach.ts \`dataRuleScore\`, which blames the agent that caused a failure and caps poor
metrics), which play the role of human-scored feedback. The scripted teams are mostly competent, so a score that
holds more than 40 % of the pairs (10) is subsampled to that share: ${s.judgeExamples} examples. Loss on the answer
only. Initialised from the agent model's weights (same tokenizer), then trained ${t.steps} steps,
${t.tokens.toLocaleString('en-US')} tokens, ${min(t.seconds)}; loss ${t.firstLoss.toFixed(3)} -> ${t.finalLoss.toFixed(3)}.

## Measured: agreement with the labeller on held-out work
Greedy judge answers vs the labels on work from held-out problems and tables; an unparsable answer counts as
score 5. Baseline MAE = always answering the labels' mean.

| work judged | n | parsable | MAE | within +-1 | ANSWER_CORRECT agreement | baseline MAE |
|---|---|---|---|---|---|---|
${agree('math: scripted team, held-out problems', s.judge.mathScripted)}
${agree('math: base agent team (greedy), held-out problems', s.judge.mathTeam)}
${agree('data: scripted team, held-out tables', s.judge.dataScripted)}
${agree('data: base agent team (greedy), held-out tables', s.judge.dataTeam)}

Known limits: the judge never sees the ground truth for non-final agents, so for the Solver and Executor it
must infer correctness from the transcript alone (the labeller does not have that limit); its scores are a
noisy, biased coach, which is what MAPPA's judge-bias discussion is about.
`;
}

export async function writeCards(agentDir: string, judgeDir: string, s: PretrainReport): Promise<void> {
  await writeFile(`${agentDir}/README.md`, agentCard(s));
  await writeFile(`${judgeDir}/README.md`, judgeCard(s));
}
