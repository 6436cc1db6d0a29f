/**
 * What the MARTI export was checked against: one commit of the MAPPA authors' trainer
 * (github.com/ltjed/multiagent-coaching, MARTI on Ray + vLLM + DeepSpeed), the files read there, and
 * the processor the export names. The same facts, as data, are in
 * test/fixtures/marti/multiagent-coaching-ed66921.json, which the export test reads.
 *
 * For: src/interop/marti.ts and its README. Not for: anything run-time (nothing here is fetched).
 *
 * Example: MARTI_PROCESSOR -> 'marti/worlds/workflows/mathchat_processor.py'
 */
export const MARTI_REPOSITORY = 'ltjed/multiagent-coaching';
/** The HEAD the export was checked against (2026-02-02, "Add MIT License"). */
export const MARTI_COMMIT = 'ed66921df05e0765a9dfe86017e296d4276b58fa';

/**
 * The processor every export names: it splits the trajectories per agent and divides each action's
 * reward by 10 (their coach's 0-10 scale). The exported workflow (marti-workflow.ts) writes the
 * sandbox's 0-1 reward x 10 in every mode, so the agents train on the sandbox's reward and the
 * `coach/<role>/mean` logs show 10 x the mean reward (in process mode: the coach's mean score).
 */
export const MARTI_PROCESSOR = 'marti/worlds/workflows/mathchat_processor.py';

/** The files read, and what for (paths at MARTI_COMMIT). */
export const MARTI_SOURCES = [
  'marti/cli/configs/mathchat_with_coach.yaml and default.yaml: every key and its type (the export writes no other, except mappa_export)',
  'marti/cli/commands/train.py: default_agent.* copied to the top level; packing_samples forces flash_attn; actor GPUs a power of two',
  'marti/models/vllm/engine.py: every vLLM engine starts in bfloat16; marti/models/vllm/wrapper.py: the weight sync asserts equal dtypes',
  'marti/models/actor.py: bf16 loads the actor in bfloat16 (else the checkpoint dtype); lora_rank > 0 wraps it with PEFT',
  'marti/trainers/ppo/actor.py _broadcast_to_vllm: sends every named parameter as it is, with no LoRA merge',
  'marti/controllers/multi_agent_controller.py: an agents[] entry may set its own pretrain; colocation needs actor GPUs = vLLM engines x TP',
  'marti/controllers/base_controller.py and marti/helpers/common.py: prompt_data .json/.jsonl; extra_eval_tasks read {extra_eval_dir}/{task}.json or .jsonl',
  'marti/dataset/prompts_loader.py: records by input_key / label_key (numbers become strings), metadata_key',
  'marti/worlds/workflows/workflow_wrapper.py: how workflow_func_path is loaded and awaited; mathchat_workflow*.py: what a workflow returns',
  'marti/worlds/workflows/mathchat_processor.py: the turn keys it reads and its division by 10',
  'marti/worlds/multi_agent_world_async.py: the agents a workflow gets (get_rank_agent), evaluation (evaluate_samples, distribute_prompts), coach_metadata',
  'marti/controllers/base_controller.py _init_logging, fit, save_logs: the logger choice, the evaluation schedule, what add_scalar is given',
  'marti/controllers/multi_agent_controller.py: _rollout_metadata in every step\'s logs; the eos id the truncation mask takes (trainers/ppo/trainer.py)',
  'marti/verifiers/coach/external_coach.py create_coach and evaluate; marti/verifiers/qwen/qwen_eval_timeout.py: their math grader, ' +
    'not used (it needs func_timeout, which neither their requirements nor MARTI\'s list)',
  'marti/controllers/multi_agent_controller.py generate_shared_samples: filter_agents_data keeps whole micro-batches, then whole ' +
    'train batches of one GPU\'s count (lines 575-613)',
  'marti/trainers/ppo/trainer.py ppo_train: the replay buffer read in micro_train_batch_size batches with drop_last; ' +
    'multi_agent_world_async.py prepare_samples: assert output_len > 1',
  'marti/controllers/base_controller.py _init_logging: "import os" in the use_wandb branch makes os local (use_tensorboard fails at line 403)',
  'marti/worlds/tools/sandbox.py SandboxFusionExecutor.execute: what a code run returns (run_status, stdout, stderr)',
  'marti/worlds/tool_world.py: tools_config.tools.<name> {type, base_url, timeout, schema_path}; ' +
    'the stock schema_path examples/schema/code.json is absent from the repository',
  'marti/verifiers/coach/external_coach.py: coach template placeholders ' +
    '{problem} {agent_role} {agent_input} {agent_output} {tool_observation} {ground_truth_answer}',
  'scripts/run_train_mathchat.sh: the settings the authors launch with (bf16, flash_attn, ZeRO-3, n_eval_samples_per_prompt 2, a W&B key)',
];
