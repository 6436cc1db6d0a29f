/** Curriculum filters: skipping decided prompts, dropping failed-coach trajectories, level changes, datasets. */
import { describe, expect, it } from 'vitest';
import { Curriculum, DEFAULT_CURRICULUM, fixedTasks, type CurriculumSettings } from '../../../src/core/loop/curriculum.ts';
import { MATH_TEAM } from '../../../src/core/domains/math/index.ts';
import type { Trajectory } from '../../../src/core/loop/trajectory.ts';

const traj = (id: string, correct: boolean, coachOk = true): Trajectory => ({
  task: { id, problem: id, answer: '1' }, sample: 0, finalAnswer: correct ? '1' : '2', correct,
  actions: [{ agentId: 'solver', role: 'Problem Solver', turn: 1, messages: [], promptText: '', promptTokens: [], tokens: [], logprobs: [], text: '', truncated: false, codeBlocks: 0, coach: { raw: '', score: 5, ok: coachOk, attempts: 1 } }],
});

/** The math team's generated problems, as a run of seed `seed` gets them. */
const math = (settings: CurriculumSettings, seed: number) =>
  new Curriculum(settings, seed, { pool: (level) => MATH_TEAM.trainPool(seed, level, settings.poolSize), leveled: true });

describe('curriculum', () => {
  it('is deterministic per seed and skips prompts recently always or never solved, counting each', () => {
    const a = math({ ...DEFAULT_CURRICULUM, poolSize: 6 }, 1);
    const b = math({ ...DEFAULT_CURRICULUM, poolSize: 6 }, 1);
    const start = a.start();
    const picked = a.pick(start, 6);
    const first = picked.tasks;
    expect(b.pick(b.start(), 6).tasks.map((t) => t.id)).toEqual(first.map((t) => t.id));
    expect(start).toEqual(a.start()); // picking changed nothing it was given
    // Three solves of task 0 and three failures of task 1: both are skipped next time.
    let s = picked.state;
    for (let k = 0; k < 3; k++) s = a.record(s, [traj(first[0].id, true), traj(first[1].id, false)]);
    const { tasks, skippedAlwaysSolved, skippedNeverSolved } = a.pick(s, 6);
    expect(tasks.map((t) => t.id)).not.toContain(first[0].id);
    expect(tasks.map((t) => t.id)).not.toContain(first[1].id);
    expect(skippedAlwaysSolved).toBe(1);
    expect(skippedNeverSolved).toBe(1);
  });

  it('keeps the trajectories whose every agent verdict parsed (unless told to keep all)', () => {
    const verdict = (ok: boolean) => ({ raw: '', score: 5, ok, attempts: 1, cached: false });
    const coached = [
      { agentScores: new Map([['solver', verdict(true)], ['verifier', verdict(true)]]), turnScores: new Map() },
      { agentScores: new Map([['solver', verdict(true)], ['verifier', verdict(false)]]), turnScores: new Map() },
      { agentScores: new Map([['solver', verdict(true)]]), turnScores: new Map() },
    ];
    expect(math(DEFAULT_CURRICULUM, 0).keep(coached)).toEqual([0, 2]);
    expect(math({ ...DEFAULT_CURRICULUM, dropCoachFailures: false }, 0).keep(coached)).toEqual([0, 1, 2]);
  });

  it('raises the level when rolling accuracy is high and lowers it when low', () => {
    const c = math({ ...DEFAULT_CURRICULUM, startLevel: 2 }, 0);
    const before = c.start();
    const up = c.record(before, Array.from({ length: 40 }, (_, i) => traj(`t${i}`, i % 10 !== 0))); // 90 %
    expect(up.level).toBe(3);
    expect(before).toEqual(c.start()); // the state it was given is unchanged
    const down = c.record(up, Array.from({ length: 40 }, (_, i) => traj(`u${i}`, i % 10 === 0))); // 10 %
    expect(down.level).toBe(2);
  });

  it('startLevel 0 mixes every level, as the held-out set does, and never adapts', () => {
    const c = math({ ...DEFAULT_CURRICULUM, startLevel: 0, poolSize: 20 }, 0);
    const levels = new Set(c.pick(c.start(), 40).tasks.map((t) => t.level));
    expect(levels.size).toBeGreaterThan(3);
    expect(c.record(c.start(), Array.from({ length: 40 }, (_, i) => traj(`m${i}`, true))).level).toBe(0);
  });

  it('trains on an imported dataset when given one (and keeps its level)', () => {
    const pool = [{ id: 'd1', problem: 'p1', answer: '1' }, { id: 'd2', problem: 'p2', answer: '2' }];
    const c = new Curriculum(DEFAULT_CURRICULUM, 0, fixedTasks(pool));
    expect(c.pick(c.start(), 2).tasks.map((t) => t.id).sort()).toEqual(['d1', 'd2']);
    expect(c.record(c.start(), Array.from({ length: 40 }, (_, i) => traj(`d${(i % 2) + 1}`, true))).level).toBe(1);
  });
});
