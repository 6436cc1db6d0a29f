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

export interface RunSummary {
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
  agentTrain: TrainReport;
  judgeTrain: TrainReport;
  trainSeconds: number;
  totalSeconds: number;
  greedy: Omit<TeamAccuracy, 'trajectories'> | null;
  sampled: Omit<TeamAccuracy, 'trajectories'> | null;
  judgeScripted: JudgeAgreement | null;
  judgeTeam: JudgeAgreement | null;
}

const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
const min = (s: number) => `${(s / 60).toFixed(1)} min`;

function common(s: RunSummary): string {
  const c = s.config;
  return `## Architecture and size
Llama (LlamaForCausalLM): ${c.num_hidden_layers} layers, hidden ${c.hidden_size}, MLP ${c.intermediate_size} (SwiGLU),
${c.num_attention_heads} attention heads / ${c.num_key_value_heads} KV heads (head dim ${c.head_dim}), RoPE theta ${c.rope_theta},
tied embeddings, ${c.max_position_embeddings} positions, float32. **${s.parameters.toLocaleString('en-US')} parameters.**

Tokenizer: byte-level BPE trained by the same script on the synthetic corpus: ${s.vocabSize} tokens (3 special,
256 bytes, ${s.merges} merges); digits are always single tokens (Digits pre-tokenizer), so any text round-trips.
Chat template: ChatML (\`<|im_start|>role\\n...<|im_end|>\`), eos \`<|im_end|>\`.

## How it was made
\`npm run pretrain -- --seed ${s.seed}\` (scripts/pretrain.ts), tfjs \`${s.backend}\` in Node, seeded init and batch
order, Adam (beta2 0.95), linear warm-up then cosine decay to 10 %. Whole run (data, tokenizer, both models,
all measurements): **${min(s.totalSeconds)}** wall time on a shared 2-core machine (training alone ${min(s.trainSeconds)}).
Flags: \`${JSON.stringify(s.flags)}\`.
`;
}

function teamTable(s: RunSummary): string {
  if (!s.greedy || !s.sampled) return 'Not measured in this run (--skip-eval).\n';
  const row = (name: string, a: Omit<TeamAccuracy, 'trajectories'>) =>
    `| ${name} | ${a.correct}/${a.tasks} = **${pct(a.accuracy)}** | ${[1, 2, 3, 4, 5].map((l) => (a.byLevel[l] === undefined ? '-' : pct(a.byLevel[l]))).join(' | ')} | ${Object.entries(a.onFormat).map(([k, v]) => `${k} ${pct(v)}`).join(', ')} |`;
  return `| decoding | team accuracy | L1 | L2 | L3 | L4 | L5 | on-format outputs |
|---|---|---|---|---|---|---|---|
${row('greedy', s.greedy)}
${row('temperature 1.0', s.sampled)}
`;
}

export function agentCard(s: RunSummary): string {
  const t = s.agentTrain;
  const r = s.flawRates;
  return `---
license: apache-2.0
library_name: mappa-sandbox
tags: [llama, tiny, synthetic, multi-agent, mappa]
---
# mappa-sandbox tiny agent (base model of the math team)

The base model every agent of the MAPPA math chain (Problem Solver -> Code Executor -> Verifier) starts
from; each agent gets its own LoRA adapter on top of it during RL. It is deliberately imperfect, so
that training has room to show an effect. It is a toy for the sandbox, not a general language model.

${common(s)}
## Data
Synthetic multi-agent transcripts: ${s.agentTasks} generated math problems (generateMathTasks, seed
\`pretrain-${s.seed}\`, levels 1-5; no problem of the held-out set: checked by isMathHeldOut). A scripted team plays
each problem with prompts rendered from the MATH_CHAIN templates (src/core/mappa/workflow.ts) exactly as the
rollout runner renders them, code run in the real Python sandbox. Realistic flaws at fixed rates: Solver misreads
an operation ${pct(r.opMisread)} / slips on one step's arithmetic ${pct(r.slip)}; Executor's code fails
${pct(r.malformedCode)} / prints the Solver's answer as a literal ${pct(r.literalCode)}; Verifier copies the
Solver's answer ${pct(r.verifierCopiesSolver)}. The scripted team itself is right on ${pct(s.scriptedAccuracy)}.
One example per agent per problem (${s.agentExamples} examples, both Executor turns in one example); loss
weight 1 on the assistant tokens and ${s.flags['prompt-weight']} on the prompt tokens (they are ~85 % of the text
and teach reading and copying the problem; with weight 0 a short CPU run did not even learn the roles).

Training: ${t.steps} steps, ${t.tokens.toLocaleString('en-US')} tokens seen (${t.trainedTokens.toLocaleString('en-US')} of them trained targets),
${min(t.seconds)}; loss ${t.firstLoss.toFixed(3)} -> ${t.finalLoss.toFixed(3)} (smoothed, nats per target token).

## Measured: base team on the held-out math set
The three agents all use this model without adapters, run by src/core/mappa/rollout.ts with the real
sandbox, on ${s.greedy?.tasks ?? 0} problems of mathHeldOut() (40 per level when all 200):

${teamTable(s)}
## Use
\`\`\`
mappa generate --model models/agent --chat "Problem: Maya has 12 stickers. She gives 5 stickers to Tom. How many stickers does Maya have at the end?"
\`\`\`
Loaded with \`loadModel(folderSource('models/agent'))\`, the same code path as any Hugging Face checkpoint.
`;
}

export function judgeCard(s: RunSummary): string {
  const t = s.judgeTrain;
  const agree = (name: string, a: JudgeAgreement | null) => (a
    ? `| ${name} | ${a.actions} | ${pct(a.parsed)} | **${a.mae.toFixed(2)}** | **${pct(a.within1)}** | ${pct(a.answerCorrectAccuracy)} | ${a.baselineMae.toFixed(2)} |`
    : `| ${name} | not measured | | | | | |`);
  return `---
license: apache-2.0
library_name: mappa-sandbox
tags: [llama, tiny, synthetic, judge, process-reward, mappa]
---
# mappa-sandbox tiny judge (coach model)

Scores one action of one agent in the coach format of src/core/mappa/coach-format.ts:
\`PROCESS_SCORE: <0-10>\` and, for the final agent (given the ground truth), \`ANSWER_CORRECT: <0|1>\`.
It reads \`coachPrompt(context)\` as a single user message (input = the agent's messages joined by blank lines,
as src/core/mappa/coach-format.ts \`actionInputText\` builds it).

${common(s)}
## Data
(context, action) pairs from the same synthetic transcripts (${s.judgeTasks} training problems, every turn of
every agent: ${s.judgeExamples} examples), labelled by the rule-based labeller src/core/mappa/rule-coach.ts
(\`ruleScore\`, documented rubric), which plays the role of human-scored feedback. Loss on the answer only.
Initialised from the agent model's weights (same tokenizer), then trained ${t.steps} steps,
${t.tokens.toLocaleString('en-US')} tokens, ${min(t.seconds)}; loss ${t.firstLoss.toFixed(3)} -> ${t.finalLoss.toFixed(3)}.

## Measured: agreement with the labeller on held-out actions
Greedy judge answers vs \`ruleScore\` labels on actions from held-out problems (mathHeldOut()); an unparsable
answer counts as score 5. Baseline MAE = always answering the labels' mean.

| actions | n | parsable | MAE | within +-1 | ANSWER_CORRECT agreement | baseline MAE |
|---|---|---|---|---|---|---|
${agree('scripted team on held-out problems', s.judgeScripted)}
${agree('base agent team (greedy) on held-out problems', s.judgeTeam)}

Known limits: the judge never sees the ground truth for non-final agents, so for the Solver and Executor it
must infer correctness from the transcript alone (the labeller does not have that limit); its scores are a
noisy, biased coach, which is what MAPPA's judge-bias discussion is about.
`;
}

export async function writeCards(agentDir: string, judgeDir: string, s: RunSummary): Promise<void> {
  await writeFile(`${agentDir}/README.md`, agentCard(s));
  await writeFile(`${judgeDir}/README.md`, judgeCard(s));
}
