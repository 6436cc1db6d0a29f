/**
 * The held-out evaluation order (issue 29): the page shows a running accuracy with its 95 % interval
 * after each chunk of held-out problems, so every prefix of the order must be a fair sample of the
 * whole set. Checked on the untrained math team's recorded per-problem results
 * (test/fixtures/heldout/untrained-math.json, with the command that made it): in the old level
 * order (easiest first) the running interval misses the final accuracy at most prefix sizes of the
 * first half (greedy: covered at 73 of the 192 sizes 8..199); in the new, level-stratified order it
 * covers it at all of them (>= 90 % required). Also: the order is a
 * deterministic permutation, a smaller subset stays level-balanced, and the CLI's and the page's
 * evaluations select the same tasks in the same order.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { teamOf, heldOutTasks, resolveTrainConfig } from '../../../src/core/domains/index.ts';
import { HELD_OUT_ORDER_SEED, mathEvalTasks } from '../../../src/core/domains/math/index.ts';
import { mathHeldOut } from '../../../src/core/domains/math/tasks.ts';
import { EvalQueue } from '../../../src/core/loop/eval-queue.ts';

/** A compute that is never asked to play (these checks only read the queue's tasks). */
const idle = { playTeam: async () => [] };
import type { RolloutTask } from '../../../src/core/loop/trajectory.ts';
import { relayWorkflow } from '../../../src/core/domains/relay/team.ts';
import { prefixCoverage, stratifiedOrder } from '../../../src/core/stats/order.ts';
import { Rng } from '../../../src/core/stats/rng.ts';
import { wilson } from '../../../src/core/stats/intervals.ts';

interface Recorded {
  command: string;
  ids: string[];
  greedy: boolean[];
  sampled: boolean[];
}

const recorded = JSON.parse(readFileSync(new URL('../../fixtures/heldout/untrained-math.json', import.meta.url), 'utf8')) as Recorded;
const levelOf = (id: string) => Number(/-L(\d)-/.exec(id)![1]);
/** Every prefix size the page can show: the first chunk is 8 problems, later ones 4..64 (session.ts). */
const SIZES = Array.from({ length: 199 - 8 + 1 }, (_, i) => 8 + i);

/** The recorded results of `pass`, in the order of `ids`. */
function inOrder(ids: string[], pass: 'greedy' | 'sampled'): boolean[] {
  const byId = new Map(recorded.ids.map((id, i) => [id, recorded[pass][i]]));
  return ids.map((id) => {
    const r = byId.get(id);
    if (r === undefined) throw new Error(`no recorded result for ${id}`);
    return r;
  });
}

/** Prefix sizes (of the 192) whose interval covered the final accuracy, level order vs stratified. */
const COVERED = { greedy: { before: 73, after: 192, of: 192 }, sampled: { before: 106, after: 192, of: 192 } };

const oldOrder = mathHeldOut().map((t) => t.id); // what mathEvalTasks(200) returned before: level 1 first
const newOrder = mathEvalTasks(200).map((t) => t.id);

describe('held-out order: the running interval covers the final accuracy', () => {
  it('the fixture is the 200 held-out problems, with the command that made it', () => {
    expect([...recorded.ids].sort()).toEqual([...oldOrder].sort());
    expect(recorded.greedy).toHaveLength(200);
    expect(recorded.sampled).toHaveLength(200);
    expect(recorded.command).toMatch(/mappa\.js eval/);
  });

  for (const pass of ['greedy', 'sampled'] as const) {
    it(`${pass}: new order covers at >= 90 % of prefix sizes 8..199; level order does not`, () => {
      const before = prefixCoverage(inOrder(oldOrder, pass), SIZES);
      const after = prefixCoverage(inOrder(newOrder, pass), SIZES);
      expect(after.final).toBe(before.final); // the same problems, only reordered
      expect(after.share).toBeGreaterThanOrEqual(0.9);
      expect(before.share).toBeLessThan(0.9);
      // The recorded figures (docs/eval-order.md): level order misses from the first chunks until
      // the hard levels have caught up; the stratified order misses none.
      expect({ before: before.covered, after: after.covered, of: before.total }).toEqual(COVERED[pass]);
    });
  }

  it('worked contrast: after 42 problems (greedy), level order shows the easy levels only', () => {
    const old42 = inOrder(oldOrder, 'greedy').slice(0, 42);
    const new42 = inOrder(newOrder, 'greedy').slice(0, 42);
    const final = recorded.greedy.filter(Boolean).length / 200;
    const o = wilson(old42.filter(Boolean).length, 42);
    const n = wilson(new42.filter(Boolean).length, 42);
    // Level order: 40 level-1 problems and 2 of level 2; the interval lies above the final accuracy.
    expect(new Set(oldOrder.slice(0, 42).map(levelOf))).toEqual(new Set([1, 2]));
    expect(o.low).toBeGreaterThan(final);
    // Stratified: 8 or 9 of each level, and the interval holds the final accuracy.
    const perLevel = [1, 2, 3, 4, 5].map((l) => newOrder.slice(0, 42).filter((id) => levelOf(id) === l).length);
    expect(Math.min(...perLevel)).toBeGreaterThanOrEqual(8);
    expect(Math.max(...perLevel)).toBeLessThanOrEqual(9);
    expect(n.low).toBeLessThanOrEqual(final);
    expect(n.high).toBeGreaterThanOrEqual(final);
  });
});

describe('why stratified rather than a plain shuffle', () => {
  it('a stratified prefix carries only the within-level spread: 80 % (greedy) / 88 % (sampled) of the variance', () => {
    // Levels 1..5 solve 25, 10, 5, 6, 4 of 40 (greedy): a shuffled prefix's variance per problem is
    // p (1 - p) = 0.25 * 0.75 = 0.1875; a stratified one's the mean of p_l (1 - p_l) = 0.14975.
    const designEffect = (pass: 'greedy' | 'sampled') => {
      const r = recorded[pass];
      const p = r.filter(Boolean).length / r.length;
      const within = [1, 2, 3, 4, 5].map((l) => {
        const mine = r.filter((_, i) => levelOf(recorded.ids[i]) === l);
        const pl = mine.filter(Boolean).length / mine.length;
        return pl * (1 - pl);
      });
      return within.reduce((a, b) => a + b, 0) / 5 / (p * (1 - p));
    };
    expect(designEffect('greedy')).toBeCloseTo(0.14975 / 0.1875, 10);
    expect(designEffect('sampled')).toBeCloseTo(0.8841, 4);
  });

  it('over 500 seeds each (greedy), stratified orders cover more often, and their bad seeds are less bad', () => {
    const all = mathHeldOut();
    const summary = (order: (seed: string) => string[]) => {
      const shares = Array.from({ length: 500 }, (_, s) => prefixCoverage(inOrder(order(`seed-${s}`), 'greedy'), SIZES).share).sort((a, b) => a - b);
      return { mean: shares.reduce((a, b) => a + b, 0) / shares.length, p5: shares[25] };
    };
    const stratified = summary((seed) => stratifiedOrder(all, (t) => t.level, seed).map((t) => t.id));
    const shuffled = summary((seed) => new Rng(seed).shuffle(all.map((t) => t.id)));
    // Recorded: stratified 99.4 % on average, 96.9 % at the 5th percentile; shuffled 98.8 % and 92.7 %.
    expect(stratified.mean).toBeGreaterThan(shuffled.mean);
    expect(stratified.p5).toBeGreaterThan(shuffled.p5);
    expect(stratified.p5).toBeGreaterThan(0.95);
  });
});

describe('held-out order: the tasks themselves', () => {
  it('is a permutation of the 200 held-out problems, the same on every call', () => {
    expect(newOrder).toHaveLength(200);
    expect(new Set(newOrder).size).toBe(200);
    expect([...newOrder].sort()).toEqual([...oldOrder].sort());
    expect(newOrder).not.toEqual(oldOrder);
    expect(mathEvalTasks(200).map((t) => t.id)).toEqual(newOrder);
    expect(stratifiedOrder(mathHeldOut(), (t) => t.level, HELD_OUT_ORDER_SEED).map((t) => t.id)).toEqual(newOrder);
  });

  it('every prefix of the 200 holds each level within one problem of a fifth', () => {
    const counts = [0, 0, 0, 0, 0, 0];
    newOrder.forEach((id, i) => {
      counts[levelOf(id)]++;
      for (let l = 1; l <= 5; l++) expect(Math.abs(counts[l] - (i + 1) / 5)).toBeLessThanOrEqual(1);
    });
  });

  it('mathEvalTasks(50) is the same level-balanced subset as before (10 per level), interleaved', () => {
    const fifty = mathEvalTasks(50);
    const all = mathHeldOut().map((t) => t.id);
    const oldSubset = Array.from({ length: 50 }, (_, i) => all[i * 4]); // the old every-4th selection
    expect([...fifty.map((t) => t.id)].sort()).toEqual([...oldSubset].sort());
    for (let l = 1; l <= 5; l++) expect(fifty.filter((t) => levelOf(t.id) === l)).toHaveLength(10);
    expect(new Set(fifty.slice(0, 5).map((t) => levelOf(t.id))).size).toBe(5); // the first round has every level
    expect(mathEvalTasks(50).map((t) => t.id)).toEqual(fifty.map((t) => t.id));
    // The page's plan measures prompts on 8 tasks: the same eight as before, whatever their order.
    expect(mathEvalTasks(8).map((t) => t.id).sort()).toEqual(Array.from({ length: 8 }, (_, i) => all[i * 25]).sort());
  });

  it('the page (EvalQueue) and evaluateTeam take the same tasks in the same order (heldOutTasks)', () => {
    const config = resolveTrainConfig({ evalTasks: 50 });
    const queue = new EvalQueue(config, teamOf(config.workflow), idle);
    expect(queue.tasks.map((t) => t.id)).toEqual(mathEvalTasks(50).map((t) => t.id));
    expect(heldOutTasks(config).map((t) => t.id)).toEqual(queue.tasks.map((t) => t.id));
    // A user's held-out dataset keeps its own order: its first evalTasks problems.
    const given = Array.from({ length: 60 }, (_, i) => ({ id: `mine-${i}`, problem: `${i} + 1`, answer: String(i + 1) }) as RolloutTask);
    expect(new EvalQueue(config, teamOf(config.workflow), idle, { heldOut: given }).tasks).toEqual(given.slice(0, 50));
    expect(heldOutTasks(config, given)).toEqual(given.slice(0, 50));
  });

  it('relay held-out sets were already in random order, and stay as they were', () => {
    const relay = teamOf(relayWorkflow(3));
    expect(relay.heldOut(200).map((t) => t.id)).toEqual(relay.heldOut(200).map((t) => t.id));
    expect(relay.heldOut(20).map((t) => t.id)).toEqual(relay.heldOut(200).slice(0, 20).map((t) => t.id));
  });
});
