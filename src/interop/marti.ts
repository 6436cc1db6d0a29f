/**
 * The same experiment for the authors' reference trainer: a TrainConfig written as a Hydra config
 * in the schema of `marti/cli/configs/mathchat_with_coach.yaml` (github.com/ltjed/multiagent-coaching,
 * MARTI on Ray + vLLM + DeepSpeed), plus the training problems as JSONL and a README.
 *
 * For: `mappa export --target marti` (src/cli/export.ts) and the browser's "export" button: pure
 * strings in, strings out (no file system here). Not for: running MARTI, or importing its configs.
 *
 * Every key written exists in the files listed in MARTI_SOURCES: mathchat_with_coach.yaml,
 * mathchat_outcome_only.yaml, default.yaml (default_agent.*), scripts/run_train_mathchat.sh. The one
 * key of our own, workflow_args.mappa_agent_prompts, is marked as such in the YAML: the stock
 * workflow hard-codes its prompts in Python and ignores it.
 *
 * Example: exportMarti(resolveTrainConfig({}), {source: 'runs/a'}).files['mappa_mathchat.yaml']
 *          -> '...advantage_estimator: "reinforce_plus_plus"...'
 */
import { mathHeldOut, generateMathTasks } from '../core/domains/math/tasks.ts';
import type { TrainConfig } from '../core/loop/config.ts';
import { DEFAULT_COACH_TEMPLATE } from '../core/coach/coach-format.ts';

/** What the schema was checked against (repository ltjed/multiagent-coaching). */
export const MARTI_SOURCES = [
  'marti/cli/configs/mathchat_with_coach.yaml (commit 4a821f0f: REINFORCE++, coder_max_turns 2, rollout_batch_size 32)',
  'marti/cli/configs/mathchat_outcome_only.yaml (commit c96e37d2: the outcome-only baseline)',
  'marti/cli/configs/default.yaml (default_agent.* keys, incl. lora_rank / lora_alpha / target_modules / init_kl_coef / eps_clip)',
  'scripts/run_train_mathchat.sh (how the config is launched; dataset format {"prompt", "answer", ...})',
  'marti/models/actor.py (applies PEFT LoRA when lora_rank > 0)',
  'marti/dataset/prompts_loader.py (reads input_key / label_key / metadata_key per record)',
  'marti/verifiers/coach/external_coach.py (coach template: Python str.format with {problem} {agent_role} {agent_input} {agent_output} {tool_observation} {ground_truth_answer})',
];

export const MARTI_CONFIG_NAME = 'mappa_mathchat';

export class MartiExportError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MartiExportError';
  }
}

// ---------------------------------------------------------------------------------------------
// A tiny YAML emitter: ordered maps, lists, scalars, block strings and comments — what a Hydra
// config needs, nothing more. Strings are always double-quoted (JSON escapes are valid YAML).

export type YamlValue = string | number | boolean | null | YamlFloat | YamlValue[] | YamlMap;
/** [key, value, trailing comment?] or a comment line ('' = blank line). */
export type YamlLine = [string, YamlValue, string?] | string;
export interface YamlMap { map: YamlLine[] }
/** A number always written as a float ("1.0", not "1"), as the reference configs write weights. */
export interface YamlFloat { float: number }

export const ymap = (...map: YamlLine[]): YamlMap => ({ map });
export const yfloat = (float: number): YamlFloat => ({ float });
type Scalar = string | number | boolean | null | YamlFloat;

/** OmegaConf (Hydra) would resolve "${...}" in a string as an interpolation; "\${" keeps it literal. */
const noInterpolation = (s: string) => s.replace(/\$\{/g, '\\${');

function scalar(v: Scalar): string {
  if (v === null) return 'null';
  if (typeof v === 'object') {
    const s = scalar(v.float);
    return /^-?\d+$/.test(s) ? `${s}.0` : s;
  }
  if (typeof v === 'boolean') return String(v);
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new MartiExportError(`YAML: cannot write the number ${v}`);
    if (Number.isInteger(v)) return String(v);
    // "1e-7" reads as a string in YAML 1.1 (PyYAML); "1.0e-7" reads as a float everywhere.
    const s = String(v);
    return s.includes('e') && !s.split('e')[0].includes('.') ? s.replace('e', '.0e') : s;
  }
  return JSON.stringify(noInterpolation(v));
}

const isMap = (v: YamlValue): v is YamlMap => typeof v === 'object' && v !== null && !Array.isArray(v) && 'map' in v;
const keyText = (k: string) => (/^[A-Za-z_][\w.-]*$/.test(k) ? k : JSON.stringify(k));

function emitLines(lines: YamlLine[], indent: number, out: string[]): void {
  const pad = ' '.repeat(indent);
  for (const line of lines) {
    if (typeof line === 'string') {
      out.push(line ? `${pad}# ${line}` : '');
      continue;
    }
    const [key, value, comment] = line;
    const tail = comment ? `  # ${comment}` : '';
    const head = `${pad}${keyText(key)}:`;
    if (isMap(value)) {
      out.push(head + tail);
      emitLines(value.map, indent + 2, out);
    } else if (Array.isArray(value)) {
      if (value.every((v) => !isMap(v) && !Array.isArray(v))) {
        out.push(`${head} [${value.map((v) => scalar(v as Scalar)).join(', ')}]${tail}`);
      } else {
        out.push(head + tail);
        for (const item of value) {
          if (!isMap(item)) throw new MartiExportError(`YAML: list "${key}" mixes maps and other values`);
          const sub: string[] = [];
          emitLines(item.map, indent + 4, sub);
          const first = sub.findIndex((l) => l.trim() && !l.trim().startsWith('#'));
          sub[first] = `${pad}  - ${sub[first].slice(indent + 4)}`;
          out.push(...sub);
        }
      }
    } else if (typeof value === 'string' && value.includes('\n') && !/^\s/.test(value)) {
      // Literal block: "|" keeps one final newline, "|-" none.
      out.push(`${head} ${value.endsWith('\n') ? '|' : '|-'}${tail}`);
      for (const l of noInterpolation(value).replace(/\n$/, '').split('\n')) out.push(l ? `${pad}  ${l}` : '');
    } else {
      out.push(`${head} ${scalar(value as Scalar)}${tail}`);
    }
  }
}

/** YAML text of an ordered map. Example: emitYaml([['a', 1, 'one'], ['b', ['x']]]) -> 'a: 1  # one\nb: ["x"]\n'. */
export function emitYaml(lines: YamlLine[]): string {
  const out: string[] = [];
  emitLines(lines, 0, out);
  return out.join('\n') + '\n';
}

// ---------------------------------------------------------------------------------------------

/** MARTI's role names for the three positions of its math chain. */
const MARTI_ROLES = ['agent_problem_solver', 'agent_code_executor', 'agent_verifier'];
/** What each position's max-turns key is called in workflow_args. */
const TURN_KEYS = ['generator_max_turns', 'coder_max_turns', 'refiner_max_turns'];
const HOSTED_COACH = /^(gpt-|o1-|claude-|gemini-|deepseek-)/i;

/**
 * Our coach template ({{name}} placeholders) in MARTI's str.format syntax. Literal braces are
 * doubled; {{facts}} has no MARTI counterpart in the math workflow and is dropped.
 * Example: 'Problem: {{problem}} as {{role}}' -> 'Problem: {problem} as {agent_role}'.
 */
export function toMartiCoachTemplate(template: string): string {
  const map: Record<string, string> = {
    problem: '{problem}', role: '{agent_role}', input: '{agent_input}', output: '{agent_output}',
    observation: '{tool_observation}', facts: '',
    truth: '\nGround truth (N/A unless you score the Verifier): {ground_truth_answer}',
    answerLine: ' and, when scoring the Verifier with a ground truth, then "ANSWER_CORRECT: <0|1>"',
  };
  return template.split(/(\{\{\w+\}\})/).map((part) => {
    const m = /^\{\{(\w+)\}\}$/.exec(part);
    if (!m) return part.replace(/[{}]/g, (c) => c + c);
    if (!(m[1] in map)) throw new MartiExportError(`coach.template: placeholder {{${m[1]}}} has no MARTI counterpart (known: ${Object.keys(map).join(', ')})`);
    return map[m[1]];
  }).join('');
}

/** The training problems MAPPA's curriculum draws from (the same per-level pools), as MARTI records. */
export function martiTrainRecords(config: TrainConfig): { prompt: string; answer: string; metadata: { id: string; level: number } }[] {
  const c = config.curriculum;
  const levels = c.adaptLevel ? [1, 2, 3, 4, 5] : [c.startLevel]; // adaptLevel can move to any level
  return levels.flatMap((level) => generateMathTasks({ seed: `train:${config.seed}:L${level}`, count: c.poolSize, level }))
    .map((t) => ({ prompt: t.problem, answer: t.answer, metadata: { id: t.id, level: t.level } }));
}

function checkChain(config: TrainConfig): void {
  const w = config.workflow;
  const where = `workflow "${w.name}"`;
  if (w.domain !== 'math') throw new MartiExportError(`${where}: only the math domain maps onto MARTI's mathchat workflow (got domain "${w.domain}")`);
  if (w.agents.length !== 3) throw new MartiExportError(`${where}: MARTI's mathchat workflow is a fixed chain of 3 agents (solver -> python coder -> verifier); this one has ${w.agents.length}`);
  if (!w.agents[1].tools.includes('python')) throw new MartiExportError(`${where}: the second agent must use the python tool (MARTI's Code Executor); "${w.agents[1].id}" has [${w.agents[1].tools.join(', ')}]`);
  if (!w.agents[2].final) throw new MartiExportError(`${where}: the third agent must be the final one (MARTI's Verifier); the final agent is "${w.agents.find((a) => a.final)?.id}"`);
  if (w.agents[0].tools.length || w.agents[2].tools.length) throw new MartiExportError(`${where}: in MARTI only the Code Executor runs tools; remove the tools of "${w.agents[0].id}" / "${w.agents[2].id}"`);
}

/** The Hydra config (ordered lines) for MARTI. `pretrain`: the base model as MARTI should load it. */
export function martiConfigLines(config: TrainConfig, opts: { source: string; pretrain?: string; date?: Date }): YamlLine[] {
  checkChain(config);
  const agents = config.workflow.agents;
  const mode = config.rewards.mode;
  const processWeight = mode === 'process' ? 1 : mode === 'outcome' ? 0 : config.rewards.processWeight;
  const u = config.update;
  const rolloutSamples = config.promptsPerIteration * config.samplesPerPrompt;
  const maxTokens = Math.max(...agents.map((a) => a.maxTokens));
  const coachModel = config.coach.kind === 'model' && HOSTED_COACH.test(config.coach.model) ? config.coach.model : 'gemini-2.5-flash';
  const ourCoach = config.coach.kind === 'rule' ? 'the rule-based verifier' : `the judge model ${config.coach.model}`;
  const name = `mappa-${config.workflow.name}-${mode}-seed${config.seed}`;

  const workflowArgs: YamlLine[] = agents.map((a, i) => [TURN_KEYS[i], a.turns, `ours: ${a.id} ("${a.role}") turns`] as YamlLine);
  if (mode !== 'outcome') {
    workflowArgs.push(
      ['enable_ground_truth_eval', true, 'the coach sees the ground truth when scoring the Verifier (ours: the final agent)'],
      ['reward_process_weight', yfloat(processWeight), `ours: rewards.mode ${mode}${mode === 'mixed' ? ` (processWeight ${processWeight})` : ''}`],
      ['reward_outcome_weight', yfloat(+(1 - processWeight).toFixed(6)), 'see README: the stock coach_utils.py trains on the process score alone'],
      ['coach_model', coachModel, `ours: ${ourCoach}; MARTI's coach is a hosted model, provider from the name (gpt-, claude-, gemini-, deepseek-)`],
      ['coach_type', 'simple'],
      ['use_vertex_ai', false],
      ['coach_prompt_template', toMartiCoachTemplate(config.coach.template || DEFAULT_COACH_TEMPLATE) + '\n', 'ours, translated to str.format placeholders'],
    );
  }
  workflowArgs.push(
    '',
    'NOT a MARTI key: our per-agent prompts, kept so the experiment is complete. The stock workflow',
    '(mathchat_workflow_with_coach.py / _outcome_only.py) hard-codes its own three prompts in Python and',
    'ignores this map; to use ours, paste them there ({{problem}} -> {problem}, {{output:solver}} -> {solution}, ...).',
    ['mappa_agent_prompts', ymap(...agents.map((a, i) => [MARTI_ROLES[i], ymap(
      ['id', a.id], ['role', a.role], ['system', a.system], ['user', a.user],
      ...(a.followUp ? [['follow_up', a.followUp] as YamlLine] : []), ['max_tokens', a.maxTokens],
    )] as YamlLine))],
  );

  const estimator = u.whitening === 'group' ? 'group_norm' : 'reinforce_plus_plus';
  const defaultAgent: YamlLine[] = [
    'Model',
    ['pretrain', opts.pretrain ?? config.agentModel, `ours: agentModel "${config.agentModel}" (override on the command line: default_agent.pretrain=...)`],
    ['is_reasoning_model', false, 'our agents are not <think> models (the stock config: true, for Qwen3-4B-Thinking)'],
    ['is_tuning', true],
    ['seed', config.seed],
    '',
    'Hardware: the stock mathchat_with_coach.yaml values (2-4 GPUs, all models colocated); adjust to your machines',
    ['vllm_num_engines', 2], ['vllm_tensor_parallel_size', 1], ['vllm_gpu_memory_utilization', yfloat(0.7)],
    ['vllm_enable_sleep', true], ['vllm_sync_backend', 'nccl'],
    ['ref_num_nodes', 1], ['ref_num_gpus_per_node', 2], ['actor_num_nodes', 1], ['actor_num_gpus_per_node', 2],
    ['critic_num_nodes', 1], ['critic_num_gpus_per_node', 2], ['colocate_all_models', true],
    '',
    'Algorithm (MAPPA section 4)',
    ['advantage_estimator', estimator, `ours: update.whitening "${u.whitening}"${u.whitening === 'agent' ? ' (per-agent whitening has no MARTI counterpart; REINFORCE++ whitens the whole batch)' : ''}`],
    ['training_mode', 'rl'],
    ['normalize_reward', true],
    ['gamma', 1],
    ['init_kl_coef', yfloat(u.klCoef), 'KL to the reference folded into the per-token reward'],
    ['use_kl_loss', false],
    ['use_kl_estimator_k3', false, 'k1, as ours'],
    ['eps_clip', yfloat(u.clipEps)],
    ['max_norm', yfloat(u.maxGradNorm), 'global gradient-norm clip'],
    ['max_epochs', u.epochs],
    '',
    'Budget: num_episodes 1 over max_samples = iterations x promptsPerIteration problems gives our rollout count',
    ['num_episodes', 1],
    ['max_samples', config.iterations * config.promptsPerIteration, `ours: ${config.iterations} iterations x ${config.promptsPerIteration} prompts`],
    ['random_sample_train', true, 'draw them at random from train.jsonl (all curriculum levels; see README)'],
    ['rollout_batch_size', config.promptsPerIteration, 'ours: promptsPerIteration'],
    ['n_samples_per_prompt', config.samplesPerPrompt, 'ours: samplesPerPrompt'],
    ['micro_rollout_batch_size', Math.min(8, config.promptsPerIteration)],
    ['train_batch_size', Math.max(1, Math.floor(rolloutSamples / u.miniBatches)), `ours: ${u.miniBatches} optimizer step(s) per iteration over ${rolloutSamples} trajectories`],
    ['micro_train_batch_size', u.microBatchSize, 'ours: update.microBatchSize'],
    '',
    'Generation',
    ['generate_max_len', maxTokens, `ours per agent: ${agents.map((a) => `${a.id} ${a.maxTokens}`).join(', ')}; MARTI has one limit for all`],
    ['temperature', yfloat(config.temperature)],
    ['eval_temperature', yfloat(config.evalTemperature)],
    ['top_p', yfloat(1.0)],
    '',
    'Optimizer and adapters',
    ['actor_learning_rate', yfloat(config.lr), 'ours, for LoRA on small models (the paper: 1e-6, full fine-tuning of a 4B model)'],
    ['l2', yfloat(config.weightDecay), 'AdamW weight decay'],
    ['lora_rank', config.lora.rank, 'MARTI applies PEFT LoRA when lora_rank > 0 (marti/models/actor.py); 0 = full fine-tuning'],
    ['lora_alpha', config.lora.alpha, config.lora.rsLora ? 'ours used rsLoRA scaling (alpha / sqrt(r)); MARTI uses alpha / r' : undefined],
    ['lora_dropout', yfloat(config.lora.dropout)],
    ['target_modules', [...config.lora.targetModules]],
    ['bf16', false, 'ours trains in float32'],
    '',
    'Checkpoints and evaluation (one MARTI training step = one of our iterations)',
    ['eval_steps', config.evalEvery, 'ours: evalEvery'],
    ['save_steps', config.checkpointEvery, 'ours: checkpointEvery'],
    ['logging_steps', 1],
    ['save_path', `./outputs/${name}`],
    ['ckpt_path', `./checkpoints/${name}`],
  ];

  const date = (opts.date ?? new Date()).toISOString();
  return [
    `Generated by "mappa export --target marti" from ${opts.source} on ${date}.`,
    `Schema: the reference trainer's marti/cli/configs/mathchat_with_coach.yaml (github.com/ltjed/multiagent-coaching).`,
    `Run (from that repository, this file copied to marti/cli/configs/${MARTI_CONFIG_NAME}.yaml, see README.md):`,
    `  python -m marti.cli.commands.train --config-name ${MARTI_CONFIG_NAME} default_agent.pretrain=/path/to/model`,
    '',
    ['defaults', ['default', '_self_']],
    '',
    ['agent_workflow', 'chain-of-agents'],
    ['async_workflow', true, 'needed for tools'],
    ['workflow_func_path', mode === 'outcome' ? 'marti/worlds/workflows/mathchat_workflow_outcome_only.py' : 'marti/worlds/workflows/mathchat_workflow_with_coach.py',
      mode === 'outcome' ? 'outcome only: every action gets 10 or 0 from the final answer, no coach' : 'per-action coach scores'],
    ['processor_func_path', 'marti/worlds/workflows/mathchat_processor.py'],
    '',
    ['workflow_args', ymap(...workflowArgs)],
    '',
    ['tools_config', ymap(
      ['num_workers', 16], ['enable_metrics', true], ['enable_rate_limiting', true],
      ['tools', ymap(['code_interpreter', ymap(
        ['type', 'sandbox_fusion'], ['enable_rate_limiting', true], ['rate_limit', 30],
        ['timeout', Math.max(30, Math.ceil(config.toolTimeoutMs / 1000)), `seconds; ours: toolTimeoutMs ${config.toolTimeoutMs} (Pyodide, no process start-up)`],
        ['base_url', 'http://127.0.0.1:8080/run_code', 'SandboxFusion'],
        ['schema_path', 'examples/schema/code.json'],
      )])],
    )],
    '',
    ['agents', agents.map((a, i) => ymap([MARTI_ROLES[i], ymap(
      ['role', MARTI_ROLES[i], `ours: ${a.id} ("${a.role}")`],
      ['is_tuning', a.trainable, a.trainable ? undefined : 'frozen: takes part, never updated'],
      ['is_reasoning_model', false],
    )]))],
    ['shared_agents', false, 'each agent its own weights (ours: its own LoRA adapter over one base)'],
    ['parallel_loading', true],
    '',
    ['verify_task', 'math'],
    ['verify_task_eval', 'math'],
    ['packing_samples', true],
    ['mask_truncated_completions', config.update.maskTruncated, config.update.maskTruncated ? 'as ours: truncated actions are masked out of the loss' : 'as ours (update.maskTruncated: false): truncated actions are trained on their scores'],
    ['filter_agents_data', true, 'the stock launch script sets this when coder_max_turns > 1'],
    ['prompt_data', './data/mappa/train.jsonl', 'written next to this file; copy it there'],
    ['input_key', 'prompt'],
    ['label_key', 'answer'],
    ['apply_chat_template', false, 'the workflow applies the chat template'],
    ['add_prompt_suffix', null, "default.yaml appends a \\boxed{} request to every problem; our prompts say what to answer"],
    '',
    ['use_wandb', null],
    ['wandb_project', 'MAPPA-sandbox-export'],
    ['wandb_run_name', name],
    ['use_tensorboard', `./logs/${name}`],
    '',
    ['default_agent', ymap(...defaultAgent)],
  ];
}

function readme(config: TrainConfig, opts: { source: string; pretrain?: string }, trainCount: number, heldOutCount: number): string {
  const mode = config.rewards.mode;
  return `# MAPPA sandbox experiment, exported for the reference trainer

Exported by \`mappa export --target marti\` from \`${opts.source}\`: the team (${config.workflow.agents.map((a) => `${a.role}`).join(' -> ')}),
reward mode **${mode}**, seed ${config.seed}, ${config.iterations} iterations x ${config.promptsPerIteration} prompts x ${config.samplesPerPrompt} samples,
as a config for the MAPPA authors' trainer (github.com/ltjed/multiagent-coaching, built on MARTI:
Ray + vLLM + DeepSpeed, one or more data-centre GPUs).

| file | what |
|---|---|
| \`${MARTI_CONFIG_NAME}.yaml\` | Hydra config in the schema of their \`marti/cli/configs/mathchat_with_coach.yaml\` |
| \`train.jsonl\` | ${trainCount} training problems, \`{"prompt", "answer", "metadata": {"id", "level"}}\` (the curriculum's pools) |
| \`heldout.jsonl\` | the ${heldOutCount} held-out problems of the sandbox's evaluation, same fields (not wired into the config) |

## Run it

\`\`\`sh
git clone https://github.com/ltjed/multiagent-coaching && cd multiagent-coaching
# set up their environment, SandboxFusion (code execution) and, for coach runs, the coach's API key:
# see their README.md
cp /path/to/this/folder/${MARTI_CONFIG_NAME}.yaml marti/cli/configs/
mkdir -p data/mappa && cp /path/to/this/folder/*.jsonl data/mappa/
ray start --head
python -m marti.cli.commands.train --config-name ${MARTI_CONFIG_NAME} \\
    default_agent.pretrain=${opts.pretrain ?? config.agentModel}
\`\`\`

\`default_agent.pretrain\` must be a Hugging Face model (hub id or a folder with config.json,
safetensors and tokenizer) that vLLM can serve. The sandbox's trained adapters (the run's
\`adapters/<agent>/\`, PEFT format) are not loaded: MARTI starts from the base model.

## What maps how

| sandbox | MARTI |
|---|---|
| agents in order, \`turns\`, \`trainable\` | \`agents\` (agent_problem_solver, agent_code_executor, agent_verifier), \`workflow_args.*_max_turns\`, \`is_tuning\` |
| rewards.mode process / outcome / mixed | \`workflow_args.reward_process_weight\` / \`reward_outcome_weight\` (1 / 0 for process); outcome uses their \`mathchat_workflow_outcome_only.py\` (10 or 0 per action, no coach) |
| coach template | \`workflow_args.coach_prompt_template\` (placeholders translated to \`{problem}\`, \`{agent_role}\`, \`{agent_input}\`, \`{agent_output}\`, \`{tool_observation}\`, \`{ground_truth_answer}\`) |
| REINFORCE++, batch whitening, k1 KL | \`advantage_estimator: reinforce_plus_plus\`, \`normalize_reward\`, \`init_kl_coef\`, \`use_kl_estimator_k3: false\` |
| clipEps, maxGradNorm, lr, weightDecay | \`eps_clip\`, \`max_norm\`, \`actor_learning_rate\`, \`l2\` |
| promptsPerIteration, samplesPerPrompt, iterations | \`rollout_batch_size\`, \`n_samples_per_prompt\`, \`max_samples\` = iterations x prompts with \`num_episodes: 1\` |
| temperature / evalTemperature | \`temperature\` / \`eval_temperature\` |
| LoRA rank, alpha, dropout, targets | \`lora_rank\`, \`lora_alpha\`, \`lora_dropout\`, \`target_modules\` (MARTI wraps the actor with PEFT when lora_rank > 0) |

## What does not carry over (check before comparing numbers)

- **Agent prompts.** The stock workflow hard-codes its three prompts in Python (with a 4k-token
  budget). Ours are in \`workflow_args.mappa_agent_prompts\`, a key of our own that the stock code
  ignores; paste them into the workflow file to run the sandbox's exact prompts.
- **Coach.** MARTI's coach is a hosted model (\`coach_model\`, provider inferred from the name; it
  needs that provider's API key). The sandbox's coach was ${config.coach.kind === 'rule' ? 'the rule-based verifier' : `a local judge model (${config.coach.model})`}${config.coach.miscalibration ? ', deliberately miscalibrated (no MARTI counterpart)' : ''}.
- **Reward weights.** The stock \`coach_utils.py\` says training uses the process score alone; the
  weights are written as the config asks${mode === 'mixed' ? ', but a mixed run may train on the process score only: check \`marti/worlds/workflows/coach_utils.py\`' : ''}.
- **Curriculum.** MARTI has no curriculum: \`train.jsonl\` holds every level's pool and \`random_sample_train\` draws from it; the sandbox's skip-decided filter and level raising do not happen.
- **Reward shaping** (${config.rewards.shaping ? 'on in this run' : 'off in this run'}): MARTI's workflow coaches every action (turn) on its own, which is the per-turn signal; there is no separate shaping weight.
- **One generation limit.** \`generate_max_len\` is the largest per-agent budget (${Math.max(...config.workflow.agents.map((a) => a.maxTokens))} tokens).
- **Precision and hardware.** The sandbox trains in float32 on one device; the hardware block holds the stock values for 2-4 GPUs.
- **Held-out set.** \`heldout.jsonl\` is not wired in: MARTI's \`extra_eval_tasks\` / \`extra_eval_dir\` read their own benchmark files (\`data/Bench/*.json\`), whose format was not checked here.

## What the schema was checked against

${MARTI_SOURCES.map((s) => `- ${s}`).join('\n')}

Not verified: that the dataset loader accepts \`.jsonl\` (their launch script passes a \`.json\`
file; Hugging Face's JSON loader reads JSON Lines); that every key is honoured by this fork's
trainer at run time (the keys are those of the files above).
`;
}

export interface MartiExport {
  /** File name -> contents, for the output folder. */
  files: Record<string, string>;
}

/** All files of the export. `source`: where the config came from (a run folder or a file), for the header. */
export function exportMarti(config: TrainConfig, opts: { source: string; pretrain?: string; date?: Date }): MartiExport {
  const yaml = emitYaml(martiConfigLines(config, opts));
  const train = martiTrainRecords(config);
  const heldOut = mathHeldOut().map((t) => ({ prompt: t.problem, answer: t.answer, metadata: { id: t.id, level: t.level } }));
  const jsonl = (rows: unknown[]) => rows.map((r) => JSON.stringify(r)).join('\n') + '\n';
  return {
    files: {
      [`${MARTI_CONFIG_NAME}.yaml`]: yaml,
      'train.jsonl': jsonl(train),
      'heldout.jsonl': jsonl(heldOut),
      'README.md': readme(config, opts, train.length, heldOut.length),
    },
  };
}
