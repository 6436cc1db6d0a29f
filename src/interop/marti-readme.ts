/**
 * The README.md of a MARTI export: what the folder holds, the steps on this machine and on the
 * cluster, what then runs there and what it costs (marti-cost.ts), the choices the export made for a
 * real run and why, what does not carry over from the sandbox, and what was checked here and what not.
 *
 * For: src/interop/marti.ts. Not for: the config itself (the README describes the plan it shares).
 *
 * Example: martiReadme(config, {source: 'runs/a'}, plan, {train: 2000, heldOut: 200})
 *          -> '# MAPPA sandbox experiment, for the reference trainer\n...'
 */
import type { TrainConfig } from '../core/loop/config.ts';
import { martiCost, type MartiCost } from './marti-cost.ts';
import { LAUNCHER_FILE } from './marti-launcher.ts';
import {
  CODE_SCHEMA_FILE, EVAL_SAMPLES, GENERATION_CONFIG_FILE, MARTI_CONFIG_NAME, type MartiExportOptions, type MartiPlan,
} from './marti-plan.ts';
import { MARTI_COMMIT, MARTI_PROCESSOR, MARTI_REPOSITORY, MARTI_SOURCES } from './marti-sources.ts';
import { WORKFLOW_FILE, WORKFLOW_LANGUAGES } from './marti-workflow.ts';

const FIXTURE = 'test/fixtures/marti/multiagent-coaching-ed66921.json';

/** Title, what was exported, the files. */
function intro(config: TrainConfig, opts: MartiExportOptions, plan: MartiPlan, counts: { train: number; heldOut: number }): string {
  const bench = (opts.bench ?? []).map((b) =>
    `| \`${b.name}.jsonl\` | ${b.records.length} problem(s), the same fields: an extra evaluation set (\`extra_eval_tasks\`) |`);
  return `# MAPPA sandbox experiment, for the reference trainer

Exported by \`mappa export --target marti\` from \`${opts.source}\`: the team (${config.workflow.agents.map((a) => a.role).join(' -> ')}),
reward mode **${plan.mode}**, seed ${config.seed}, ${config.iterations} iterations x ${config.promptsPerIteration} prompts x ${config.samplesPerPrompt} samples,
as a config for the MAPPA authors' trainer (github.com/${MARTI_REPOSITORY}, built on MARTI: Ray + vLLM +
DeepSpeed, data-centre GPUs). Checked against their commit **${MARTI_COMMIT}** (recorded in the
config as \`mappa_export.checked_commit\`); use that commit.

| file | what |
|---|---|
| \`${MARTI_CONFIG_NAME}.yaml\` | Hydra config in the schema of their \`marti/cli/configs/mathchat_with_coach.yaml\` |
| \`train.jsonl\` | ${counts.train} training problems, \`{"prompt", "answer", "metadata"}\` (the curriculum's pools) |
| \`heldout.jsonl\` | the ${counts.heldOut} held-out problems of the sandbox's evaluation (\`extra_eval_tasks: heldout\`) |
${bench.join('\n')}${bench.length ? '\n' : ''}\
| \`${WORKFLOW_FILE}\` | the sandbox's team in their workflow interface (\`workflow_func_path\`): prompts, turns, budgets, tools, rewards |
| \`${LAUNCHER_FILE}\` | their trainer, unmodified, with TensorBoard logs it can write (step 6) |
${opts.stops ? `| \`${GENERATION_CONFIG_FILE}\` | the models' stop settings: only the eos token their loss mask knows (step 1) |\n` : ''}\
| \`${CODE_SCHEMA_FILE}\` | the code tool's schema (\`tools_config...schema_path\`; the stock one is not in their repository) |
`;
}

/** Step 1, on the exporting machine: the base model and one `mappa merge` per trained adapter. */
function modelSteps(config: TrainConfig, opts: MartiExportOptions, plan: MartiPlan): string {
  const local = plan.basePretrain.startsWith('./');
  const lines = [local
    ? `mkdir -p "$EXPORT/models" && cp -r ${config.agentModel} "$EXPORT/models/base"`
    : `# the base model is the hub id ${plan.basePretrain}; vLLM and DeepSpeed download it`];
  for (const id of plan.merged) lines.push(`mappa merge --model ${config.agentModel} --adapter ${opts.source}/adapters/${id} --out "$EXPORT/models/${id}"`);
  if (opts.stops && (local || plan.merged.size)) {
    lines.push(`for m in "$EXPORT"/models/*/; do cp "$EXPORT/${GENERATION_CONFIG_FILE}" "$m"; done   # stop on ${opts.stops.eosToken} only`);
  }
  const who = plan.merged.size
    ? `${[...plan.merged].join(', ')} start${plan.merged.size === 1 ? 's' : ''} from the base with ${plan.merged.size === 1 ? 'its' : 'their'} ` +
      'trained adapter merged in; any other agent from the base'
    : 'no trained adapters were found, so every agent starts from the base model';
  const stops = opts.stops
    ? `Each model's \`${GENERATION_CONFIG_FILE}\` is replaced by this folder's, which stops on ${opts.stops.eosToken} (id ${opts.stops.eosTokenId}) only:
   vLLM stops on every eos id listed there, and their truncation mask keeps an action only when it ends in that one.`
    : `The base model's files were not here: check that its \`${GENERATION_CONFIG_FILE}\` lists no eos id but its tokenizer's
   (vLLM stops on every id listed there; their truncation mask keeps only replies that end in the tokenizer's).`;
  return `1. **Models** (here, with \`EXPORT\` set to this folder): ${who}. ${stops}
   \`\`\`sh
   ${lines.join('\n   ')}
   \`\`\``;
}

/** Steps 2-6, on the cluster: checkout, copy, the paths' one line, SandboxFusion, train. */
function clusterSteps(plan: MartiPlan): string {
  const coach = plan.mode === 'outcome' ? 'no coach is called in outcome mode' : "the coach's API key (their README: GOOGLE_API_KEY, or Vertex AI)";
  return `2. **Their trainer at the checked commit**, with their environment (their README, "Installation": uv,
   \`requirements_uv.txt\`, SandboxFusion) and ${coach}:
   \`\`\`sh
   git clone https://github.com/${MARTI_REPOSITORY} && cd multiagent-coaching && git checkout ${MARTI_COMMIT}
   \`\`\`
3. **Copy this folder in** (from the repository root; \`EXPORT\` = this folder, copied to the cluster):
   \`\`\`sh
   cp "$EXPORT/${MARTI_CONFIG_NAME}.yaml" marti/cli/configs/
   mkdir -p data/mappa models/mappa && cp "$EXPORT"/*.jsonl "$EXPORT"/*.py "$EXPORT/${CODE_SCHEMA_FILE}" data/mappa/
   cp -r "$EXPORT"/models/* models/mappa/ 2>/dev/null || true
   \`\`\`
4. **Set the paths** (one line): the config names only relative paths (\`./data/mappa\`, \`./models/mappa\`,
   \`./outputs\`, \`./checkpoints\`, \`./logs\`); this makes them absolute, so that Ray's workers find them
   wherever they start:
   \`\`\`sh
   sed -i -E "s#(: \\"?)\\./#\\1$PWD/#" marti/cli/configs/${MARTI_CONFIG_NAME}.yaml
   \`\`\`
5. **Code execution**: start SandboxFusion at \`http://127.0.0.1:8080/run_code\` (their
   \`scripts/run_train_mathchat.sh\` shows how: \`uvicorn sandbox.server.server:app --port 8080\` in ~/SandboxFusion).
6. **Train**, with TensorBoard logs in \`./logs/${plan.name}\` (the launcher runs their \`marti.cli.commands.train\` unmodified):
   \`\`\`sh
   ray start --head
   python data/mappa/${LAUNCHER_FILE} --config-name ${MARTI_CONFIG_NAME}
   \`\`\`
   Their own entry, \`python -m marti.cli.commands.train --config-name ${MARTI_CONFIG_NAME}\`, runs the same training
   with no logger: the metrics are then only on the console and in \`./outputs/${plan.name}/eval_results/*.json\`
   (every evaluation, and each step's rollout accuracy). Add \`use_wandb=<key>\` to either for W&B instead; do not
   add \`use_tensorboard\` (their entry then stops at build; the launcher refuses it).`;
}

/** What the trainer then does, in the order it does it. */
function whatRuns(config: TrainConfig, plan: MartiPlan, cost: MartiCost): string {
  const b = plan.batches;
  const reward = plan.mode === 'outcome'
    ? 'each action rewarded 1 when the team\'s final answer is right, else 0 (no coach)'
    : plan.mode === 'process'
      ? 'each agent\'s work scored 0-10 by the hosted coach (one call per agent), reward score / 10'
      : `each action rewarded ${config.rewards.processWeight} x coach score / 10 + ${+(1 - config.rewards.processWeight).toFixed(6)} x (team right)`;
  return `## What then runs on the cluster

- Hydra composes their \`default.yaml\` with this file; \`train.py\` copies \`default_agent.*\` to the top level.
- **${cost.gpus} GPUs in total**: per agent (${config.workflow.agents.length}), on ${b.gpus} GPU(s), the DeepSpeed actor (ZeRO-3, bf16, all weights
  trained), its frozen reference (for the KL) and ${b.gpus} vLLM engine(s) (bf16), colocated and sleeping in turn.
- First an evaluation of the untrained team on ${cost.evalProblems} problems: ${plan.evalTasks.join(', ')}, and the first 3 % of train.jsonl
  (their trainer always evaluates those too), ${EVAL_SAMPLES} samples each at temperature ${config.evalTemperature}, graded by the answer alone (no coach).
- ${b.steps} steps (${b.episodes} episode(s) of ${b.maxSamples} problems drawn from train.jsonl, ${config.promptsPerIteration} per step): each problem
  x ${config.samplesPerPrompt} through \`${WORKFLOW_FILE}\` (${config.workflow.agents.map((a) => a.role).join(' -> ')}, code on SandboxFusion),
  ${reward}; \`${MARTI_PROCESSOR}\` splits the actions per agent; one REINFORCE++ update
  (batch ${b.trainBatch}, micro-batch ${b.microTrain} per GPU); then every weight is sent to the agent's vLLM engines.
- An evaluation every ${config.evalEvery} steps (the last step's twice: their loop's and their final one), a checkpoint every
  ${config.checkpointEvery} (\`./checkpoints/${plan.name}\`), the final models in \`./outputs/${plan.name}\`.
`;
}

/** GPUs, coach calls and hours, with the arithmetic. */
function costSection(config: TrainConfig, plan: MartiPlan, cost: MartiCost): string {
  const A = cost.coachCalls;
  const calls = plan.mode === 'outcome'
    ? '**none**: outcome mode calls no coach, in training or evaluation'
    : `**${A.training.toLocaleString('en-US')} for training** (${plan.batches.steps} steps x ${cost.trajectoriesPerStep} trajectories`
      + ` x ${config.workflow.agents.length} agents: one call per agent's whole work, as the sandbox) and **${A.evaluation} for evaluation**`
      + ` (${cost.evaluations} evaluations x ${cost.evalTrajectories.toLocaleString('en-US')} trajectories, graded by the answer: \`${WORKFLOW_FILE}\``
      + ' calls no coach when their trainer evaluates; their stock coach workflow would coach every action of these too)';
  return `## Cost

- **GPUs**: ${cost.gpus} in total (${config.workflow.agents.length} agents x ${plan.batches.gpus}), all held for the whole run.
- **Coach calls**: ${calls}.
- **Hours**, estimated (no GPU ran here); one iteration is one step:
${cost.lines.map((l) => `  ${l}`).join('\n')}
`;
}

/** The settings chosen for a real run and the code that forces each. */
function choices(config: TrainConfig, opts: MartiExportOptions, plan: MartiPlan): string {
  const stops = opts.stops;
  const listed = stops ? [stops.generationConfig.eos_token_id].flat().filter((x) => x !== undefined) : [];
  return `## Choices made for a real run, and why

- **No logger in the config; TensorBoard through \`${LAUNCHER_FILE}\`.** Their own TensorBoard path stops at build:
  with \`use_tensorboard\` set and no W&B key, \`_init_logging\` (\`marti/controllers/base_controller.py\`) raises
  \`UnboundLocalError\` before the first evaluation, because an \`import os\` inside its \`use_wandb\` branch makes \`os\` local
  to the whole function. (Past that, at step 1, \`add_scalar\` would refuse \`_rollout_metadata\`, a dictionary.) So the
  config sets no logger, and their entry runs with the metrics on the console and in \`eval_results/*.json\`. The launcher,
  our own code, wraps their \`save_logs\` and writes every number of the dictionary it receives to TensorBoard with
  torch's \`SummaryWriter\` (dictionaries and lists flattened: \`train/_rollout_metadata/accuracy\`; None and text left
  out), then runs their code unmodified. W&B (\`use_wandb=<key>\`) takes nested values as they are.
- **Workflow: ours, \`${WORKFLOW_FILE}\`**, in their workflow interface: each agent gets the sandbox's system and user
  prompts, turn limit, token budget and tools (TEAM at its top), and each action the sandbox's reward, in every mode
  (\`workflow_args.reward_process_weight\`: 1 process, 0 outcome, ours in between). The coach is called once per agent
  on its whole work, as the sandbox does, and not when their trainer evaluates. Their \`${MARTI_PROCESSOR.split('/').pop()}\`
  divides rewards by 10, so the workflow writes ours x 10. Their stock workflows hard-code other prompts.
- **Stop tokens.** Their truncation mask keeps an action only when it ends in the tokenizer's eos id (one id), and
  vLLM stops on every eos id of \`${GENERATION_CONFIG_FILE}\`. ${stops
    ? `The base model's lists ${JSON.stringify(listed)}; this folder's lists ${stops.eosTokenId} (${stops.eosToken}) only, so no reply
  ends on an id the mask drops.`
    : 'The base model\'s files were not here (step 1 says what to check).'} The workflow sets each agent's \`min_tokens\` to 1: their packing
  asserts that every trained output is longer than one token (\`multi_agent_world_async.py\`, \`assert output_len > 1\`), and a
  reply of only the stop token has one (their engines' default, 16, would forbid the sandbox's short replies).
- **bf16 and FlashAttention on** (ours trains in float32): every vLLM engine starts in bfloat16 and the
  weight sync after each update asserts that actor and engine dtypes match; \`packing_samples\` forces
  FlashAttention, which does not take float32. The float32 base and merged models are cast to
  bfloat16 as they load, on both sides.
- **Full fine-tuning, \`lora_rank: 0\`** (ours: LoRA rank ${config.lora.rank}): their sync sends every parameter by name with
  no LoRA merge, and vLLM cannot load PEFT's \`lora_A\` / \`lora_B\` weights. So the trained adapters are
  merged into the starting weights (\`mappa merge\`, step 1) and MARTI trains all weights from there.
- **Learning rate 1e-6**, the paper's for full fine-tuning (ours, ${config.lr}, is for LoRA adapters). For a
  small model you may want more: \`default_agent.actor_learning_rate=...\` on the command line.
- **Context**: \`prompt_max_len\` ${plan.promptMaxLen} + \`generate_max_len\` ${plan.generateMaxLen} ${plan.contextLength
    ? `= the base model's ${plan.contextLength} positions`
    : '(the base model\'s context length was not known here; check it)'}; vLLM refuses a longer one.
${batchChoice(plan)}
- **Evaluation**: \`n_eval_samples_per_prompt: ${EVAL_SAMPLES}\` (the sandbox plays each problem twice too), \`eval_workers: 1\` (their
  default plays every problem on every engine, doubling the trajectories).
`;
}

/** Why the batch sizes and filter_agents_data are what they are (martiBatches worked them out). */
function batchChoice(plan: MartiPlan): string {
  const b = plan.batches;
  const filter = b.filter
    ? `\`filter_agents_data\` is on, as ${b.gpus} GPUs per agent need (unequal sample counts between an agent's GPUs hang ZeRO-3),
  and keeps every sample: each agent takes one action per trajectory, so each GPU holds ${b.trainBatch} samples, whole
  micro-batches of ${b.microRollout} and whole train batches of ${b.trainBatch} (their filter compares \`train_batch_size\` with one GPU's count).`
    : `\`filter_agents_data\` is off. Their filter (\`multi_agent_controller.py\` \`generate_shared_samples\`) keeps, per agent, the
  fewest samples any GPU has, rounded down to whole micro-batches and then to whole train batches, \`train_batch_size\`
  compared with one GPU's count. It exists to give an agent's GPUs equal counts; with 1 GPU per agent there is nothing to
  equalise, and on it would drop samples: the Executor takes 1 or 2 actions per trajectory, so its count is rarely a
  multiple of the train batch (and 12 x 2 trajectories over 2 GPUs against a train batch of 24 kept none at all).
  \`mappa export --gpus-per-agent N\` refuses any layout where the filter would drop a sample, naming the setting.`;
  const micro = b.microTrain === 1
    ? `\n  Micro-batches of 1: their PPO loop reads each agent's samples in micro-batches with \`drop_last\`, and the Executor's count
  varies, so any larger size would drop up to size - 1 of its samples a step. DeepSpeed accumulates ${b.trainBatch} of them per
  optimizer step; where a count is not a multiple of ${b.trainBatch}, the rest is accumulated into the next step (DeepSpeed, not run here).`
    : '';
  const split = `\`train_batch_size\` ${b.trainBatch} splits over ${b.gpus} actor GPU(s) in micro-batches of ${b.microTrain} (DeepSpeed checks it).`;
  return `- **Batches**: ${split}${micro}
  ${filter}`;
}

/** Where the run differs from the sandbox's. */
function gaps(config: TrainConfig, plan: MartiPlan): string {
  const unrun = [...new Set(config.workflow.agents.flatMap((a) => a.tools.filter((t) => !WORKFLOW_LANGUAGES.includes(t)).map((t) => `${a.id}: ${t}`)))];
  return `## What does not carry over (check before comparing numbers)

- **Code execution.** Blocks run on SandboxFusion, not the browser's Pyodide: another Python and other packages; each
  block in a fresh process (no variables or files kept between blocks, turns or agents: the sandbox's shared
  workspace does not carry over); a failed run reads SandboxFusion's status where the sandbox gives its own message;
  its time limit is \`tools_config...timeout\` (at least 30 s; ours ${config.toolTimeoutMs} ms). Only ${WORKFLOW_LANGUAGES.join(', ')} blocks run:
  ${unrun.length
    ? `**this team's ${unrun.join(', ')} blocks stay text** (the sandbox runs JavaScript on QuickJS and SQL on DuckDB)`
    : 'javascript (QuickJS) and sql (DuckDB) blocks would stay text; this team uses neither'}.
- **Coach.** ${plan.mode === 'outcome'
    ? 'None in outcome mode.'
    : `MARTI's coach is a hosted model (\`coach_model\`); ` +
      `the sandbox's was ${config.coach.kind === 'rule' ? 'the rule-based verifier' : `a local judge (${config.coach.model})`}` +
      `${config.coach.miscalibration ? ', deliberately miscalibrated (no counterpart)' : ''}.`}
- **Grading.** None: the team's answer is found and graded as the sandbox does it (the last \`\\boxed{}\`, else "Answer:" /
  "Result:"; the sandbox's normalisation and exact comparison, ported into \`${WORKFLOW_FILE}\`). Their grader is not used: it
  needs \`func_timeout\`, \`latex2sympy2\` and \`word2number\`, and their requirements list only the last two.
- **Empty replies.** \`min_tokens\` 1 (their packing's assert) forbids a reply that is only the stop token, which the sandbox allows.
- **Evaluation.** Both samples at \`eval_temperature\` ${config.evalTemperature} (the sandbox: one greedy, one at that temperature), one
  accuracy per set (\`eval/acc_heldout\`); their trainer also evaluates the first 3 % of train.jsonl (\`eval/reward\`).
- **Curriculum.** None there: \`train.jsonl\` holds the pools and \`random_sample_train\` draws from them.
- **Reward shaping** (${config.rewards.shaping ? '**on in this run: dropped**' : 'off in this run'}): per-turn rewards on a turn's last token have no
  counterpart (one reward per action).
- **Generation limit.** Each agent keeps its budget; \`generate_max_len\` (${plan.generateMaxLen}) caps them all.
- **Precision, optimizer, hardware**: bf16 and full fine-tuning at 1e-6 instead of float32 LoRA at ${config.lr}.
`;
}

/** What was run through their code (scripts/marti-dry-run.sh), what the tests checked, and what nobody ran. */
function checks(): string {
  return `## What was checked here, and what was not

**Run through their code** (\`scripts/marti-dry-run.sh <their checkout>\` in the sandbox's repository; its log for this
export, in all three reward modes, is \`bench/results/marti-dry-run.md\` there). Their checkout at ${MARTI_COMMIT}, unmodified,
with this folder copied in by steps 1, 3 and 4, Hydra 1.3.2 and OmegaConf 2.3.0 built from source, torch 1.13 on the CPU:
\`python data/mappa/${LAUNCHER_FILE} --config-name ${MARTI_CONFIG_NAME} default_agent.max_samples=24\` ran their \`train.py\`
(Hydra composition, \`_rationalize_config\`, \`_validate_config\`), their controller's build (datasets, logging, the three
agents, the world, their tool manager with the code tool), the step-0 evaluation (their \`evaluate_samples\` over
\`heldout\` and the first 3 % of \`train.jsonl\`, ${EVAL_SAMPLES} samples each), and rollout steps 1 and 2: their workflow wrapper
calling \`${WORKFLOW_FILE}\`, their coach's prompt and score parsing, their processor, packing (\`prepare_samples\` and its
\`output_len > 1\` assert), their sample filter, their experience maker (KL, rewards, REINFORCE++ returns and global
normalisation), their replay buffer and PPO loop (micro-batches, \`drop_last\`), and \`save_logs\` with the launcher writing
TensorBoard event files through torch's \`SummaryWriter\`. Every sample each agent generated reached its PPO loop at both steps.

**Stood in for** (no GPU, cluster or network there): vLLM generation (scripted replies, right and wrong, with and without
code), the policy and reference forward passes and the optimizer step (no weights change), Ray placement (one process),
DeepSpeed, the hosted coach's HTTP call (scripted scores), SandboxFusion (a local server in its API running python3), and
HF transformers' tokenizer (the model's own chat template, not its token ids) and datasets' JSON loader.

**Checked by the tests** (\`test/unit/loop/export-marti.test.ts\`, \`test/unit/interop/\`) against \`${FIXTURE}\`, written from
their files: every key is one of their config keys with its type; the batch sizes their filter keeps; \`${WORKFLOW_FILE}\` renders
every prompt as the sandbox does and rewards as the sandbox does, and grades answers as the sandbox's \`answersEqual\`;
\`${LAUNCHER_FILE}\` flattens dictionaries and lists; the stop ids of \`${GENERATION_CONFIG_FILE}\` are the ones their mask keeps.

**Not run anywhere here**: vLLM, DeepSpeed and FlashAttention on GPUs, the weight sync, real gradients, Ray across
processes and machines, more than one GPU per agent, memory on your GPUs, SandboxFusion itself, the coach API, the hour
estimate, and whether results match the sandbox's.

Their files read, at that commit:

${MARTI_SOURCES.map((s) => `- ${s}`).join('\n')}
`;
}

/** The whole README. */
export function martiReadme(config: TrainConfig, opts: MartiExportOptions, plan: MartiPlan, counts: { train: number; heldOut: number }): string {
  const cost = martiCost(config, plan, { ...counts, bench: (opts.bench ?? []).map((b) => b.records.length) }, opts.measure);
  return [
    intro(config, opts, plan, counts),
    `## Run it, step by step\n\n${modelSteps(config, opts, plan)}\n${clusterSteps(plan)}\n`,
    whatRuns(config, plan, cost),
    costSection(config, plan, cost),
    choices(config, opts, plan),
    gaps(config, plan),
    checks(),
  ].join('\n');
}
