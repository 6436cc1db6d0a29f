/**
 * bench/phases.ts: per-phase seconds read from metrics.jsonl lines (the untrained evaluation's
 * record and phases that did not run are left out), and the table's ratio with its interval,
 * hand-worked.
 */
import { describe, expect, it } from 'vitest';
import { formatPhases, phaseSeconds } from '../../../bench/phases.ts';

const line = (rollout: number, update: number, evalS = 0) => JSON.stringify({ seconds: { rollout, coach: 0.01, update, eval: evalS, checkpoint: 0 } });

describe('bench phases', () => {
  it('reads the seconds of each phase per iteration', () => {
    const text = [JSON.stringify({ iteration: 0, eval: { greedy: 0.25 } }), line(10, 20), line(12, 22, 7), ''].join('\n');
    expect(phaseSeconds(text)).toEqual({ rollout: [10, 12], coach: [0.01, 0.01], update: [20, 22], eval: [7] });
  });

  it('prints each run\'s mean and the ratio of geometric means with its interval', () => {
    // before: rollout 8, 8 -> after: 4, 4 exactly half, no spread: the interval is the point.
    const before = phaseSeconds([line(8, 10), line(8, 10)].join('\n'));
    const after = phaseSeconds([line(4, 10), line(4, 10)].join('\n'));
    const table = formatPhases([{ name: 'before', seconds: before }, { name: 'after', seconds: after }]);
    expect(table).toContain('| rollout | 8.00 (2 it) | 4.00 (2 it) | 0.50 [0.50, 0.50] |');
    expect(table).toContain('| update | 10.00 (2 it) | 10.00 (2 it) | 1.00 [1.00, 1.00] |');
    expect(table).not.toContain('| eval |');
  });
});
