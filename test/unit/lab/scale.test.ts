// "Scale the team"'s maths (src/core/lab/experiments/scale/scale-maths.ts) on hand-made evaluations, against numbers worked by hand:
// Wilson's interval and Newcombe's difference from their formulas (z = 1.95996), p^N, the luck floor and docs/credit.md's
// prediction by arithmetic, and the words the page ends in.
import { describe, expect, it } from 'vitest';
import {
  chanceText, pointOf, runGenerations, SCALE_PLAN, scalePatch, scaleRow, scaleTrained, scaleView, scaleWords, sizesText, type ScaleRunData,
} from '../../../src/core/lab/experiments/scale/scale-maths.ts';
import type { EvalResult } from '../../../src/core/loop/records.ts';
import { resolveTrainConfig } from '../../../src/core/domains/index.ts';

const PLAN = { ...SCALE_PLAN, iterations: 3, evalTasks: 25 };

/** An evaluation of `n` agents on `tasks` problems: `teamRight` problems right (the first ones), `stepsRight` of n x tasks steps right. */
function evalOf(n: number, tasks: number, teamRight: number, stepsRight: number): EvalResult {
  const right = Array.from({ length: n }, (_, i) => Math.floor(stepsRight / n) + (i < stepsRight % n ? 1 : 0));
  const ids = Array.from({ length: tasks }, (_, i) => `t${i}`);
  const greedy = ids.map((_, i) => i < teamRight);
  return {
    greedy: teamRight / tasks, sampled: 0, tasks, metrics: { stepAccuracy: stepsRight / (n * tasks) },
    perTask: { ids, greedy, sampled: greedy.map(() => false) },
    agentSteps: { ids: right.map((_, i) => `agent${i + 1}`), right, judged: right.map(() => tasks) },
  };
}

function runOf(n: number, mode: 'process' | 'outcome', evals: [number, EvalResult][], seconds?: number): ScaleRunData {
  return {
    n, mode, runId: `${n}-${mode}`, iteration: PLAN.iterations, done: true, evals: evals.map(([iteration, result]) => ({ iteration, result })),
    ...(seconds === undefined ? {} : { seconds, finishedAt: 1_000 + n }),
  };
}

// 8 agents, 25 problems: 200 steps. Untrained 160 right (p = 0.8), process 180, outcome 162; team 1, 4 and 2 of 25.
const p8 = runOf(8, 'process', [[0, evalOf(8, 25, 1, 160)], [3, evalOf(8, 25, 4, 180)]], 20);
const o8 = runOf(8, 'outcome', [[3, evalOf(8, 25, 2, 162)]], 15);
// 16 agents, 20 problems: 320 steps. Untrained 256 (p = 0.8), process 270, outcome 266; team 0, 1 and 0 of 20.
const p16 = runOf(16, 'process', [[0, evalOf(16, 20, 0, 256)], [3, evalOf(16, 20, 1, 270)]], 35);
const o16 = runOf(16, 'outcome', [[3, evalOf(16, 20, 0, 266)]], 25);

describe('scale: the rows', () => {
  it('a point: team accuracy by Wilson on its problems, step accuracy by Wilson on the pooled steps, each agent apart', () => {
    const pt = pointOf(evalOf(8, 25, 4, 180))!;
    // Wilson(180, 200): centre (0.9 + z^2/400) / (1 + z^2/200), half-width from the formula, by hand.
    expect(pt.step.p).toBeCloseTo(0.9, 10);
    expect(pt.step.low).toBeCloseTo(0.85059, 4);
    expect(pt.step.high).toBeCloseTo(0.93433, 4);
    // Wilson(4, 25) = 16.0 % [6.4, 34.7].
    expect(pt.team.low).toBeCloseTo(0.06403, 4);
    expect(pt.team.high).toBeCloseTo(0.34654, 4);
    expect(pt.agents).toHaveLength(8);
    expect(pt.agents.reduce<number>((a, b) => a + (b ?? 0), 0) / 8).toBeCloseTo(0.9, 10);
    expect(pointOf({ ...evalOf(8, 25, 4, 180), of: 200 })).toBeNull(); // a running estimate is not a result
  });

  it('8 agents: the untrained team from the process run, the step gap by Newcombe, p^N, the luck floor and the prediction by hand', () => {
    const row = scaleRow(8, p8, o8, PLAN);
    expect(row.untrained!.step.p).toBeCloseTo(0.8, 10);
    // Newcombe: 0.9 - 0.81 = 0.09, low 0.09 - sqrt((0.9 - 0.85059)^2 + (0.85833 - 0.81)^2) = 0.0209, high 0.09 + sqrt(0.03433^2 + 0.06001^2) = 0.1591.
    expect(row.stepGap!.p).toBeCloseTo(0.09, 10);
    expect(row.stepGap!.low).toBeCloseTo(0.02089, 4);
    expect(row.stepGap!.high).toBeCloseTo(0.15914, 4);
    expect(row.chance).toBeCloseTo(0.8 ** 8, 12); // 0.16777
    // The luck floor (docs/credit.md): lambda = (10 x 0.8 - 1) / 9 = 7/9; rewarded 0.1 + 0.9 x (7/9)^8 = 0.22053.
    expect(row.rewarded).toBeCloseTo(0.1 + 0.9 * (7 / 9) ** 8, 12);
    expect(row.predictedOutcomeStep).toBeCloseTo(0.8 + (7 / 9) ** 7 * 0.1, 12); // 0.81722
    // Paired team gap: process right on problems 0-3, outcome on 0-1 (2 / 2 / 0 / 21): +8 points; Newcombe's paired interval by hand,
    // phi = (2 x 21 - 0 - 25/2) / sqrt(4 x 21 x 2 x 23) = 0.47457, Wilson(4, 25) and Wilson(2, 25) by square-and-add: [-7.01, +24.70].
    expect(row.teamGap!.p).toBeCloseTo(0.08, 10);
    expect(row.teamGap!.low).toBeCloseTo(-0.07014, 4);
    expect(row.teamGap!.high).toBeCloseTo(0.24705, 4);
    expect(row.stepGain.process!.low).toBeGreaterThan(0); // 0.9 against 0.8 on 200 steps each
    expect(row.stepGain.outcome!.low).toBeLessThan(0);
    // Against the untrained team (1 of 25), paired over the same problems: process +12 points (3 problems gained, none lost), outcome +4.
    expect(row.teamGain.process!.p).toBeCloseTo(0.12, 10);
    expect(row.teamGain.process!.low).toBeLessThan(0); // 3 discordant problems of 25: inside the noise
    expect(row.teamGain.outcome!.p).toBeCloseTo(0.04, 10);
    // What process's trained steps predict of the team: lambda = (10 x 0.9 - 1) / 9 = 8/9; 0.1 + 0.9 x (8/9)^8 = 0.45070.
    expect(row.predictedTeam.process).toBeCloseTo(0.1 + 0.9 * (8 / 9) ** 8, 12);
    expect(row.predictedTeam.outcome).toBeCloseTo(0.1 + 0.9 * ((10 * 0.81 - 1) / 9) ** 8, 12);
    expect(row.words).toBe('8 agents: team accuracy process 16.0 % vs outcome 8.0 %, +8.0 pts [-7.0, +24.7] (paired, within the noise); '
      + 'against the untrained team\'s 4.0 %, process +12.0 pts [-4.7, +30.3] (within the noise), outcome +4.0 pts [-10.8, +20.2] (within the noise); '
      + 'mean step accuracy 90.0 % vs 81.0 %, +9.0 pts [+2.1, +15.9] (beyond the noise), which predict team accuracy 45.1 % for process '
      + '(1/10 + 9/10 λ^8); untrained 80.0 %, so a chain is right 16.8 % '
      + 'of the time (p^8) but outcome reward is rewarded on 22.1 % (a chain whose errors cancel ends right too), and docs/credit.md '
      + 'predicts its step accuracy at 81.7 %.');
  });

  it('a size not finished has no gap and says so', () => {
    const row = scaleRow(16, p16, { ...o16, done: false }, PLAN);
    expect(row.final.outcome).toBeNull();
    expect(row.stepGap).toBeNull();
    expect(row.words).toBe('16 agents: not finished yet');
  });
});

describe('scale: the words', () => {
  it('says where process ended above outcome beyond the noise, and where the intervals overlap, from the numbers', () => {
    const view = scaleView([p8, o8, p16, o16], { ...PLAN, sizes: [8, 16] }, 16, {
      status: 'done', current: null, elapsed: 0, remaining: 0, progress: { done: 1, total: 1 },
    });
    // 16 agents: 270/320 = 84.4 % against 266/320 = 83.1 %: +1.25 points, well inside either Wilson interval (about +-4 points).
    expect(view.rows[1].stepGap!.low).toBeLessThan(0);
    expect(view.words).toBe('Against the untrained team, on the same held-out problems, process reward\'s team accuracy did not move beyond '
      + 'the noise; outcome reward\'s did not move beyond the noise. Process reward\'s mean step accuracy ended above outcome reward\'s beyond the noise at 8 agents, and was within '
      + 'the noise of outcome reward\'s at 16 agents (the interval of the difference holds 0: no difference shown). Its team accuracy was within '
      + 'the noise of outcome reward\'s at 8 and 16 agents (the interval of the difference holds 0: no difference shown). Against the untrained '
      + 'team, process reward\'s step accuracy rose beyond the noise at 8 agents; outcome reward\'s did not move beyond the noise. '
      // 16 agents: process 270/320 = 0.84375, lambda = 0.82639, 0.1 + 0.9 x lambda^16 = 0.14258, inside Wilson(1, 20) = [0.9 %, 23.6 %];
      // 8 agents: 45.1 % against Wilson(4, 25) = [6.4 %, 34.7 %]: outside.
      + 'A chain ends right when its errors cancel on the dial, 1/10 + 9/10 λᴺ of the time if its steps err independently: process reward\'s '
      + 'trained steps predict team accuracy 45.1 % at 8, 14.3 % at 16 agents, against 16.0 % [6.4 %, 34.7 %], 5.0 % [0.9 %, 23.6 %] measured: '
      + 'inside the measured interval at 16 agents, and outside it at 8 agents (the model of independent steps does not hold there). Outcome '
      + 'reward\'s share of rewarded rollouts fell from 22.1 % at 8 agents to 11.6 % at 16, toward its floor of 10 % (a chain whose '
      + 'errors cancel on the dial still ends right), while right chains, p^N, fell from 16.8 % to 2.8 %: at 16 agents 24.2 % of its '
      + 'rewards come from a right chain, the rest is luck.');
    expect(view.trained).toEqual({ seconds: 95, finishedAt: 1_016 });
  });

  it('never calls an overlap a gain: all sizes within the noise says the run shows no difference', () => {
    const row = scaleRow(16, p16, o16, PLAN);
    expect(scaleWords([row])).toContain('At this budget the run shows no difference between the two rewards.');
    expect(scaleWords([])).toBe('');
  });

  it('small helpers', () => {
    expect(sizesText([8])).toBe('8 agents');
    expect(sizesText([8, 16, 32])).toBe('8, 16 and 32 agents');
    // Odds, not exponents, below 0.001 %: 0.8^64 = 6.28e-7, 1 / that = 1.59 million.
    expect(chanceText(0.8 ** 64)).toBe('1 in 1.6 million');
    expect(chanceText(2.5e-4)).toBe('0.025 %');
    expect(chanceText(1.4e-8)).toBe('1 in 71 million'); // 1 / 1.4e-8 = 71.4 million
    expect(chanceText(2e-6)).toBe('1 in 500,000');
    expect(chanceText(6.2e-34)).toBe('1 in 10^33'); // log10(1.61e33) = 33.2
    expect(chanceText(0.168)).toBe('16.8 %');
    expect(scaleTrained([p8], { ...PLAN, sizes: [8] })).toBeNull(); // the outcome run is missing
  });
});

describe('scale: the plan', () => {
  it('process runs read the AI judge; outcome runs load no judge; one evaluation at the start and one at the end', () => {
    const proc = resolveTrainConfig(scalePatch(64, 'process'));
    const out = resolveTrainConfig(scalePatch(64, 'outcome'));
    expect(proc.workflow.agents).toHaveLength(64);
    expect(proc.coach.kind).toBe('model');
    expect(out.coach.kind).toBe('rule');
    expect(proc.evalEvery).toBe(SCALE_PLAN.iterations);
    expect(proc.iterations).toBe(SCALE_PLAN.iterations);
    // Generations: 64 x (3 x 16 training + 2 evaluations x 2 passes x 30 problems) for process; outcome reads the untrained team.
    expect(runGenerations(64, 'process', SCALE_PLAN, 16)).toBe(64 * (SCALE_PLAN.iterations * 16 + 4 * SCALE_PLAN.evalTasks));
    expect(runGenerations(64, 'outcome', SCALE_PLAN, 16)).toBe(64 * (SCALE_PLAN.iterations * 16 + 2 * SCALE_PLAN.evalTasks));
  });
});
