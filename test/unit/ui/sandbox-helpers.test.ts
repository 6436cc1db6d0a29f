// The page's pure helpers: the experiment in the URL, credit assignment under each reward mode,
// and the worker's export formats (metrics CSV, adapter uploads). Hand-worked expectations.
import { describe, expect, it } from 'vitest';
import { zipSync } from 'fflate';
import { readUrl, setPath, urlFor } from '../../../src/ui/url-config.ts';
import { batchAdvantages, rewardUnder } from '../../../src/core/lab/credit-per-action.ts';
import { codeBlocks } from '../../../src/ui/credit.ts';
import { adapterFiles, metricsCsv } from '../../../src/core/lab/transfer.ts';
import type { ActionView, TrajectoryView } from '../../../src/core/lab/views.ts';

const action = (agentId: string, score: number): ActionView => ({ agentId, role: agentId, turn: 1, messages: [], text: '', tokens: 1, truncated: false, coach: { raw: '', score, ok: true, attempts: 1 } });
const traj = (correct: boolean, scores: number[]): TrajectoryView => ({
  task: { id: 't', problem: 'p', answer: '1' }, sample: 0, finalAnswer: correct ? '1' : '2', correct,
  actions: scores.map((s, i) => action(['solver', 'executor', 'verifier'][i], s)),
});

describe('url-config', () => {
  it('round-trips the config patch, backend and coach through the URL', () => {
    const href = urlFor('http://127.0.0.1:4173/?x=1', { backend: 'webgpu', config: { seed: 3, rewards: { mode: 'outcome' } }, webllm: 'm-q4f32_1-MLC' });
    const back = readUrl(href);
    // A parameter the page does not read is kept in the link and named, never dropped in silence; ?seed= says where a setting goes.
    expect(back).toEqual({ backend: 'webgpu', webllm: 'm-q4f32_1-MLC', config: { seed: 3, rewards: { mode: 'outcome' } },
      error: 'the link\'s ?x=1 is not a parameter of this page (it reads ?team=, ?agents=, ?config=, ?configz=, ?backend=, ?baseline=, ?limits=, ?coach=, ?run=); it was ignored' });
    expect(new URL(href).searchParams.get('x')).toBe('1');
    expect(readUrl('http://h/?seed=abc').error).toBe('the link\'s ?seed=abc is refused: a setting goes in ?config=, e.g. ?config={"seed":0}, '
      + 'or in Settings → seed; using the default seed');
    expect(readUrl('http://h/?run=relay-2-process-seed0-x1').run).toBe('relay-2-process-seed0-x1');
    expect(readUrl('http://h/?baseline=0').baseline).toBe(false);
    expect(readUrl('http://h/?backend=webgpu&limits=default')).toMatchObject({ backend: 'webgpu', webgpuLimits: 'default' });
    expect(readUrl('http://h/?limits=huge').webgpuLimits).toBeUndefined();
  });
  it('reports an unreadable ?config= instead of throwing', () => {
    const s = readUrl('http://h/?config=%7Bnot-json');
    expect(s.config).toEqual({});
    expect(s.error).toMatch(/\?config= is not a JSON object/);
  });
  it('setPath copies along the dotted path', () => {
    const a = { rewards: { mode: 'process' }, seed: 1 };
    const b = setPath(a, 'rewards.shaping', true);
    expect(b).toEqual({ rewards: { mode: 'process', shaping: true }, seed: 1 });
    expect(a.rewards).toEqual({ mode: 'process' });
  });
});

describe('credit assignment', () => {
  it('process blames the low-scored agent, outcome blames everyone alike', () => {
    const t = traj(false, [9, 8, 2]);
    expect(t.actions.map((a) => rewardUnder('process', 0.5, t, a))).toEqual([0.9, 0.8, 0.2]);
    expect(t.actions.map((a) => rewardUnder('outcome', 0.5, t, a))).toEqual([0, 0, 0]);
    expect(rewardUnder('mixed', 0.5, t, t.actions[0])).toBeCloseTo(0.45);
  });
  it('advantages are whitened over the whole batch', () => {
    // rewards 0 and 1 -> mean 0.5, std 0.5 -> -1, +1
    const adv = batchAdvantages([traj(false, [0]), traj(true, [10])], (t, a) => rewardUnder('process', 0.5, t, a));
    expect(adv[0][0]).toBeCloseTo(-1, 6);
    expect(adv[1][0]).toBeCloseTo(1, 6);
  });
  it('finds the code blocks an agent ran', () => {
    expect(codeBlocks('x\n```python\nprint(1)\n```\ny')).toEqual([{ lang: 'python', code: 'print(1)' }]);
  });
});

describe('exports', () => {
  it('writes one CSV row per record with per-agent columns', () => {
    const csv = metricsCsv([{ iteration: 0, eval: { greedy: 0.25, sampled: 0.5, tasks: 4 } },
      { iteration: 1, trainAccuracy: 0.5, meanReward: 0.3, kl: 0.01, trajectories: 2, rolloutTokensPerSecond: 10, updateTokensPerSecond: 5,
        seconds: { rollout: 1, coach: 0, update: 2, eval: 0, checkpoint: 0 }, coach: { calls: 1, failures: 0, cached: 0 },
        filters: { skippedAlwaysSolved: 0, skippedNeverSolved: 0, droppedCoachFailures: 0, level: 1 },
        perAgent: { solver: { meanScore: 7, reward: 0.7, loss: 0.1, kl: 0.02, entropy: 0, clipFraction: 0, gradNorm: 0, samples: 2, skippedSteps: 0 } } }]);
    const [head, r0, r1] = csv.trim().split('\n');
    expect(head.split(',').slice(-4)).toEqual(['solver_score', 'solver_reward', 'solver_loss', 'solver_kl']);
    expect(r0.split(',').slice(0, 6)).toEqual(['0', '', '', '', '0.25', '0.5']);
    expect(r1.split(',').slice(-4)).toEqual(['7', '0.7', '0.1', '0.02']);
  });
  it('takes an adapter from a zip with a folder inside, or from loose files', () => {
    const files = { 'adapter_config.json': new Uint8Array([123, 125]), 'adapter_model.safetensors': new Uint8Array([1]) };
    const zip = zipSync({ solver: files });
    expect(Object.keys(adapterFiles({ 'a.zip': zip })).sort()).toEqual(['adapter_config.json', 'adapter_model.safetensors']);
    expect(Object.keys(adapterFiles(files)).sort()).toEqual(['adapter_config.json', 'adapter_model.safetensors']);
    expect(() => adapterFiles({ 'x.bin': new Uint8Array(1) })).toThrow(/adapter_config.json/);
  });
});
