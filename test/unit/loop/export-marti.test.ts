/**
 * `mappa export --target marti`: the YAML has the reference trainer's keys with our values (parsed
 * by PyYAML where python3 has it — an independent YAML reader), the coach template is translated,
 * the dataset holds the curriculum's pools, and workflows MARTI cannot run are refused by name.
 */
import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { resolveTrainConfig } from '../../../src/core/loop/config.ts';
import { MATH_CHAIN } from '../../../src/core/loop/workflow.ts';
import { emitYaml, exportMarti, MartiExportError, toMartiCoachTemplate, yfloat, ymap } from '../../../src/interop/marti.ts';
import { generateMathTasks } from '../../../src/core/domains/math/tasks.ts';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const hasPyYaml = spawnSync('python3', ['-c', 'import yaml']).status === 0;
const date = new Date('2026-02-01T00:00:00Z');

/** The YAML as PyYAML reads it. */
function pyLoad(text: string): Record<string, any> {
  const r = spawnSync('python3', ['-c', 'import sys, json, yaml; print(json.dumps(yaml.safe_load(sys.stdin.read())))'], { input: text });
  if (r.status !== 0) throw new Error(r.stderr.toString());
  return JSON.parse(r.stdout.toString());
}

describe('export to MARTI', () => {
  it('emits YAML by hand: floats stay floats, blocks, lists of maps, comments', () => {
    const text = emitYaml([
      'head', ['a', 1, 'one'], ['w', yfloat(1)], ['lr', yfloat(1e-7)], ['s', 'x: "y"'], ['list', ['p', 'q']],
      ['block', 'line 1\nline 2\n'], ['items', [ymap(['k', ymap(['v', true])])]], ['n', null],
    ]);
    expect(text).toBe('# head\na: 1  # one\nw: 1.0\nlr: 1.0e-7\ns: "x: \\"y\\""\nlist: ["p", "q"]\nblock: |\n  line 1\n  line 2\n' +
      'items:\n  - k:\n      v: true\nn: null\n');
  });

  it('translates the coach template to str.format placeholders, doubling literal braces', () => {
    expect(toMartiCoachTemplate('P: {{problem}} R: {{role}} I: {{input}} O: {{output}} T: {{observation}}{{facts}} \\boxed{x}'))
      .toBe('P: {problem} R: {agent_role} I: {agent_input} O: {agent_output} T: {tool_observation} \\boxed{{x}}');
    expect(() => toMartiCoachTemplate('{{nope}}')).toThrow(/placeholder \{\{nope\}\} has no MARTI counterpart/);
  });

  it.skipIf(!hasPyYaml)('process run: the reference keys with our values', () => {
    const config = resolveTrainConfig({ seed: 3, iterations: 20, promptsPerIteration: 8, samplesPerPrompt: 2, lr: 1e-3, evalEvery: 4 });
    const { files } = exportMarti(config, { source: 'runs/x', pretrain: '/models/agent', date });
    const y = pyLoad(files['mappa_mathchat.yaml']);
    expect(y.defaults).toEqual(['default', '_self_']);
    expect(y.workflow_func_path).toBe('marti/worlds/workflows/mathchat_workflow_with_coach.py');
    expect(y.workflow_args).toMatchObject({
      generator_max_turns: 1, coder_max_turns: 2, refiner_max_turns: 1,
      reward_process_weight: 1.0, reward_outcome_weight: 0.0, enable_ground_truth_eval: true, coach_type: 'simple',
    });
    expect(y.workflow_args.coach_prompt_template).toContain('Agent: {agent_role}');
    expect(y.workflow_args.mappa_agent_prompts.agent_code_executor.system).toBe(MATH_CHAIN.agents[1].system);
    expect(y.agents.map((a: object) => Object.keys(a)[0])).toEqual(['agent_problem_solver', 'agent_code_executor', 'agent_verifier']);
    expect(y.agents[2].agent_verifier).toEqual({ role: 'agent_verifier', is_tuning: true, is_reasoning_model: false });
    expect(y).toMatchObject({ input_key: 'prompt', label_key: 'answer', prompt_data: './data/mappa/train.jsonl', mask_truncated_completions: true });
    expect(y.default_agent).toMatchObject({
      pretrain: '/models/agent', seed: 3, advantage_estimator: 'reinforce_plus_plus', init_kl_coef: 0.01, eps_clip: 0.2,
      actor_learning_rate: 1e-3, rollout_batch_size: 8, n_samples_per_prompt: 2, train_batch_size: 16, max_samples: 160,
      num_episodes: 1, temperature: 1.0, eval_temperature: 0.6, generate_max_len: 96, lora_rank: 8, lora_alpha: 16,
      target_modules: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'], eval_steps: 4, max_norm: 1.0,
    });
  });

  it.skipIf(!hasPyYaml)('outcome and mixed runs: the outcome-only workflow without coach keys; mixed weights', () => {
    const outcome = pyLoad(exportMarti(resolveTrainConfig({ rewards: { mode: 'outcome' } }), { source: 'x', date }).files['mappa_mathchat.yaml']);
    expect(outcome.workflow_func_path).toBe('marti/worlds/workflows/mathchat_workflow_outcome_only.py');
    expect(outcome.workflow_args.coach_model).toBeUndefined();
    expect(outcome.workflow_args.reward_process_weight).toBeUndefined();
    const mixed = pyLoad(exportMarti(resolveTrainConfig({ rewards: { mode: 'mixed', processWeight: 0.7 } }), { source: 'x', date }).files['mappa_mathchat.yaml']);
    expect(mixed.workflow_args).toMatchObject({ reward_process_weight: 0.7, reward_outcome_weight: 0.3 });
    const group = pyLoad(exportMarti(resolveTrainConfig({ update: { whitening: 'group' } }), { source: 'x', date }).files['mappa_mathchat.yaml']);
    expect(group.default_agent.advantage_estimator).toBe('group_norm');
  });

  it('the dataset is the curriculum pools as {prompt, answer, metadata}; README says how to run', () => {
    const config = resolveTrainConfig({ curriculum: { poolSize: 5 } });
    const { files } = exportMarti(config, { source: 'x', date });
    const rows = files['train.jsonl'].trim().split('\n').map((l) => JSON.parse(l));
    expect(rows).toHaveLength(25); // 5 levels x 5
    const l3 = generateMathTasks({ seed: 'train:0:L3', count: 5, level: 3 });
    expect(rows[10]).toEqual({ prompt: l3[0].problem, answer: l3[0].answer, metadata: { id: l3[0].id, level: 3 } });
    expect(files['heldout.jsonl'].trim().split('\n')).toHaveLength(200);
    expect(files['README.md']).toContain('python -m marti.cli.commands.train --config-name mappa_mathchat');
    expect(files['README.md']).toContain('mathchat_with_coach.yaml');
  });

  it('refuses workflows MARTI cannot run, by name', () => {
    const two = resolveTrainConfig({ workflow: { ...MATH_CHAIN, agents: [MATH_CHAIN.agents[0], { ...MATH_CHAIN.agents[2], user: '{{problem}}' }] } });
    expect(() => exportMarti(two, { source: 'x' })).toThrow(MartiExportError);
    expect(() => exportMarti(two, { source: 'x' })).toThrow(/fixed chain of 3 agents .* this one has 2/);
  });

  it('the CLI writes the folder from a config file', async () => {
    const out = mkdtempSync(path.join(os.tmpdir(), 'mappa-export-'));
    const { stdout } = await promisify(execFile)(process.execPath, ['bin/mappa.js', 'export', '--target', 'marti', '--out', out], { cwd: repoRoot });
    expect(stdout.trim()).toBe(out);
    expect(readFileSync(path.join(out, 'mappa_mathchat.yaml'), 'utf8')).toContain('advantage_estimator: "reinforce_plus_plus"');
    await expect(promisify(execFile)(process.execPath, ['bin/mappa.js', 'export', '--target', 'verl'], { cwd: repoRoot }))
      .rejects.toMatchObject({ stderr: expect.stringMatching(/--target must be "marti"/) });
  }, 60_000);
});
