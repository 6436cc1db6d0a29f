/**
 * `mappa export --target marti`: the YAML, read back with the `yaml` parser (and PyYAML where
 * python3 has it), checked against test/fixtures/marti/multiagent-coaching-ed66921.json (the
 * authors' config keys, types, workflow files and run-path facts at that commit), for process,
 * outcome and mixed exports; the coach template, datasets, README and CLI.
 */
import { execFile, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { resolveTrainConfig, type TrainConfig } from '../../../src/core/loop/config.ts';
import { MATH_CHAIN } from '../../../src/core/domains/math/index.ts';
import { generateMathTasks } from '../../../src/core/domains/math/tasks.ts';
import {
  exportMarti, MARTI_COMMIT, MARTI_WORKFLOWS, MartiExportError, toMartiCoachTemplate, type MartiExportOptions,
} from '../../../src/interop/marti.ts';
import { floatText, martiYaml, yfloat } from '../../../src/interop/marti-yaml.ts';

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
    ...keyProblems(y.workflow_args, keys.workflow_args, 'workflow_args', ['mappa_agent_prompts']),
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

describe('export to MARTI, checked against the authors\' trainer at the fixture\'s commit', () => {
  it('the fixture and the export name the same commit', () => {
    expect(MARTI_COMMIT).toBe(fixture.commit);
    expect(fixture.workflowFiles.length).toBeGreaterThan(10);
  });

  for (const mode of MODES) {
    it(`${mode} export: every key theirs, with their type; bf16, no LoRA; workflow files at the commit`, () => {
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
      // Workflow files: in the fixture's listing, for this mode and for every mode.
      for (const f of [y.workflow_func_path, y.processor_func_path]) expect(fixture.workflowFiles).toContain(f);
      expect(Object.keys(fixture.absentFiles)).not.toContain(y.workflow_func_path);
      expect(y.workflow_func_path).toBe(MARTI_WORKFLOWS[mode].workflow);
      // Hardware and batches their checks would refuse.
      const actorGpus = Number(da.actor_num_nodes * da.actor_num_gpus_per_node);
      expect(actorGpus & (actorGpus - 1)).toBe(0);
      expect(BigInt(actorGpus)).toBe(da.vllm_num_engines * da.vllm_tensor_parallel_size);
      expect(da.train_batch_size % (da.micro_train_batch_size * BigInt(actorGpus))).toBe(0n);
      expect(Number(da.prompt_max_len + da.generate_max_len)).toBeLessThanOrEqual(2048);
      expect(files['README.md']).toContain(fixture.commit);
    });
  }

  it('every workflow and processor any mode names exists at the commit', () => {
    for (const mode of MODES) {
      expect(fixture.workflowFiles).toContain(MARTI_WORKFLOWS[mode].workflow);
      expect(fixture.workflowFiles).toContain(MARTI_WORKFLOWS[mode].processor);
    }
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
      fixed.default_agent.ckpt_path, fixed.use_tensorboard, fixed.tools_config.tools.code_interpreter.schema_path,
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
    const { y } = exported(config);
    expect(y.defaults).toEqual(['default', '_self_']);
    expect(y.workflow_args).toMatchObject({ generator_max_turns: 1n, coder_max_turns: 2n, refiner_max_turns: 1n, reward_process_weight: 1, reward_outcome_weight: 0, coach_type: 'simple' });
    expect(y.workflow_args.coach_prompt_template).toContain('Agent: {agent_role}');
    expect(y.workflow_args.mappa_agent_prompts.agent_code_executor.system).toBe(MATH_CHAIN.agents[1].system);
    expect(y.agents.map((a: object) => Object.keys(a)[0])).toEqual(['agent_problem_solver', 'agent_code_executor', 'agent_verifier']);
    expect(y.default_agent).toMatchObject({
      pretrain: './models/mappa/base', seed: 3n, advantage_estimator: 'reinforce_plus_plus', init_kl_coef: 0.01, eps_clip: 0.2,
      actor_learning_rate: 1e-6, rollout_batch_size: 8n, n_samples_per_prompt: 2n, train_batch_size: 16n, max_samples: 160n,
      num_episodes: 1n, temperature: 1, eval_temperature: 0.6, generate_max_len: 96n, eval_steps: 4n, n_eval_samples_per_prompt: 2n,
    });
  });

  it('outcome runs use their rule-based workflow without coach keys; mixed says its weights are unread', () => {
    const outcome = exported(resolveTrainConfig({ rewards: { mode: 'outcome' } }));
    expect(outcome.y.workflow_args.coach_model).toBeUndefined();
    expect(outcome.files['README.md']).toMatch(/grades each agent's own answer/);
    const mixed = exported(resolveTrainConfig({ rewards: { mode: 'mixed', processWeight: 0.7 } }));
    expect(mixed.y.workflow_args).toMatchObject({ reward_process_weight: 0.7, reward_outcome_weight: 0.3 });
    expect(fixture.facts.rewardWeightsRead.value).toBe(false);
    expect(mixed.files['README.md']).toContain('this mixed run trains as a process run');
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
    for (const s of ['python -m marti.cli.commands.train --config-name mappa_mathchat', `git checkout ${MARTI_COMMIT}`, 'What then runs on the cluster', 'Not checked: no GPU and no Python trainer ran here']) {
      expect(files['README.md']).toContain(s);
    }
  });

  it('refuses what their trainer would refuse, by name', () => {
    const two = resolveTrainConfig({ workflow: { ...MATH_CHAIN, agents: [MATH_CHAIN.agents[0], { ...MATH_CHAIN.agents[2], user: '{{problem}}' }] } });
    expect(() => exportMarti(two, { source: 'x' })).toThrow(MartiExportError);
    expect(() => exportMarti(two, { source: 'x' })).toThrow(/fixed chain of 3 agents .* this one has 2/);
    expect(() => exportMarti(resolveTrainConfig({ promptsPerIteration: 3, samplesPerPrompt: 1 }), { source: 'x' })).toThrow(/cannot be split over 2 actor GPUs/);
    const fits = exported(resolveTrainConfig({ promptsPerIteration: 6, samplesPerPrompt: 1 })).y.default_agent;
    expect([fits.train_batch_size, fits.micro_train_batch_size]).toEqual([6n, 3n]);
  });

  it('the CLI exports a run folder given by absolute path: adapters named, bench sets written, no absolute path', async () => {
    const tmp = mkdtempSync(path.join(os.tmpdir(), 'mappa-export-'));
    const run = path.join(tmp, 'run');
    mkdirSync(path.join(run, 'adapters', 'executor'), { recursive: true });
    writeFileSync(path.join(run, 'config.json'), JSON.stringify({ iterations: 4 }));
    writeFileSync(path.join(run, 'adapters', 'executor', 'adapter_config.json'), '{}');
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
    expect(readFileSync(path.join(out, 'README.md'), 'utf8')).toContain('/adapters/executor --out "$EXPORT/models/executor"');
    await expect(promisify(execFile)(process.execPath, ['bin/mappa.js', 'export', '--target', 'verl'], { cwd: repoRoot }))
      .rejects.toMatchObject({ stderr: expect.stringMatching(/--target must be "marti"/) });
  }, 60_000);
});
