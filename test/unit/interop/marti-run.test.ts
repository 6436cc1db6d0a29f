/**
 * The MARTI export's Python files, run with python3 against stand-ins for the authors' trainer
 * (marti-standins.py, written from the interfaces in test/fixtures/marti/multiagent-coaching-ed66921.json):
 * - mappa_workflow.py, called as their wrapper calls it, gives every agent the messages the sandbox's
 *   rollout gives it on the same task and replies, the sandbox's rewards, and what their processor reads;
 * - mappa_train.py lets their save_logs' TensorBoard loop log a step's nested values, where the plain
 *   writer fails as torch does.
 * Skipped where python3 is absent (the export test's TypeScript checks still run).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { type TrainConfig } from '../../../src/core/loop/config.ts';
import { resolveTrainConfig, teamOf } from '../../../src/core/domains/index.ts';
import { agentReward } from '../../../src/core/loop/rewards.ts';
import { runRollouts } from '../../../src/core/loop/rollout.ts';
import { type Trajectory } from '../../../src/core/loop/trajectory.ts';
import type { AgentBackend, GenerationRequest, GenerationResult } from '../../../src/core/loop/agents.ts';
import type { Sandbox } from '../../../src/core/tools/sandbox.ts';
import { folderSource } from '../../../src/core/engine/model/sources.ts';
import { TextTokenizer } from '../../../src/core/engine/tokenizer/tokenizer.ts';
import { exportMarti, LAUNCHER_FILE, WORKFLOW_FILE } from '../../../src/interop/marti.ts';
import { answersEqual } from '../../../src/core/tasks/answers.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, '../../..');
const fixture = JSON.parse(readFileSync(path.join(repoRoot, 'test/fixtures/marti/multiagent-coaching-ed66921.json'), 'utf8'));
const PYTHON = spawnSync('python3', ['--version']).status === 0;
const ROLES = ['agent_problem_solver', 'agent_code_executor', 'agent_verifier'];

/** The problem and what each agent replies, turn by turn (the executor runs code, then answers). */
const TASK = { id: 't1', problem: 'A box holds 12 pens. How many pens are in 3 boxes?', answer: '36' };
const REPLIES: Record<string, string[]> = {
  solver: ['12 * 3 = 36\nAnswer: 36'],
  executor: ['Checking:\n```python\nprint(12 * 3)\n```', 'Result: 36'],
  verifier: ['\\boxed{36}'],
};
const STDOUT = '36';
const SCORES: Record<string, number> = { 'Problem Solver': 7, 'Code Executor': 4, Verifier: 9 };

/** Runs marti-standins.py on a job; its JSON answer. */
function python(job: Record<string, unknown>): any {
  const r = spawnSync('python3', [path.join(here, 'marti-standins.py')], { input: JSON.stringify(job), encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

/** The export's files in a fresh folder. */
function exportTo(config: TrainConfig): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'mappa-marti-run-'));
  for (const [name, text] of Object.entries(exportMarti(config, { source: 'runs/x' }).files)) writeFileSync(path.join(dir, name), text);
  return dir;
}

/** The sandbox's rollout of TASK with the same replies and code output. */
async function sandboxRollout(config: TrainConfig): Promise<Trajectory> {
  const left = Object.fromEntries(Object.entries(REPLIES).map(([id, r]) => [id, [...r]]));
  const agents: AgentBackend = {
    trainable: false,
    async generate(agentId: string, requests: GenerationRequest[]): Promise<GenerationResult[]> {
      return requests.map(() => ({ promptText: '', promptTokens: [], tokens: [1], logprobs: [0], text: left[agentId].shift()!, truncated: false }));
    },
  };
  const python: Sandbox = { run: async () => ({ ok: true, stdout: `${STDOUT}\n`, stderr: '', durationMs: 1 }), dispose: async () => {} };
  const [t] = await runRollouts(config.workflow, [TASK], { agents, tools: { python }, samplesPerTask: 1, temperature: 1, seed: 0, outcome: teamOf(config.workflow).outcome });
  return t;
}

/** The shipped workflow on TASK, called with the keyword arguments of their wrapper (fixture workflowInterface.call). */
function shippedRun(config: TrainConfig, dir: string, isEval: boolean) {
  const y = config.workflow.agents;
  const args = config.rewards.mode === 'process' ? 1 : config.rewards.mode === 'outcome' ? 0 : config.rewards.processWeight;
  return python({
    kind: 'workflow', workflow: path.join(dir, WORKFLOW_FILE), kwargs: fixture.workflowInterface.call.kwargs, roles: ROLES,
    replies: y.map((a) => REPLIES[a.id]), stdout: STDOUT, problem: TASK.problem, label: TASK.answer, is_eval: isEval, scores: SCORES,
    generate_max_len: Math.max(...y.map((a) => a.maxTokens)),
    workflow_args: { reward_process_weight: args, enable_ground_truth_eval: true, coach_model: 'gemini-2.5-flash', coach_prompt_template: '{problem}' },
  });
}

describe.skipIf(!PYTHON)(`the exported workflow and launcher, run with python3${PYTHON ? '' : ' (skipped: python3 not found)'}`, () => {
  it('one agent\'s first message, rendered by the shipped workflow, equals the sandbox\'s for the same task', async () => {
    const config = resolveTrainConfig({});
    const dir = exportTo(config);
    const t = await sandboxRollout(config);
    const executor = t.actions.find((a) => a.agentId === 'executor' && a.turn === 1)!;
    const code = `import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("workflow", sys.argv[1]); m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
print(json.dumps(m.first_messages(1, sys.argv[2], {"solver": sys.argv[3]})))`;
    const r = spawnSync('python3', ['-c', code, path.join(dir, WORKFLOW_FILE), TASK.problem, REPLIES.solver[0]], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(executor.messages);
    expect(executor.messages[0].content).toContain('agent 2 of 3 in a team: Problem Solver -> Code Executor -> Verifier');
  });

  for (const mode of ['process', 'outcome', 'mixed'] as const) {
    it(`${mode}: every action's messages, budget and reward are the sandbox's; the result is what their processor reads`, async () => {
      const config = resolveTrainConfig({ rewards: { mode, processWeight: 0.7 } });
      const dir = exportTo(config);
      const t = await sandboxRollout(config);
      const { result, generations, tools, coach } = shippedRun(config, dir, false);
      const turns = result.trajectory;
      // The sandbox's conversation, action by action.
      expect(turns.map((x: any) => [x.metadata.agent, x.metadata.turn])).toEqual(t.actions.map((a) => [a.agentId, a.turn]));
      turns.forEach((x: any, i: number) => expect(x.metadata.messages).toEqual(t.actions[i].messages));
      expect(tools).toEqual([{ tool: 'code_interpreter', code: 'print(12 * 3)' }]);
      expect(turns.map((x: any) => x.metadata.observation ?? undefined)).toEqual(t.actions.map((a) => a.observation));
      // Each agent's budget, at least 1 token (their packing asserts output_len > 1); the stop text kept in the trained output.
      expect(generations.map((g: any) => g.max_tokens)).toEqual(t.actions.map((a) => config.workflow.agents.find((s) => s.id === a.agentId)!.maxTokens));
      expect(generations.every((g: any) => g.min_tokens === 1)).toBe(true);
      expect(turns.every((x: any) => x.agent_output.endsWith('<|im_end|>'))).toBe(true);
      // Rewards: the sandbox's, x 10 for mathchat_processor (fixture facts.mathchatProcessorScale).
      expect(t.correct).toBe(true);
      const scale = fixture.facts.mathchatProcessorScale.value;
      turns.forEach((x: any, i: number) => {
        const spec = config.workflow.agents.find((s) => s.id === t.actions[i].agentId)!;
        expect(x.agent_reward / scale).toBeCloseTo(agentReward(config.rewards, t, mode === 'outcome' ? 0 : SCORES[spec.role]), 10);
      });
      expect(coach.map((c: any) => c.role)).toEqual(mode === 'outcome' ? [] : ['Problem Solver', 'Code Executor', 'Verifier']);
      if (mode !== 'outcome') {
        expect(coach[1].output).toBe(REPLIES.executor.join('\n'));
        expect(coach[1].context.tool_observation).toBe(t.actions[1].observation);
        expect(coach.map((c: any) => c.ground_truth)).toEqual([null, null, TASK.answer]);
      }
      // Their interface: the keys their world and processor read.
      expect(Object.keys(result).sort()).toEqual([...fixture.workflowInterface.returns.value].sort());
      for (const x of turns) for (const k of fixture.workflowInterface.processorTurnKeys.value) expect(x).toHaveProperty(k);
      expect(turns.map((x: any) => x.agent_index)).toEqual([0, 1, 1, 2]);
      expect(turns.map((x: any) => x.agent_role)).toEqual(['agent_problem_solver', 'agent_code_executor', 'agent_code_executor', 'agent_verifier']);
      expect(result.outcome_score).toBe(1);
    });
  }

  it('the model saw its messages through the shipped chat template; evaluation calls no coach', async () => {
    const config = resolveTrainConfig({});
    const dir = exportTo(config);
    const tok = await TextTokenizer.fromSource(folderSource(path.join(repoRoot, 'models/agent')));
    const train = shippedRun(config, dir, false);
    for (const x of train.result.trajectory) expect(x.agent_input).toBe(tok.applyChatTemplate(x.metadata.messages, { addGenerationPrompt: true }));
    const evaluation = shippedRun(config, dir, true);
    expect(evaluation.coach).toEqual([]);
    expect(evaluation.created).toEqual([]);
    expect(evaluation.result.outcome_score).toBe(1);
    expect(fixture.evaluation.accuracyFrom.value).toMatch(/^outcome_score/);
  });

  it('the launcher writes each number save_logs receives (dicts and lists flattened, None left out) and refuses use_tensorboard', () => {
    const dir = exportTo(resolveTrainConfig({}));
    const sample = (type: string): unknown => (type === 'int' ? 3 : type === 'float' ? 0.5 : null);
    const logs: Record<string, unknown> = Object.fromEntries(fixture.saveLogs.stepKeys.map((k: any) => [k.key.replace(/<(\w+)>/g, '$1'),
      k.type === 'map' ? Object.fromEntries(Object.entries(k.fields).map(([f, t]) => [f, sample((t as string).split('|').pop()!)])) : sample(k.type)]));
    logs.per_prompt = [1, { right: 0.25 }, null];
    const job = { kind: 'launcher', launcher: path.join(dir, LAUNCHER_FILE), eval_logs: { 'eval/reward': 0.5, 'eval/acc_heldout': 0.25 }, logs,
      perf: { generate_time: 2 }, argv: ['--config-name', 'mappa_mathchat'] };
    const out = python(job);
    expect(out.writers).toBe(1);
    expect(out.log_dir).toBe(path.resolve('logs/mappa-math-chain-process-seed0'));
    const tags = out.scalars.map((s: [string, number, number]) => s[0]);
    expect(out.scalars.slice(0, 2)).toEqual([['eval/reward', 0.5, 0], ['eval/acc_heldout', 0.25, 0]]);
    expect(tags).toContain('train/_rollout_metadata/total');
    expect(tags).not.toContain('train/_rollout_metadata/accuracy'); // None is left out
    expect(tags).toEqual(expect.arrayContaining(['train/per_prompt/0', 'train/per_prompt/1/right', 'perf/experience_maker/generate_time']));
    expect(tags).not.toContain('train/per_prompt/2');
    expect(out.refused).toBeNull();
    const refused = python({ ...job, argv: ['use_tensorboard=/x'] }).refused;
    expect(refused).toMatch(/^mappa_train.py: remove use_tensorboard=\/x: their use_tensorboard path stops at build/);
  });

  it('the workflow grades answers as the sandbox does (answersEqual, ported)', () => {
    const dir = exportTo(resolveTrainConfig({}));
    const pairs: [string, string][] = [
      ['36', '36'], ['36.0', '36'], ['\\frac{1}{2}', '0.5'], ['0.333', '\\frac{1}{3}'], ['-3', '3'], ['1,000', '1000'], ['\\$42', '42'],
      ['\\left( \\frac{3}{2}, -13 \\right)', '(1.5,-13)'], ['(1,2)', '[1,2]'], ['42 apples', '42'], ['x = 5', '5'], ['Navin', 'navin'],
      ['1\\frac{4}{5}', '9/5'], ['\\text{(C)}', 'C'], ['90^\\circ', '90'], ['15\\%', '15'], ['\\sqrt2', '\\sqrt{2}'], ['', ''],
      ['\\dfrac{6}{8}', '3/4'], ['2\\sqrt{2}', '\\sqrt{8}'], ['5 cm^2', '5'], ['\\text{east}', 'East'], ['1/0', '1/0'],
    ];
    const out = python({ kind: 'answers', workflow: path.join(dir, WORKFLOW_FILE), pairs });
    expect(out.equal).toEqual(pairs.map(([a, b]) => answersEqual(a, b)));
    expect(out.equal.filter(Boolean).length).toBeGreaterThan(10);
  });
});
