// Which judges the coach menus offer (src/ui/judge-choices.ts): the line's first judge and every version taught
// from that line for the team of the settings, resolved by the real config resolver and the teams' own judges; nothing
// extra when no version is stored, none of another line or another team.
import { describe, expect, it } from 'vitest';
import type { JudgeVersion } from '../../../src/core/coach/correction-book.ts';
import { resolveTrainConfig } from '../../../src/core/domains/index.ts';
import { relayConfig } from '../../../src/core/domains/relay/team.ts';
import { coachChoices, lineRoot } from '../../../src/ui/judge-choices.ts';

const ranking = { pairs: 110, concordant: 72, percent: 65.9, low: 56.6, high: 74.1 };
function version(spec: string, parent: string, team = 'relay', corrections = 10): JudgeVersion {
  return {
    spec, hash: spec.slice(-12).padEnd(64, '0'), parent, parentHash: '1'.repeat(64), root: '2'.repeat(64), team, corrections, replayed: corrections,
    steps: 6, seconds: 4, createdAt: 0, before: { heldOut: null, ranking }, after: { heldOut: null, ranking: { ...ranking, percent: 70.9 } },
  };
}
const relay = (coach: Record<string, unknown>) => resolveTrainConfig({ ...relayConfig(4), coach });

const weakA = version('taught:relay-judge-weak-aaaaaaaaaaaa', 'models/relay-judge-weak');
const weakB = version('taught:relay-judge-weak-bbbbbbbbbbbb', 'taught:relay-judge-weak-aaaaaaaaaaaa', 'relay', 20);
const strong = version('taught:relay-judge-cccccccccccc', 'models/relay-judge');
const math = version('taught:judge-dddddddddddd', 'models/judge', 'math');

describe('coachChoices', () => {
  it('offers nothing beyond the team\'s judge when no version is stored', () => {
    expect(coachChoices(relay({ kind: 'model' }), [])).toEqual({ root: 'models/relay-judge', current: 'models/relay-judge', taught: [] });
    // The rubric as the coach: the menu's judge is still the team's own, and no version is invented.
    expect(coachChoices(relay({ kind: 'rule' }), [math]).taught).toEqual([]);
  });

  it('offers every version of the line the settings\' judge belongs to, and none of another line or team', () => {
    const all = [weakA, strong, weakB, math];
    const fromRoot = coachChoices(relay({ kind: 'model', model: 'models/relay-judge-weak' }), all);
    expect(fromRoot.root).toBe('models/relay-judge-weak');
    expect(fromRoot.taught.map((t) => t.spec)).toEqual([weakA.spec, weakB.spec]);
    expect(fromRoot.taught[1].label).toBe('taught:relay-judge-weak-bbbbbbbbbbbb');
    expect(fromRoot.taught[1].title).toMatch(/^taught in this browser from taught:relay-judge-weak-aaaaaaaaaaaa on 20 corrections; sha-256 of its weights bbbbbbbbbbbb0+; /);
    expect(fromRoot.taught[0].title).toContain('ranking against the rater on the batch it was taught on 65.9 % [56.6, 74.1] before, 70.9 % [56.6, 74.1] after');
    // Coached by a taught version: the same menu, its root the folder the line began with.
    const fromTaught = coachChoices(relay({ kind: 'model', model: weakB.spec }), all);
    expect(fromTaught).toMatchObject({ root: 'models/relay-judge-weak', current: weakB.spec });
    expect(fromTaught.taught.map((t) => t.spec)).toEqual([weakA.spec, weakB.spec]);
    // The team's own judge: its own line only.
    expect(coachChoices(relay({ kind: 'model' }), all).taught.map((t) => t.spec)).toEqual([strong.spec]);
  });
});

describe('lineRoot', () => {
  it('follows parents back to a judge not taught here, and stops at a taught spec this browser does not hold', () => {
    expect(lineRoot(weakB.spec, [weakA, weakB])).toBe('models/relay-judge-weak');
    expect(lineRoot('taught:elsewhere-eeeeeeeeeeee', [weakA])).toBe('taught:elsewhere-eeeeeeeeeeee');
    // A record that names itself as its parent ends (no endless walk).
    const loop = version('taught:x-ffffffffffff', 'taught:x-ffffffffffff');
    expect(lineRoot(loop.spec, [loop])).toBe(loop.spec);
  });
});
