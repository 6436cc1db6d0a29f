// The worker interface (src/core/lab/protocol.ts): a few generic requests, each a method of the lab
// (lab.ts) and of the page's client (src/worker/client.ts), so that an experiment is one `experiment`
// request by name and adds none. Against the lists themselves: the names the protocol declares, the lab's
// methods, the experiments' registry and their one list of names.
import { describe, expect, it } from 'vitest';
import { REQUEST_TYPES } from '../../../src/core/lab/protocol.ts';
import { Lab } from '../../../src/core/lab/lab.ts';
import { EXPERIMENTS } from '../../../src/core/lab/experiments/experiments.ts';
import { EXPERIMENT_NAMES } from '../../../src/core/lab/experiments/experiment-names.ts';

describe('the worker interface', () => {
  it('is thirteen generic requests, each a method of the lab', () => {
    // 'person': a person's answer to a card a coach in tiers asks during a run (lab/person-cards.ts).
    expect([...REQUEST_TYPES].sort()).toEqual(['coaches', 'desk', 'device', 'experiment', 'export', 'import', 'init', 'open', 'pause', 'person', 'saved', 'start', 'tool']);
    for (const type of REQUEST_TYPES) expect(typeof Lab.prototype[type], type).toBe('function');
  });

  it('runs every experiment of the one list through the one `experiment` request', () => {
    expect(Object.keys(EXPERIMENTS)).toEqual(EXPERIMENT_NAMES);
    expect(REQUEST_TYPES.filter((t) => (EXPERIMENT_NAMES as string[]).includes(t))).toEqual([]);
  });
});
