import { describe, expect, it } from 'vitest';
import {
  MATH_LEVELS,
  chainSignature,
  generateMathTasks,
  isMathHeldOut,
  mathHeldOut,
  solutionSteps,
  type MathTask,
} from '../../../src/core/domains/math/tasks.ts';

/** Independent evaluation of a chain, written out here rather than taken from the module. */
function evaluate(task: MathTask): number[] {
  const values = [task.chain.start];
  for (const { op, operand } of task.chain.steps) {
    const v = values[values.length - 1];
    values.push(op === '+' ? v + operand : op === '-' ? v - operand : op === '*' ? v * operand : v / operand);
  }
  return values;
}

describe('solutionSteps', () => {
  it('lists every intermediate result (hand-worked chain 12 - 5 = 7, 7 * 3 = 21, 21 / 7 = 3)', () => {
    const steps = solutionSteps({ chain: { start: 12, steps: [{ op: '-', operand: 5 }, { op: '*', operand: 3 }, { op: '/', operand: 7 }] } });
    expect(steps.map((s) => s.expression)).toEqual(['12 - 5 = 7', '7 * 3 = 21', '21 / 7 = 3']);
    expect(steps.map((s) => s.result)).toEqual([7, 21, 3]);
    expect(steps[1]).toMatchObject({ index: 2, op: '*', left: 7, right: 3 });
  });
});

describe('generateMathTasks', () => {
  it('is deterministic per seed and prefix-stable', () => {
    const a = generateMathTasks({ seed: 1, count: 20, level: 3 });
    const b = generateMathTasks({ seed: 1, count: 20, level: 3 });
    expect(a).toEqual(b);
    expect(generateMathTasks({ seed: 1, count: 5, level: 3 })).toEqual(a.slice(0, 5));
    const c = generateMathTasks({ seed: 2, count: 20, level: 3 });
    expect(c.map((t) => t.problem)).not.toEqual(a.map((t) => t.problem));
  });

  it('respects each level: step count, number bound, operations, exact integer division', () => {
    for (const level of [1, 2, 3, 4, 5]) {
      const spec = MATH_LEVELS[level];
      for (const task of generateMathTasks({ seed: 'levels', count: 200, level })) {
        const values = evaluate(task);
        expect(task.level).toBe(level);
        expect(task.chain.steps).toHaveLength(spec.steps);
        expect(task.difficulty.steps).toBe(spec.steps);
        for (const v of values) {
          expect(Number.isInteger(v)).toBe(true);
          expect(v).toBeGreaterThanOrEqual(2);
          expect(v).toBeLessThanOrEqual(spec.maxNumber);
        }
        for (const s of task.chain.steps) expect(spec.ops).toContain(s.op);
        expect(task.answer).toBe(String(values[values.length - 1]));
        expect(task.difficulty.maxNumber).toBe(Math.max(...values, ...task.chain.steps.map((s) => s.operand)));
        expect(solutionSteps(task).map((s) => s.result)).toEqual(values.slice(1));
      }
    }
  });

  it('writes the numbers of the chain into the problem text, and asks a question', () => {
    for (const task of generateMathTasks({ seed: 3, count: 300 })) {
      const allowed = new Set([task.chain.start, ...task.chain.steps.map((s) => s.operand)]);
      const written = (task.problem.match(/\d+/g) ?? []).map(Number);
      expect(written[0]).toBe(task.chain.start);
      for (const n of written) expect(allowed.has(n)).toBe(true);
      expect(task.problem.trim().endsWith('?')).toBe(true);
      expect(task.problem).not.toMatch(/undefined|NaN/);
    }
  });

  it('mixes levels and operations when level is omitted', () => {
    const tasks = generateMathTasks({ seed: 4, count: 500 });
    expect(new Set(tasks.map((t) => t.level)).size).toBe(5);
    const ops = new Set(tasks.flatMap((t) => t.chain.steps.map((s) => s.op)));
    expect([...ops].sort()).toEqual(['*', '+', '-', '/']);
  });

  it('rejects bad options with clear errors', () => {
    expect(() => generateMathTasks({ seed: 1, count: 1, level: 6 })).toThrow(/level must be one of 1..5/);
    expect(() => generateMathTasks({ seed: 1, count: -1 })).toThrow(/count/);
  });
});

describe('mathHeldOut', () => {
  it('is a fixed set of 200 problems, 40 per level, all distinct', () => {
    const all = mathHeldOut();
    expect(all).toHaveLength(200);
    for (const level of [1, 2, 3, 4, 5]) expect(mathHeldOut(level)).toHaveLength(40);
    expect(new Set(all.map((t) => chainSignature(t.chain))).size).toBe(200);
    expect(new Set(all.map((t) => t.id)).size).toBe(200);
    expect(mathHeldOut()).toEqual(all);
    // Fixed across releases: a change here silently changes every reported score.
    expect(all[0].id).toBe('math-heldout-L1-0');
    expect(all.every((t) => t.source === 'generated-heldout')).toBe(true);
  });

  it('returns copies, so a caller cannot corrupt the set', () => {
    const first = mathHeldOut(1);
    first[0].answer = 'tampered';
    expect(mathHeldOut(1)[0].answer).not.toBe('tampered');
  });

  it('never overlaps with training problems, in arithmetic or in text', () => {
    const held = mathHeldOut();
    const heldSignatures = new Set(held.map((t) => chainSignature(t.chain)));
    const heldTexts = new Set(held.map((t) => t.problem));
    let checked = 0;
    const level1Signatures = new Set<string>();
    for (let seed = 0; seed < 10; seed++) {
      for (const level of [1, 2, 3, 4, 5]) {
        for (const task of generateMathTasks({ seed, count: 400, level })) {
          expect(heldSignatures.has(chainSignature(task.chain))).toBe(false);
          expect(heldTexts.has(task.problem)).toBe(false);
          expect(isMathHeldOut(task)).toBe(false);
          if (level === 1) level1Signatures.add(chainSignature(task.chain));
          checked++;
        }
      }
    }
    expect(checked).toBe(20_000);
    // Level 1 has only a few hundred chains, so the guard is really exercised: training covers
    // most of that space and still none of the 40 held-out chains.
    expect(level1Signatures.size).toBeGreaterThan(150);
    expect(held.every((t) => isMathHeldOut(t))).toBe(true);
  });
});
