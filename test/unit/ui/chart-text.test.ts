/** A chart's data as text (src/ui/chart-text.ts): the one-line summary and the table, against hand-worked numbers. */
import { describe, expect, it } from 'vitest';
import { AGENT, AGENTS, chartSummary, chartTable, ITERATIONS, percent, threeDigits, type ChartText } from '../../../src/ui/chart-text.ts';

/** Two reward runs over 15 iterations: process measured at 0, 5 and 15 (with 95 % intervals), outcome at 0, 10 and 15 (none). */
const lesson: ChartText = {
  title: 'Team accuracy', x: ITERATIONS, xs: [0, 5, 10, 15], format: percent,
  series: [
    { label: 'process reward', values: [0.31, 0.4, null, 0.52], low: [0.25, 0.33, null, 0.45], high: [0.38, 0.47, null, 0.59] },
    { label: 'outcome reward', values: [0.3, null, 0.33, 0.35] },
  ],
};

describe('a chart in one line', () => {
  it('each line from its first to its latest value, and the iterations between', () => {
    expect(chartSummary(lesson)).toBe('Team accuracy: process reward 31.0 % → 52.0 % over 15 iterations; outcome reward 30.0 % → 35.0 % over 15 iterations');
    // One point: where it is; a line with none: said so; nothing at all: one phrase.
    expect(chartSummary({ ...lesson, series: [{ label: 'process reward', values: [null, 0.4, null, null] }, { label: 'outcome reward', values: [null, null, null, null] }] }))
      .toBe('Team accuracy: process reward 40.0 % at iteration 5; outcome reward: no data yet');
    expect(chartSummary({ ...lesson, xs: [], series: [{ label: 'process reward', values: [] }] })).toBe('Team accuracy: no data yet');
    expect(chartSummary({ title: 'KL', x: ITERATIONS, xs: [3, 4], series: [{ label: 'solver', values: [0.00012, 0.0345] }] }))
      .toBe('KL: solver 1.2e-4 → 0.0345 over 1 iteration');
  });

  it('against team size: from the smallest to the largest team', () => {
    expect(chartSummary({ title: 'Gap', x: AGENTS, xs: [2, 4, 6], series: [{ label: 'measured', values: [0.05, 0.1, 0.2] }], format: (v) => `${(v * 100).toFixed(0)} pts` }))
      .toBe('Gap: measured 5 pts → 20 pts from 2 to 6 agents');
  });

  it('many lines (a team of 7): their mean first and latest, the lowest and the highest latest', () => {
    // agent i: i at iteration 1, i + 1 at iteration 2. Means (1+..+7)/7 = 4 and 5; lowest agent1 at 2, highest agent7 at 8.
    const series = [1, 2, 3, 4, 5, 6, 7].map((i) => ({ label: `agent${i}`, values: [i, i + 1] }));
    expect(chartSummary({ title: 'KL', x: ITERATIONS, xs: [1, 2], series })).toBe('KL: 7 lines, mean 4 → 5 over 1 iteration; lowest agent1 2, highest agent7 8');
  });

  it('one value per agent: each line\'s mean, lowest and highest, with the agent', () => {
    // (0.5 + 0.8 + 0.65) / 3 = 0.65.
    expect(chartSummary({ title: 'Step accuracy', x: AGENT, xs: [1, 2, 3], kind: 'spread', format: percent,
      series: [{ label: 'untrained', values: [0.5, 0.8, 0.65] }] }))
      .toBe('Step accuracy: untrained mean 65.0 %, lowest 50.0 % (agent 1), highest 80.0 % (agent 2)');
  });

  it('three significant digits by default', () => {
    expect([12345, 0.00012, 0.0345, 6.666, 0].map(threeDigits)).toEqual(['12.3k', '1.2e-4', '0.0345', '6.67', '0']);
  });
});

describe('a chart as a table', () => {
  it('a row per iteration with a point, a column per line and its interval beside it', () => {
    expect(chartTable(lesson)).toEqual({
      head: ['iteration', 'process reward', 'process reward: 95 % interval', 'outcome reward'],
      rows: [
        ['0', '31.0 %', '[25.0 %, 38.0 %]', '30.0 %'],
        ['5', '40.0 %', '[33.0 %, 47.0 %]', '–'],
        ['10', '–', '–', '33.0 %'],
        ['15', '52.0 %', '[45.0 %, 59.0 %]', '35.0 %'],
      ],
    });
    // An iteration no line has is left out.
    expect(chartTable({ ...lesson, xs: [0, 1], series: [{ label: 'a', values: [null, 0.2] }] }).rows).toEqual([['1', '20.0 %']]);
  });

  it('a row per line (a heat map of agents), a column per iteration', () => {
    expect(chartTable({ title: 'score', x: ITERATIONS, xs: [1, 2, 3], series: [
      { label: 'agent1', values: [5, null, 7] }, { label: 'agent2', values: [4, null, 3.25] },
    ], lineName: 'agent' }, 'line')).toEqual({ head: ['agent', 'iteration 1', 'iteration 3'], rows: [['agent1', '5', '7'], ['agent2', '4', '3.25']] });
  });
});
