/** The agents a large team's chart draws as lines (src/ui/agent-lines.ts), on hand-made values. */
import { describe, expect, it } from 'vitest';
import { agentsThatMatter } from '../../../src/ui/agent-lines.ts';

describe('the agents that matter', () => {
  const series = [
    { label: 'agent1', values: [5, 9] },
    { label: 'agent2', values: [5, 2] },
    { label: 'agent3', values: [6, 6] },
    { label: 'agent4', values: [null, 3] },
    { label: 'agent5', values: [null, null] },
  ];

  it('the worst by latest value, then the most changed not yet picked', () => {
    expect(agentsThatMatter(series, 'low', 1)).toEqual([
      { index: 1, label: 'agent2', why: 'worst: 2' },
      { index: 0, label: 'agent1', why: 'most changed: +4' },
    ]);
    expect(agentsThatMatter(series, 'high', 2).map((a) => a.label)).toEqual(['agent1', 'agent3', 'agent2']); // agent4 has one value: no change
  });

  it('no values, no lines', () => {
    expect(agentsThatMatter([{ label: 'a', values: [null] }], 'low')).toEqual([]);
  });
});
