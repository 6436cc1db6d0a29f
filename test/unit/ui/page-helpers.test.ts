// The page's explanatory helpers: which trajectory process and outcome credit disagree on most,
// readable trajectory labels, the backend sentence, compact tick labels, the held-out accuracy's
// Wilson intervals and which saved runs are overlaid. Hand-worked expectations.
import { describe, expect, it } from 'vitest';
import { creditGaps, culprits, mostDisputed } from '../../../src/core/lab/credit-per-action.ts';
import { trajectoryLabels } from '../../../src/ui/credit.ts';
import * as backendPanel from '../../../src/ui/components/BackendPanel.svelte';
import * as chart from '../../../src/ui/components/Chart.svelte';
import * as charts from '../../../src/ui/components/Charts.svelte';
import { type TrainConfig } from '../../../src/core/loop/config.ts';
import { resolveTrainConfig } from '../../../src/core/domains/index.ts';
import { DATA_TEAM_SETTINGS } from '../../../src/core/domains/data/team.ts';
import type { BackendInfo } from '../../../src/core/engine/backend.ts';
import type { EvalResult } from '../../../src/core/loop/records.ts';
import type { ActionView, TrajectoryView } from '../../../src/core/lab/views.ts';

// The components' <script module> exports (tsc types a .svelte import as its default export only).
type Overlay = { runId: string; label: string; mode: string; sharesBaseline?: boolean; metrics: { iteration: number; eval?: EvalResult }[] };
type SavedRun = { runId: string; label: string; config: unknown; iteration: number; updatedAt: number; team: { name: string; domain: string } | null; metrics: { iteration: number; eval?: EvalResult }[] };
const { backendNotice, whereItRuns } = backendPanel as unknown as {
  backendNotice(info: BackendInfo, lanes?: number): string | null;
  whereItRuns(info: BackendInfo, lanes?: number): string;
};
const { formatTicks } = chart as unknown as { formatTicks(splits: number[], incr?: number): string[] };
const { evalPoint, overlayLabel, overlayLines, pickOverlays, settingsDiff, xRangeOf } = charts as unknown as {
  overlayLabel(label: string, mode: string, diff: string, sharesBaseline: boolean): string;
  evalPoint(r: EvalResult | undefined, which: 'greedy' | 'sampled'): { value: number | null; low: number | null; high: number | null; note: string | null };
  overlayLines(overlays: Overlay[], runId: string, max?: number): { label: string; mode: string; sharesBaseline: boolean; evals: Map<number, EvalResult> }[];
  xRangeOf(first: number, iterations: number | undefined, last: number): [number, number];
  pickOverlays(runs: SavedRun[], config: TrainConfig | null, runId: string, patch?: unknown): Overlay[];
  settingsDiff(saved: unknown, current: unknown, max?: number): string;
};

const action = (agentId: string, score: number): ActionView => ({ agentId, role: agentId, turn: 1, messages: [], text: '', tokens: 1, truncated: false, coach: { raw: '', score, ok: true, attempts: 1 } });
const traj = (id: string, sample: number, correct: boolean, scores: number[]): TrajectoryView => ({
  task: { id, problem: 'p', answer: '1' }, sample, finalAnswer: correct ? '1' : '2', correct,
  actions: scores.map((s, i) => action(['solver', 'executor', 'verifier'][i], s)),
});

describe('credit: where process and outcome disagree', () => {
  it('picks the wrong trajectory whose solver did well (process credits it, outcome blames it)', () => {
    const batch = [traj('a', 0, true, [5, 5, 5]), traj('a', 1, false, [10, 9, 0]), traj('b', 0, false, [1, 1, 1])];
    const g = mostDisputed(batch, 0.5)!;
    expect(g.index).toBe(1);
    expect(g.action).toBe(0); // the solver's 10: far above the batch mean under process, 0 under outcome
    expect(g.process).toBeGreaterThan(0);
    expect(g.outcome).toBeLessThan(0);
    expect(g.gap).toBeCloseTo(g.process - g.outcome, 12);
    const gaps = creditGaps(batch, 0.5);
    expect(gaps).toHaveLength(3);
    expect(Math.max(...gaps.map((x) => x.gap))).toBe(g.gap);
  });
  it('has nothing to show for an empty batch', () => {
    expect(mostDisputed([], 0.5)).toBeNull();
  });
  it('labels tabs by problem and sample number, keeping the raw id for the tooltip', () => {
    const batch = [traj('math-L3:0:L0-388', 0, false, [1]), traj('math-L3:0:L0-388', 1, true, [1]), traj('x/7', 0, false, [1])];
    expect(trajectoryLabels(batch)).toEqual([
      { label: 'problem 1 · sample 1 · ✗ wrong (solver)', title: 'math-L3:0:L0-388 #0' },
      { label: 'problem 1 · sample 2 · ✓ right', title: 'math-L3:0:L0-388 #1' },
      { label: 'problem 2 · sample 1 · ✗ wrong (solver)', title: 'x/7 #0' },
    ]);
    // A leaf of a tree of replays (reward counterfactual) names the reply of each agent it continues.
    expect(trajectoryLabels([{ ...traj('a', 0, true, [10]), branch: [0, 1, 0] }])[0]).toEqual({
      label: 'problem 1 · sample 1 · branch 1.2.1 · ✓ right',
      title: 'a #0; in the tree of replays, the reply of each agent this leaf continues: 1, 2, 1',
    });
  });
  it('shows a failure with a single culprit, not a right trajectory with wrong agents', () => {
    // The right trajectory's 0 / 0 / 10 disagrees most between the modes, but a lesson about blame needs a failure.
    const batch = [traj('a', 0, true, [0, 0, 10]), traj('a', 1, false, [9, 9, 1]), traj('b', 0, false, [2, 2, 2])];
    expect(mostDisputed(batch, 0.5)!.index).toBe(1);
    expect(culprits(batch[1])).toEqual(['verifier']);
    expect(culprits(batch[0])).toEqual([]);
    expect(culprits(batch[2])).toEqual(['solver', 'executor', 'verifier']);
  });
});

describe('backend sentence', () => {
  it('says plainly where training runs, with the lane workers when known', () => {
    const noAdapter = { name: 'wasm' as const, wasm: { simd: true, threads: 1 }, notice: 'webgpu unavailable (webgpu requested but no WebGPU adapter: navigator.gpu.requestAdapter() returned null)' };
    expect(backendNotice(noAdapter, 1)).toBe('No GPU adapter here: training runs on wasm (CPU, 2 workers).'); // 1 lane + the training worker
    expect(backendNotice(noAdapter)).toBe('No GPU adapter here: training runs on wasm (CPU).');
    const soft = { ...noAdapter, notice: 'the WebGPU adapter is a software fallback (google swiftshader), slower than wasm on this CPU; force webgpu to use it anyway' };
    expect(backendNotice(soft, 0)).toBe('Only a software GPU here (google swiftshader): training runs on wasm (CPU, 1 worker), which is faster.');
    expect(backendNotice({ name: 'wasm' })).toBe('Training runs on wasm (CPU), not on a GPU.');
    expect(backendNotice({ name: 'webgpu' })).toBeNull();
    expect(backendNotice({ name: 'webgpu', notice: 'WebGPU device lost (unknown): gone' })).toBe('WebGPU device lost (unknown): gone.');
    expect(whereItRuns({ name: 'cpu' })).toMatch(/^cpu/);
  });
});

describe('chart ticks', () => {
  it('writes tiny KL ticks with a power of ten, big ones in thousands, the rest as decimals', () => {
    expect(formatTicks([0, 0.00005, 0.0001, 0.00015], 0.00005)).toEqual(['0', '0.5e-4', '1e-4', '1.5e-4']);
    expect(formatTicks([0, 10000, 20000], 10000)).toEqual(['0', '10k', '20k']);
    expect(formatTicks([0, 0.25, 0.5, 0.75], 0.25)).toEqual(['0', '0.25', '0.5', '0.75']);
    expect(formatTicks([0.30000000000000004, 0.4], 0.1)).toEqual(['0.3', '0.4']);
  });
});

describe('held-out accuracy points', () => {
  it('carries the Wilson interval of round(acc * tasks) of tasks, and "n of N" while running', () => {
    const p = evalPoint({ greedy: 0.25, sampled: 0.3, tasks: 200 }, 'greedy');
    expect(p.value).toBe(0.25);
    expect(p.low).toBeCloseTo(0.1951, 4);
    expect(p.high).toBeCloseTo(0.3143, 4);
    expect(p.note).toBeNull();
    expect(evalPoint({ greedy: 0.5, sampled: 0.25, tasks: 80, of: 200 }, 'sampled').note).toBe('80 of 200');
    expect(evalPoint(undefined, 'greedy')).toEqual({ value: null, low: null, high: null, note: null });
  });
});

describe('overlays', () => {
  const math = resolveTrainConfig({});
  const data = resolveTrainConfig({ ...DATA_TEAM_SETTINGS, workflow: { ...resolveTrainConfig({}).workflow, name: 'data-team', domain: 'data' } } as never);
  const rec = (runId: string, config: unknown, updatedAt: number, iterations: number[]): SavedRun => ({
    runId, label: runId.split('-').slice(2, 4).join(' '), config, iteration: Math.max(0, ...iterations), updatedAt,
    team: runId.startsWith('data-team') ? { name: 'data-team', domain: 'data' } : { name: 'math-chain', domain: 'math' }, // as Lab.listRuns resolves it
    metrics: iterations.map((i) => ({ iteration: i, eval: i % 2 === 0 ? { greedy: i / 10, sampled: 0, tasks: 10 } : undefined })),
  });
  it('keeps saved runs of the same team with at least one iteration, not the current one, most recent first', () => {
    const runs = [
      rec('math-chain-outcome-seed0-aa', {}, 5, [0, 1, 2]),
      rec('math-chain-process-seed0-bb', {}, 9, [0, 1]), // the current run
      rec('math-chain-process-seed1-cc', { seed: 1 }, 7, [0]), // baseline only: no iteration
      rec('data-team-process-seed0-dd', { workflow: { domain: 'data' } }, 8, [0, 1]),
      rec('math-chain-process-seed0-ee', { lr: 0.001 }, 6, [0, 1]),
    ];
    const o = pickOverlays(runs, math, 'math-chain-process-seed0-bb', {});
    expect(o.map((x) => x.runId)).toEqual(['math-chain-process-seed0-ee', 'math-chain-outcome-seed0-aa']);
    expect(o[0].label).toBe('process seed0 · learning rate=0.001');
    // Only a twin (same settings and seed, the other reward mode) starts from this run's untrained team.
    expect(o.map((x) => [x.mode, x.sharesBaseline])).toEqual([['process', false], ['process', false]]); // same mode: not a twin
    const twin = pickOverlays([rec('math-chain-outcome-seed0-ff', { rewards: { mode: 'outcome' } }, 1, [1, 2])], math, 'x', {});
    expect(twin.map((x) => [x.mode, x.sharesBaseline, x.label])).toEqual([['outcome', true, 'outcome twin']]);
    expect(overlayLabel('credit methods: relay of 4, groups, seed 0', 'groups', 'checkpoint every (iterations)=5 +4', false)).toBe('groups · seed 0');
    // A lesson run's legend fits one line: its budget differs from the open run's, and that is what a lesson run is.
    const lesson = pickOverlays([{ ...rec('math-chain-outcome-seed0-hh', { rewards: { mode: 'outcome' }, iterations: 15, evalEvery: 5, checkpointEvery: 5, evalTasks: 100 }, 1, [1, 2]), label: 'lesson: relay of 4, outcome, seed 0' }], math, 'x', {});
    expect(lesson[0].label).toBe('lesson, outcome');
    expect(pickOverlays([rec('math-chain-outcome-seed3-gg', { rewards: { mode: 'outcome' }, seed: 3 }, 1, [1, 2])], math, 'x', {})[0].sharesBaseline).toBe(false);
    expect(pickOverlays(runs, data, 'x', {}).map((x) => x.runId)).toEqual(['data-team-process-seed0-dd']);
    expect(pickOverlays(runs, null, 'x')).toEqual([]);
  });
  it('draws at most 4, labelled, with duplicates told apart by the run id', () => {
    const os: Overlay[] = Array.from({ length: 6 }, (_, i) => ({ runId: `r-${i}abcd`, label: i < 2 ? 'outcome, seed 0' : `process, seed ${i}`, mode: i < 2 ? 'outcome' : 'process', metrics: [{ iteration: 2, eval: { greedy: 0.5, sampled: 0.4, tasks: 10 } }] }));
    os.push({ runId: 'r-noeval', label: 'mixed, seed 0', mode: 'mixed', metrics: [{ iteration: 1 }] });
    os.unshift({ runId: 'r-noeval2', label: 'mixed, seed 1', mode: 'mixed', metrics: [{ iteration: 1 }] }); // nothing to draw: skipped
    const lines = overlayLines(os, 'r-2abcd');
    expect(lines.map((l) => l.label)).toEqual(['outcome, seed 0 · abcd (saved)', 'outcome, seed 0 · abcd (saved)', 'process, seed 3 (saved)', 'process, seed 4 (saved)']);
    expect(lines.map((l) => l.mode)).toEqual(['outcome', 'outcome', 'process', 'process']);
    // The whole evaluation is kept, so a saved line has its intervals too.
    expect(lines[0].evals.get(2)).toEqual({ greedy: 0.5, sampled: 0.4, tasks: 10 });
    expect(evalPoint(lines[0].evals.get(2), 'greedy').low).toBeCloseTo(0.2366, 3);
  });
  it('the x axis fits the run: its configured length, not a longer saved run', () => {
    expect(xRangeOf(0, 30, 3)).toEqual([0, 30]);
    expect(xRangeOf(1, 30, 45)).toEqual([1, 45]); // a resumed run that was given more iterations
    expect(xRangeOf(0, undefined, 0)).toEqual([0, 1]);
  });
  it('names the settings that differ', () => {
    expect(settingsDiff({ lr: 0.001, lora: { rank: 8 }, seed: 3 }, { lr: 0.0005 })).toBe('LoRA rank=8 +1');
    expect(settingsDiff({ lr: 0.001, lora: { rank: 8 }, seed: 3 }, { lr: 0.0005 }, 2)).toBe('LoRA rank=8, learning rate=0.001');
    expect(settingsDiff({}, { update: { klCoef: 0.1 } })).toBe('KL coefficient=default'); // a label, never a config path
    expect(settingsDiff({ rewards: { mode: 'outcome' }, seed: 2 }, {})).toBe('');
  });
});
