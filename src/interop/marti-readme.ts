/**
 * The README.md of a MARTI export: what the folder holds, the steps on this machine and on the
 * cluster, what then runs there, the choices the export made for a real run and why, what does
 * not carry over from the sandbox, and what was checked here and what was not.
 *
 * For: src/interop/marti.ts. Not for: the config itself (the README describes the plan it shares).
 *
 * Example: martiReadme(config, {source: 'runs/a'}, plan, {train: 2000, heldOut: 200})
 *          -> '# MAPPA sandbox experiment, for the reference trainer\n...'
 */
import type { TrainConfig } from '../core/loop/config.ts';
import { ACTOR_GPUS, CODE_SCHEMA_FILE, MARTI_CONFIG_NAME, type MartiExportOptions, type MartiPlan } from './marti-plan.ts';
import { MARTI_COMMIT, MARTI_REPOSITORY, MARTI_SOURCES, MARTI_WORKFLOWS } from './marti-sources.ts';

const FIXTURE = 'test/fixtures/marti/multiagent-coaching-ed66921.json';

/** Title, what was exported, the files. */
function intro(config: TrainConfig, opts: MartiExportOptions, plan: MartiPlan, counts: { train: number; heldOut: number }): string {
  const bench = (opts.bench ?? []).map((b) => `| \`${b.name}.jsonl\` | ${b.records.length} problem(s), the same fields: an extra evaluation set (\`extra_eval_tasks\`) |`);
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
${bench.join('\n')}${bench.length ? '\n' : ''}| \`${CODE_SCHEMA_FILE}\` | the code tool's schema (\`tools_config...schema_path\`; the stock one is not in their repository) |
`;
}

/** Step 1, on the exporting machine: the base model and one `mappa merge` per trained adapter. */
function modelSteps(config: TrainConfig, opts: MartiExportOptions, plan: MartiPlan): string {
  const local = plan.basePretrain.startsWith('./');
  const lines = [local ? `mkdir -p "$EXPORT/models" && cp -r ${config.agentModel} "$EXPORT/models/base"` : `# the base model is the hub id ${plan.basePretrain}; vLLM and DeepSpeed download it`];
  for (const id of plan.merged) lines.push(`mappa merge --model ${config.agentModel} --adapter ${opts.source}/adapters/${id} --out "$EXPORT/models/${id}"`);
  const who = plan.merged.size
    ? `${[...plan.merged].join(', ')} start${plan.merged.size === 1 ? 's' : ''} from the base with ${plan.merged.size === 1 ? 'its' : 'their'} trained adapter merged in; any other agent from the base`
    : 'no trained adapters were found, so every agent starts from the base model';
  return `1. **Models** (here, with \`EXPORT\` set to this folder): ${who}.
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
   mkdir -p data/mappa models/mappa && cp "$EXPORT"/*.jsonl "$EXPORT/${CODE_SCHEMA_FILE}" data/mappa/
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
6. **Train**:
   \`\`\`sh
   ray start --head
   python -m marti.cli.commands.train --config-name ${MARTI_CONFIG_NAME}
   \`\`\``;
}

/** What the trainer then does, in the order it does it. */
function whatRuns(config: TrainConfig, plan: MartiPlan): string {
  const b = plan.batches;
  const reward = plan.mode === 'outcome'
    ? 'each action graded 1 or 0 against the ground truth (no coach)'
    : 'each action scored 0-10 by the hosted coach, divided by 10';
  return `## What then runs on the cluster

- Hydra composes their \`default.yaml\` with this file; \`train.py\` copies \`default_agent.*\` to the top level.
- Per agent, on ${ACTOR_GPUS} GPUs: the DeepSpeed actor (ZeRO-3, bf16, all weights trained), its frozen reference
  (for the KL) and 2 vLLM engines (bf16), colocated and sleeping in turn.
- First an evaluation of the untrained team on ${plan.evalTasks.join(', ')} (2 samples per prompt, temperature ${config.evalTemperature}).
- ${b.steps} steps (${b.episodes} episode(s) of ${b.maxSamples} problems drawn from train.jsonl, ${config.promptsPerIteration} per step): each problem
  x ${config.samplesPerPrompt} through \`${MARTI_WORKFLOWS[plan.mode].workflow}\` (Solver -> Code Executor via SandboxFusion -> Verifier),
  ${reward}; \`${MARTI_WORKFLOWS[plan.mode].processor}\` splits the trajectories per agent; one REINFORCE++ update
  (batch ${b.trainBatch}, micro-batch ${b.microTrain} per GPU); then every weight is sent to the agent's vLLM engines.
- An evaluation every ${config.evalEvery} steps, a checkpoint every ${config.checkpointEvery} (\`./checkpoints/${plan.name}\`), the final
  models in \`./outputs/${plan.name}\`; logs in \`./logs/${plan.name}\` (TensorBoard).
`;
}

/** The settings chosen for a real run and the code that forces each. */
function choices(config: TrainConfig, plan: MartiPlan): string {
  return `## Choices made for a real run, and why

- **bf16 and FlashAttention on** (ours trains in float32): every vLLM engine starts in bfloat16 and the
  weight sync after each update asserts that actor and engine dtypes match; \`packing_samples\` forces
  FlashAttention, which does not take float32. The float32 base and merged models are cast to
  bfloat16 as they load, on both sides.
- **Full fine-tuning, \`lora_rank: 0\`** (ours: LoRA rank ${config.lora.rank}): their sync sends every parameter by name with
  no LoRA merge, and vLLM cannot load PEFT's \`lora_A\` / \`lora_B\` weights. So the trained adapters are
  merged into the starting weights (\`mappa merge\`, step 1) and MARTI trains all weights from there.
- **Learning rate 1e-6**, the paper's for full fine-tuning (ours, ${config.lr}, is for LoRA adapters). For a
  small model you may want more: \`default_agent.actor_learning_rate=...\` on the command line.
- **Workflow**: \`${MARTI_WORKFLOWS[plan.mode].workflow}\` — ${MARTI_WORKFLOWS[plan.mode].why}.
- **Context**: \`prompt_max_len\` ${plan.promptMaxLen} + \`generate_max_len\` ${plan.generateMaxLen} ${plan.contextLength ? `= the base model's ${plan.contextLength} positions` : '(the base model\'s context length was not known here; check it)'}; vLLM refuses a longer one.
- **Batches**: \`train_batch_size\` ${plan.batches.trainBatch} must split over the ${ACTOR_GPUS} actor GPUs in micro-batches of ${plan.batches.microTrain} (DeepSpeed checks it).
- **Evaluation** as the stock config: \`n_eval_samples_per_prompt: 2\`, \`eval_aggregation: mean\`.
`;
}

/** Where the run differs from the sandbox's. */
function gaps(config: TrainConfig, plan: MartiPlan): string {
  const turns = config.workflow.agents[1].turns;
  return `## What does not carry over (check before comparing numbers)

- **Agent prompts.** Their workflows hard-code their own prompts in Python; ours are kept in
  \`workflow_args.mappa_agent_prompts\` (a key of our own, ignored there). Paste them in to run ours.
- **Coach.** ${plan.mode === 'outcome' ? 'None in outcome mode.' : `MARTI's coach is a hosted model (\`coach_model\`); the sandbox's was ${config.coach.kind === 'rule' ? 'the rule-based verifier' : `a local judge (${config.coach.model})`}${config.coach.miscalibration ? ', deliberately miscalibrated (no counterpart)' : ''}.`}
- **Reward weights.** \`reward_process_weight\` / \`reward_outcome_weight\` are read by no code at ${MARTI_COMMIT.slice(0, 7)}: the coach
  workflow trains on the process score alone${plan.mode === 'mixed' ? ', so **this mixed run trains as a process run** unless you change `coach_utils.py`' : ''}.
${plan.mode === 'outcome' ? `- **Outcome mode.** Their rule-based workflow grades each agent's own answer (the sandbox: the team's final
  answer for every action), and gives the Code Executor one turn (ours: ${turns}).\n` : ''}- **Curriculum.** None there: \`train.jsonl\` holds the pools and \`random_sample_train\` draws from them.
- **Reward shaping** (${config.rewards.shaping ? 'on in this run' : 'off in this run'}): their workflow scores every action on its own; no shaping weight.
- **One generation limit** for all agents (${plan.generateMaxLen} tokens, the largest of ours).
- **Precision, optimizer, hardware**: bf16 and full fine-tuning at 1e-6 instead of float32 LoRA at ${config.lr}.
`;
}

/** What the export's test checked against the fixture, and what nobody ran. */
function checks(): string {
  return `## What was checked here, and what was not

Checked by the export's test (\`test/unit/loop/export-marti.test.ts\`) against \`${FIXTURE}\`,
written from their files at ${MARTI_COMMIT}, for process, outcome and mixed exports: the YAML loads
with the \`yaml\` parser (and PyYAML where installed, to the same values); every key written is one of
their config keys with the type written; \`bf16\` and \`flash_attn\` on, \`lora_rank\` 0; the workflow and
processor files exist at that commit; every data file the config names is in this folder with the
\`input_key\` / \`label_key\` fields; no absolute path, and step 4's line makes every path absolute.

Not checked: no GPU and no Python trainer ran here. Not run: Hydra's composition, Ray, vLLM and
DeepSpeed start-up, the weight sync, whether vLLM serves this base model and FlashAttention its head
size, memory on your GPUs, SandboxFusion, the coach API, and whether results match the sandbox's.

Their files read, at that commit:

${MARTI_SOURCES.map((s) => `- ${s}`).join('\n')}
`;
}

/** The whole README. */
export function martiReadme(config: TrainConfig, opts: MartiExportOptions, plan: MartiPlan, counts: { train: number; heldOut: number }): string {
  return [
    intro(config, opts, plan, counts),
    `## Run it, step by step\n\n${modelSteps(config, opts, plan)}\n${clusterSteps(plan)}\n`,
    whatRuns(config, plan),
    choices(config, plan),
    gaps(config, plan),
    checks(),
  ].join('\n');
}
