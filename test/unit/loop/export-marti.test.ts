/**
 * `mappa export --target marti`: the YAML, read back with the `yaml` parser (and PyYAML where
 * python3 has it), checked against test/fixtures/marti/multiagent-coaching-ed66921.json (the
 * authors' config keys, types, processor, logging, evaluation, stop-token and run-path facts at that
 * commit), for process, outcome and mixed exports; the coach template, datasets, stop settings,
 * README costs and CLI. The shipped Python files run in test/unit/interop/marti-run.test.ts.
 */
import { execFile, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { type TrainConfig } from '../../../src/core/loop/config.ts';
import { resolveTrainConfig } from '../../../src/core/domains/index.ts';
import { MATH_CHAIN } from '../../../src/core/domains/math/index.ts';
import { generateMathTasks } from '../../../src/core/domains/math/tasks.ts';
import {
  exportMarti, GENERATION_CONFIG_FILE, LAUNCHER_FILE, MARTI_COMMIT, MARTI_PROCESSOR, MartiExportError, toMartiCoachTemplate, WORKFLOW_FILE,
  type MartiExportOptions,
} from '../../../src/interop/marti.ts';
import { evaluationCount } from '../../../src/interop/marti-cost.ts';
import { measureTrajectories, SHIPPED_DEFAULT_MEASURE } from '../../../src/interop/marti-measure.ts';
import { floatText, martiYaml, yfloat } from '../../../src/interop/marti-yaml.ts';
import { baseStops } from '../../../src/cli/export.ts';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const fixture = JSON.parse(readFileSync(path.join(repoRoot, 'test/fixtures/marti/multiagent-coaching-ed66921.json'), 'utf8'));
const keys: Record<string, Record<string, string>> = fixture.keys;
const hasPyYaml = spawnSync('python3', ['-c', 'import yaml']).status === 0;
const date = new Date('2026-02-01T00:00:00Z');
const MODES = ['process', 'outcome', 'mixed'] as const;
const CONFIG = `mappa_mathchat.yaml`;

type Y = Record<string, any>;
/** The YAML as the `yaml` library reads it; integers as bigint, so that 1 and 1.0 stay apart. */
const load = (text: string): Y => parse(text, { intAsBigInt: true });
const typeOf = (v: unknown) => v === null ? 'null' : typeof v === 'bigint' ? 'int' : typeof v === 'number' ? 'float'
  : typeof v === 'boolean' ? 'bool' : typeof v === 'string' ? 'str' : Array.isArray(v) ? 'list' : 'map';

/** "section.key: what is wrong" for every key not in `allowed`, or of another type. */
function keyProblems(section: Y, allowed: Record<string, string>, where: string, own: string[] = []): string[] {
  return Object.entries(section).flatMap(([k, v]) => {
    if (own.includes(k)) return [];
    if (!(k in allowed)) return [`${where}.${k}: not a key of theirs`];
    return allowed[k].split('|').includes(typeOf(v)) ? [] : [`${where}.${k}: ${typeOf(v)}, theirs ${allowed[k]}`];
  });
}

/** Every key and type the run path reads, against the fixture. */
function schemaProblems(y: Y): string[] {
  const tool = y.tools_config.tools.code_interpreter;
  return [
    ...keyProblems(y, keys.top, 'top', ['mappa_export', 'workflow_args', 'tools_config', 'agents', 'default_agent']),
    ...keyProblems(y.workflow_args, keys.workflow_args, 'workflow_args'),
    ...keyProblems(y.default_agent, keys.default_agent, 'default_agent'),
    ...keyProblems(y.tools_config, keys.tools_config, 'tools_config'),
    ...keyProblems(tool, keys.sandbox_fusion_tool, 'code_interpreter'),
    ...y.agents.flatMap((a: Y, i: number) => Object.entries(a).flatMap(([role, entry]) => keyProblems(entry as Y, { ...keys.default_agent, ...keys.agent }, `agents[${i}].${role}`))),
  ];
}

/** Every string in a parsed document. */
const strings = (v: unknown): string[] => typeof v === 'string' ? [v] : v && typeof v === 'object' ? Object.values(v).flatMap(strings) : [];
const isAbsolutePath = (s: string) => !/\s/.test(s) && /^(\/|~|[A-Za-z]:[\\/]|\\\\)/.test(s);

function exported(config: TrainConfig, opts: Partial<MartiExportOptions> = {}) {
  const { files } = exportMarti(config, { source: 'runs/x', date, ...opts });
  return { files, y: load(files[CONFIG]) };
}

const bench = { name: 'aime24', records: [{ prompt: 'What is 1+1?', answer: '2', metadata: { id: 'aime24/60' } }] };

/** Their logger for a config (fixture saveLogs.loggerChoice): W&B with a key, else TensorBoard with a folder, else none. */
const loggerOf = (y: Y) => (y.use_wandb ? 'wandb' : y.use_tensorboard ? 'tensorboard' : 'none');

/** A step's log dictionary with a value of each type the fixture lists for its keys (fixture saveLogs.stepKeys). */
function stepLogs(): Record<string, unknown> {
  const sample = (type: string): unknown => (type === 'int' ? 3n : type === 'float' ? 0.5 : null);
  return Object.fromEntries(fixture.saveLogs.stepKeys.map((k: { key: string; type: string; fields?: Record<string, string> }) => [
    k.key.replace(/<(\w+)>/g, '$1'),
    k.type === 'map' ? Object.fromEntries(Object.entries(k.fields!).map(([f, t]) => [f, sample(t.split('|')[0])])) : sample(k.type),
  ]));
}

/**
 * The values their save_logs hands add_scalar that it refuses (fixture saveLogs.tensorboardLoop and addScalarTakes),
 * when their own entry runs this config: none without TensorBoard; W&B takes nested values.
 */
function refusedScalars(y: Y, logs: Record<string, unknown>): string[] {
  if (loggerOf(y) !== 'tensorboard') return [];
  const takes: string[] = fixture.saveLogs.addScalarTakes.value;
  return Object.entries(logs).filter(([, v]) => !takes.includes(typeOf(v))).map(([k]) => (k.split('/').length === 2 ? k : `train/${k}`));
}

/** Ids as a list (generation_config's eos_token_id is a number or a list). */
const idList = (v: unknown): number[] => (Array.isArray(v) ? v : v === undefined ? [] : [v]) as number[];

describe('export to MARTI, checked against the authors\' trainer at the fixture\'s commit', () => {
  it('the fixture and the export name the same commit', () => {
    expect(MARTI_COMMIT).toBe(fixture.commit);
    expect(fixture.workflowFiles.length).toBeGreaterThan(10);
  });

  for (const mode of MODES) {
    it(`${mode} export: every key theirs, with their type; bf16, no LoRA; our workflow, their processor`, () => {
      const config = resolveTrainConfig({ rewards: { mode, processWeight: 0.7 } });
      const { files, y } = exported(config, { adapters: ['solver'], bench: [bench], contextLength: 2048 });
      expect(schemaProblems(y)).toEqual([]);
      expect(y.mappa_export).toMatchObject({ checked_commit: fixture.commit, repository: fixture.repository, reward_mode: mode });
      const da = y.default_agent;
      // dtype: vLLM runs in bfloat16 and the sync asserts equal dtypes -> the actor loads in bf16.
      expect(fixture.facts.vllmDtype.value).toBe('bfloat16');
      expect(fixture.facts.syncAssertsSameDtype.value).toBe(true);
      expect(da.bf16).toBe(true);
      if (fixture.facts.packingForcesFlashAttn.value && y.packing_samples) expect(da.flash_attn).toBe(true);
      // LoRA: the sync does not merge PEFT weights -> full fine-tuning, each trained agent from its merged model.
      expect(fixture.facts.syncMergesLora.value).toBe(false);
      expect(da.lora_rank).toBe(0n);
      expect(y.agents.map((a: Y) => Object.values(a)[0].lora_rank ?? 0n)).toEqual([0n, 0n, 0n]);
      expect(y.agents[0].agent_problem_solver.pretrain).toBe('./models/mappa/solver');
      expect(y.agents[1].agent_code_executor.pretrain).toBeUndefined();
      // Workflow: ours, shipped in the folder the data goes to; their processor, at the commit.
      expect(y.workflow_func_path).toBe(`./data/mappa/${WORKFLOW_FILE}`);
      expect(files[path.basename(y.workflow_func_path)]).toContain('async def workflow(prompt, label, agents, tool_manager, task, metadata=None, **kwargs)');
      expect(y.processor_func_path).toBe(MARTI_PROCESSOR);
      expect(fixture.workflowFiles).toContain(y.processor_func_path);
      expect(y.workflow_args.reward_process_weight).toBe(mode === 'process' ? 1 : mode === 'outcome' ? 0 : 0.7);
      // Hardware and batches their checks would refuse.
      const actorGpus = Number(da.actor_num_nodes * da.actor_num_gpus_per_node);
      expect(actorGpus & (actorGpus - 1)).toBe(0);
      expect(BigInt(actorGpus)).toBe(da.vllm_num_engines * da.vllm_tensor_parallel_size);
      expect(da.train_batch_size % (da.micro_train_batch_size * BigInt(actorGpus))).toBe(0n);
      expect(Number(da.prompt_max_len + da.generate_max_len)).toBeLessThanOrEqual(2048);
      expect(files['README.md']).toContain(fixture.commit);
    });
  }

  for (const mode of MODES) {
    it(`${mode} export: no value their save_logs hands a logger is a dictionary; the launcher turns TensorBoard on`, () => {
      const { files, y } = exported(resolveTrainConfig({ rewards: { mode } }));
      const logs = stepLogs();
      expect(logs._rollout_metadata).toBeTypeOf('object'); // in every step's logs, in both modes (fixture)
      expect(refusedScalars(y, logs)).toEqual([]);
      expect(loggerOf(y)).toBe('none');
      // TensorBoard on with their own entry: add_scalar would refuse the nested dictionary at step 1 (it stops earlier, at build:
      // UnboundLocalError in _init_logging; scripts/marti-dry-run.sh --put-back tensorboard shows it).
      expect(refusedScalars({ ...y, use_tensorboard: './logs/x' }, logs)).toEqual(['train/_rollout_metadata']);
      // The launcher writes these logs itself, flattened (run with python3 in test/unit/interop/marti-run.test.ts).
      expect(files[LAUNCHER_FILE]).toContain(`LOG_DIR = "logs/mappa-math-chain-${mode}-seed0"`);
      expect(files[LAUNCHER_FILE]).toContain('runpy.run_module(TRAIN_MODULE, run_name="__main__", alter_sys=True)');
      expect(files['README.md']).toContain(`python data/mappa/${LAUNCHER_FILE} --config-name mappa_mathchat`);
    });
  }

  it('the models stop only on the id their truncation mask keeps', async () => {
    const stops = (await baseStops(path.join(repoRoot, 'models/agent')))!;
    expect(stops.eosToken).toBe('<|im_end|>');
    // The mask keeps the tokenizer's eos_token_id, one id (fixture stopTokens.maskIds).
    expect(fixture.stopTokens.maskIds.value).toMatch(/^the tokenizer's eos_token_id \(one id\)/);
    const masked = [stops.eosTokenId];
    // The shipped model also stops on another id: as it is, vLLM would end replies the mask drops.
    expect(idList(stops.generationConfig.eos_token_id).filter((id) => !masked.includes(id))).toEqual([0]);
    for (const mode of MODES) {
      const { files } = exported(resolveTrainConfig({ rewards: { mode } }), { stops });
      const written = JSON.parse(files[GENERATION_CONFIG_FILE]);
      expect(idList(written.eos_token_id).filter((id) => !masked.includes(id))).toEqual([]);
      expect(written).toMatchObject({ ...stops.generationConfig, eos_token_id: 2 });
      expect(files['README.md']).toContain(`cp "$EXPORT/${GENERATION_CONFIG_FILE}" "$m"`);
    }
    expect(exported(resolveTrainConfig({})).files[GENERATION_CONFIG_FILE]).toBeUndefined();
  });

  it('the README gives the GPUs in total, the coach calls for training and evaluation, and hours with the arithmetic', () => {
    const config = resolveTrainConfig({});
    const { files, y } = exported(config, { bench: [bench], measure: SHIPPED_DEFAULT_MEASURE });
    const readme = files['README.md'];
    const da = y.default_agent;
    const gpus = 3 * Number(da.actor_num_nodes * da.actor_num_gpus_per_node);
    expect(readme).toContain(`**GPUs**: ${gpus} in total (3 agents x ${gpus / 3})`);
    // Their schedule (fixture evaluation.schedule): step 0, every eval_steps, the last step again.
    const steps = Number(da.num_episodes) * Math.floor(Number(da.max_samples) / Number(da.rollout_batch_size));
    const schedule = [0, ...Array.from({ length: steps }, (_, i) => i + 1).filter((s) => s % Number(da.eval_steps) === 0)];
    if (steps % Number(da.eval_steps) === 0) schedule.push(steps);
    expect(evaluationCount(steps, Number(da.eval_steps))).toBe(schedule.length);
    expect(schedule).toEqual([0, 15, 30, 30]);
    // Coach calls: one per agent's work per trajectory in training; the shipped workflow calls none when evaluating.
    expect(readme).toContain(`**${(30 * 24 * 3).toLocaleString('en-US')} for training** (30 steps x 24 trajectories x 3 agents`);
    expect(readme).toContain('**0 for evaluation** (4 evaluations x');
    // Eval size: the first 3 % of train.jsonl (fixture evaluation.trainShare), the held-out set and the bench set,
    // n_eval_samples_per_prompt samples on eval_workers engines (fixture evaluation.enginesPerProblem).
    const problems = Math.floor(2000 * fixture.evaluation.trainShare.value) + 200 + 1;
    expect(readme).toContain(`${(problems * Number(da.n_eval_samples_per_prompt) * Number(y.eval_workers)).toLocaleString('en-US')} trajectories`);
    // Hours from the measured tokens per action, with the arithmetic.
    expect(readme).toContain('measured: the embedded default on the shipped models');
    expect(readme).toContain('solver 1 action(s) x 36.2 tokens (prompt 136.3)');
    expect(readme).toMatch(/\*\*Per iteration\*\*: [\d.]+ \+ [\d.]+ = 0\.\d+ h \(\d+ s\) on 3 x NVIDIA H100 80GB/);
    expect(readme).toMatch(/\*\*Whole run\*\*: 30 x \d+ s \+ 4 x \d+ s = [\d.]+ h/);
    // Outcome mode: no coach at all; an unmeasured team: its budgets as an upper bound.
    const outcome = exported(resolveTrainConfig({ rewards: { mode: 'outcome' } })).files['README.md'];
    expect(outcome).toContain('**none**: outcome mode calls no coach');
    expect(outcome).toContain('not measured for this team');
  });

  it('tokens per action from a run\'s trajectories.jsonl', () => {
    const line = (agents: [string, number][]) => JSON.stringify({ actions: agents.map(([agent, n]) => ({ agent, tokens: Array(n).fill(5), input: [{ role: 'user', content: 'x' }] })) });
    const m = measureTrajectories([line([['solver', 30], ['executor', 10], ['executor', 20]]), line([['solver', 40], ['executor', 30]])].join('\n'), 'runs/a', () => 100);
    expect(m).toEqual({ source: 'runs/a', trajectories: 2, agents: {
      solver: { actionsPerTrajectory: 1, tokensPerAction: 35, promptTokensPerAction: 100 },
      executor: { actionsPerTrajectory: 1.5, tokensPerAction: 20, promptTokensPerAction: 100 },
    } });
    expect(() => measureTrajectories('{"iteration": 1}\n', 'runs/a')).toThrow(/line 1 has no "actions" list/);
  });

  it('data: every file the config names is in the export, with the input and label keys', () => {
    const { files, y } = exported(resolveTrainConfig({}), { bench: [bench] });
    const dir = y.extra_eval_dir;
    const named = [y.prompt_data, ...y.extra_eval_tasks.map((t: string) => `${dir}/${t}.jsonl`)];
    expect(named).toEqual(['./data/mappa/train.jsonl', './data/mappa/heldout.jsonl', './data/mappa/aime24.jsonl']);
    for (const p of named) {
      expect(path.dirname(p)).toBe(dir);
      expect(fixture.facts.promptDataExtensions.value).toContain(path.extname(p));
      const records = files[path.basename(p)].trim().split('\n').map((l) => JSON.parse(l));
      for (const r of records) expect([typeof r[y.input_key], typeof r[y.label_key]]).toEqual(['string', 'string']);
    }
    const schema = y.tools_config.tools.code_interpreter.schema_path;
    expect(path.dirname(schema)).toBe(dir);
    expect(JSON.parse(files[path.basename(schema)]).function.name).toBe('code_interpreter');
  });

  it('no absolute path; the README\'s one line makes every relative path absolute', () => {
    const { files, y } = exported(resolveTrainConfig({}), { adapters: ['solver', 'executor', 'verifier'] });
    expect(strings(y).filter(isAbsolutePath)).toEqual([]);
    expect(files['README.md']).toContain(String.raw`sed -i -E "s#(: \"?)\./#\1$PWD/#" marti/cli/configs/mappa_mathchat.yaml`);
    // The sed line, as sed -E runs it with $PWD = /cluster/repo:
    const fixed = load(files[CONFIG].split('\n').map((l) => l.replace(/(: "?)\.\//, '$1/cluster/repo/')).join('\n'));
    const paths = [fixed.prompt_data, fixed.extra_eval_dir, fixed.default_agent.pretrain, fixed.default_agent.save_path,
      fixed.default_agent.ckpt_path, fixed.workflow_func_path, fixed.tools_config.tools.code_interpreter.schema_path,
      ...fixed.agents.map((a: Y) => Object.values(a)[0].pretrain)];
    for (const p of paths) expect(p).toMatch(/^\/cluster\/repo\/(data|models|outputs|checkpoints|logs)\//);
    expect(() => exportMarti(resolveTrainConfig({}), { source: '/home/me/runs/a' })).toThrow(/absolute path/);
  });

  it.skipIf(!hasPyYaml)('PyYAML (YAML 1.1) reads the same values as the yaml library', () => {
    for (const mode of MODES) {
      const { files } = exported(resolveTrainConfig({ rewards: { mode }, lr: 1e-7 }), { bench: [bench] });
      const r = spawnSync('python3', ['-c', 'import sys, json, yaml; print(json.dumps(yaml.safe_load(sys.stdin.read())))'], { input: files[CONFIG] });
      expect(r.status, r.stderr.toString()).toBe(0);
      expect(JSON.parse(r.stdout.toString())).toEqual(parse(files[CONFIG]));
    }
  });
});

describe('export to MARTI: values, text and CLI', () => {
  it('writes YAML with the yaml library: floats stay floats, comments, OmegaConf-literal "${"', () => {
    expect([floatText(1), floatText(1e-6), floatText(0.25), floatText(2e-7)]).toEqual(['1.0', '1.0e-6', '0.25', '2.0e-7']);
    const text = martiYaml({ a: yfloat(1), s: 'x ${y}', yes: 'yes', m: { k: 1 } }, [{ path: ['a'], after: 'one' }, { path: ['m'], before: 'Section' }], ['head']);
    expect(text).toBe('# head\n\na: 1.0 # one\ns: x \\${y}\n"yes": "yes"\n\n# Section\nm:\n  k: 1\n');
    expect(load(text).a).toBe(1);
  });

  it('the process run: our values under their keys', () => {
    const config = resolveTrainConfig({ seed: 3, iterations: 20, promptsPerIteration: 8, samplesPerPrompt: 2, lr: 1e-3, evalEvery: 4 });
    const { files, y } = exported(config);
    expect(y.defaults).toEqual(['default', '_self_']);
    expect(y.workflow_args).toMatchObject({ reward_process_weight: 1, reward_outcome_weight: 0, coach_type: 'simple' });
    expect(y.workflow_args.coach_prompt_template).toContain('Agent: {agent_role}');
    expect(y.workflow_args.mappa_agent_prompts).toBeUndefined(); // the team is in the workflow file
    expect(files[WORKFLOW_FILE]).toContain(JSON.stringify(config.workflow.agents[1].system));
    expect(y.eval_workers).toBe(1n);
    expect([y.use_wandb, y.use_tensorboard]).toEqual([null, null]);
    expect(y.agents.map((a: object) => Object.keys(a)[0])).toEqual(['agent_problem_solver', 'agent_code_executor', 'agent_verifier']);
    expect(y.default_agent).toMatchObject({
      pretrain: './models/mappa/base', seed: 3n, advantage_estimator: 'reinforce_plus_plus', init_kl_coef: 0.01, eps_clip: 0.2,
      actor_learning_rate: 1e-6, rollout_batch_size: 8n, n_samples_per_prompt: 2n, train_batch_size: 16n, max_samples: 160n,
      num_episodes: 1n, temperature: 1, eval_temperature: 0.6, generate_max_len: 96n, eval_steps: 4n, n_eval_samples_per_prompt: 2n,
    });
  });

  it('outcome runs need no coach keys; the shipped workflow reads the reward weights their stock code leaves unread', () => {
    const outcome = exported(resolveTrainConfig({ rewards: { mode: 'outcome' } }));
    expect(outcome.y.workflow_args.coach_model).toBeUndefined();
    expect(outcome.y.workflow_args.reward_process_weight).toBe(0);
    expect(outcome.files['README.md']).toMatch(/rewarded 1 when the team's final answer is right/);
    const mixed = exported(resolveTrainConfig({ rewards: { mode: 'mixed', processWeight: 0.7 } }));
    expect(mixed.y.workflow_args).toMatchObject({ reward_process_weight: 0.7, reward_outcome_weight: 0.3 });
    expect(fixture.facts.rewardWeightsRead.value).toBe(false);
    expect(mixed.files[WORKFLOW_FILE]).toContain('float(args.get("reward_process_weight", 1.0))');
    expect(mixed.files['README.md']).not.toContain('trains as a process run');
    expect(exported(resolveTrainConfig({ update: { whitening: 'group' } })).y.default_agent.advantage_estimator).toBe('group_norm');
  });

  it('translates the coach template to str.format placeholders, doubling literal braces', () => {
    expect(toMartiCoachTemplate('P: {{problem}} R: {{role}} I: {{input}} O: {{output}} T: {{observation}}{{facts}} \\boxed{x}'))
      .toBe('P: {problem} R: {agent_role} I: {agent_input} O: {agent_output} T: {tool_observation} \\boxed{{x}}');
    expect(() => toMartiCoachTemplate('{{nope}}')).toThrow(/placeholder \{\{nope\}\} has no MARTI counterpart/);
  });

  it('train.jsonl is the curriculum\'s pool (level 0: the mixed pool); the README says what runs and what was not checked', () => {
    const { files } = exported(resolveTrainConfig({ curriculum: { poolSize: 5 } }));
    const rows = files['train.jsonl'].trim().split('\n').map((l) => JSON.parse(l));
    const mixed = generateMathTasks({ seed: 'train:0:L0', count: 25 });
    expect(rows).toHaveLength(25);
    expect(rows[10]).toEqual({ prompt: mixed[10].problem, answer: mixed[10].answer, metadata: { id: mixed[10].id, level: mixed[10].level } });
    const levels = exported(resolveTrainConfig({ promptsPerIteration: 4, curriculum: { poolSize: 5, startLevel: 2, adaptLevel: false } })).files['train.jsonl'];
    expect(levels.trim().split('\n').map((l) => JSON.parse(l).metadata.level)).toEqual(Array(5).fill(2));
    expect(files['heldout.jsonl'].trim().split('\n')).toHaveLength(200);
    for (const s of ['python -m marti.cli.commands.train --config-name mappa_mathchat', `git checkout ${MARTI_COMMIT}`, 'What then runs on the cluster', 'Not run anywhere here']) {
      expect(files['README.md']).toContain(s);
    }
  });

  it('refuses what their trainer would refuse, by name', () => {
    const two = resolveTrainConfig({ workflow: { ...MATH_CHAIN, agents: [MATH_CHAIN.agents[0], { ...MATH_CHAIN.agents[2], user: '{{problem}}' }] } });
    expect(() => exportMarti(two, { source: 'x' })).toThrow(MartiExportError);
    expect(() => exportMarti(two, { source: 'x' })).toThrow(/fixed chain of 3 agents .* this one has 2/);
    expect(() => exportMarti(resolveTrainConfig({}), { source: 'x', gpusPerAgent: 2 })).toThrow(/--gpus-per-agent 2: agent "executor" takes 1 to 2 actions/);
    const fits = exported(resolveTrainConfig({ promptsPerIteration: 6, samplesPerPrompt: 1 })).y.default_agent;
    // micro 1: the Executor takes 1 or 2 actions, and their PPO loop drops a last partial micro-batch (marti-batches.test.ts).
    expect([fits.train_batch_size, fits.micro_train_batch_size]).toEqual([6n, 1n]);
  });

  it('the CLI exports a run folder given by absolute path: adapters named, bench sets written, no absolute path', async () => {
    const tmp = mkdtempSync(path.join(os.tmpdir(), 'mappa-export-'));
    const run = path.join(tmp, 'run');
    mkdirSync(path.join(run, 'adapters', 'executor'), { recursive: true });
    writeFileSync(path.join(run, 'config.json'), JSON.stringify({ iterations: 4 }));
    writeFileSync(path.join(run, 'adapters', 'executor', 'adapter_config.json'), '{}');
    const action = (agent: string, n: number) => ({ agent, tokens: Array(n).fill(7), input: [{ role: 'user', content: 'Problem: 1+1?' }] });
    writeFileSync(path.join(run, 'trajectories.jsonl'), `${JSON.stringify({ actions: [action('solver', 30), action('executor', 12), action('verifier', 6)] })}\n`);
    mkdirSync(path.join(tmp, 'bench'));
    writeFileSync(path.join(tmp, 'bench', 'amc23.jsonl'), '{"id":0,"problem":"1+1?","answer":2.0}\n');
    const out = path.join(tmp, 'out');
    const { stdout } = await promisify(execFile)(process.execPath, ['bin/mappa.js', 'export', '--target', 'marti', run, '--bench', path.join(tmp, 'bench'), '--out', out], { cwd: repoRoot });
    expect(stdout.trim()).toBe(out);
    const y = load(readFileSync(path.join(out, CONFIG), 'utf8'));
    expect(y.agents[1].agent_code_executor.pretrain).toBe('./models/mappa/executor');
    expect(y.extra_eval_tasks).toEqual(['heldout', 'amc23']);
    expect(JSON.parse(readFileSync(path.join(out, 'amc23.jsonl'), 'utf8'))).toMatchObject({ prompt: '1+1?', answer: '2' });
    expect(strings(y).filter(isAbsolutePath)).toEqual([]);
    const readme = readFileSync(path.join(out, 'README.md'), 'utf8');
    expect(readme).toContain('/adapters/executor --out "$EXPORT/models/executor"');
    expect(readme).toMatch(/measured: \S*trajectories\.jsonl, 1 trajectories\): solver 1 action\(s\) x 30 tokens \(prompt \d+/);
    expect(JSON.parse(readFileSync(path.join(out, GENERATION_CONFIG_FILE), 'utf8')).eos_token_id).toBe(2);
    for (const f of [WORKFLOW_FILE, LAUNCHER_FILE]) expect(readFileSync(path.join(out, f), 'utf8')).toMatch(/^"{3}\n/);
    await expect(promisify(execFile)(process.execPath, ['bin/mappa.js', 'export', '--target', 'verl'], { cwd: repoRoot }))
      .rejects.toMatchObject({ stderr: expect.stringMatching(/--target must be "marti"/) });
  }, 300_000);
});
