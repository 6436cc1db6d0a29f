/**
 * What the MARTI export was checked against: one commit of the MAPPA authors' trainer
 * (github.com/ltjed/multiagent-coaching, MARTI on Ray + vLLM + DeepSpeed), the files read there, and
 * the workflow each reward mode runs. The same facts, as data, are in
 * test/fixtures/marti/multiagent-coaching-ed66921.json, which the export test reads.
 *
 * For: src/interop/marti.ts and its README. Not for: anything run-time (nothing here is fetched).
 *
 * Example: MARTI_WORKFLOWS.outcome.workflow -> 'marti/worlds/workflows/mathchat_workflow.py'
 */
import type { RewardMode } from '../core/loop/rewards.ts';

export const MARTI_REPOSITORY = 'ltjed/multiagent-coaching';
/** The HEAD the export was checked against (2026-02-02, "Add MIT License"). */
export const MARTI_COMMIT = 'ed66921df05e0765a9dfe86017e296d4276b58fa';

/** Workflow and processor per reward mode; every file exists at MARTI_COMMIT. */
export const MARTI_WORKFLOWS: Record<RewardMode, { workflow: string; processor: string; why: string }> = {
  process: {
    workflow: 'marti/worlds/workflows/mathchat_workflow_with_coach.py',
    processor: 'marti/worlds/workflows/mathchat_processor.py',
    why: 'the coach scores every action 0-10; the processor divides by 10',
  },
  mixed: {
    workflow: 'marti/worlds/workflows/mathchat_workflow_with_coach.py',
    processor: 'marti/worlds/workflows/mathchat_processor.py',
    why: 'the coach workflow: at this commit it trains on the process score alone (the weights are read by no code)',
  },
  outcome: {
    workflow: 'marti/worlds/workflows/mathchat_workflow.py',
    processor: 'marti/worlds/workflows/default_processor.py',
    why: 'no coach: each action graded 1 or 0 against the ground truth; default_processor keeps that scale',
  },
};

/** The files read, and what for (paths at MARTI_COMMIT). */
export const MARTI_SOURCES = [
  'marti/cli/configs/mathchat_with_coach.yaml and default.yaml: every key and its type (the export writes no other, except mappa_export and workflow_args.mappa_agent_prompts)',
  'marti/cli/commands/train.py: default_agent.* copied to the top level; packing_samples forces flash_attn; actor GPUs a power of two',
  'marti/models/vllm/engine.py: every vLLM engine starts in bfloat16; marti/models/vllm/wrapper.py: the weight sync asserts equal dtypes',
  'marti/models/actor.py: bf16 loads the actor in bfloat16 (else the checkpoint dtype); lora_rank > 0 wraps it with PEFT',
  'marti/trainers/ppo/actor.py _broadcast_to_vllm: sends every named parameter as it is, with no LoRA merge',
  'marti/controllers/multi_agent_controller.py: an agents[] entry may set its own pretrain; colocation needs actor GPUs = vLLM engines x TP',
  'marti/controllers/base_controller.py and marti/helpers/common.py: prompt_data .json/.jsonl; extra_eval_tasks read {extra_eval_dir}/{task}.json or .jsonl',
  'marti/dataset/prompts_loader.py: records by input_key / label_key (numbers become strings), metadata_key',
  'marti/worlds/workflows/ (mathchat_workflow_with_coach.py, coach_utils.py, mathchat_workflow.py, mathchat_processor.py, default_processor.py): the keys they read and the reward scale',
  'marti/worlds/tool_world.py: tools_config.tools.<name> {type, base_url, timeout, schema_path}; the stock schema_path examples/schema/code.json is absent from the repository',
  'marti/verifiers/coach/external_coach.py: coach template placeholders {problem} {agent_role} {agent_input} {agent_output} {tool_observation} {ground_truth_answer}',
  'scripts/run_train_mathchat.sh: the settings the authors launch with (bf16, flash_attn, ZeRO-3, n_eval_samples_per_prompt 2)',
];
