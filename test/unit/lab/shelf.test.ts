/**
 * The shelf (src/core/lab/shelf.ts) with the real shipped models: a run coached by a judge model loads the
 * team's own judge (models/relay-judge for the relay), and the page's model panel is told last of the
 * agents' model, not of the judge that loaded after it; the coach line reads a judge's ranking from its
 * folder's report.json.
 */
import { describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/core/engine/backend.ts';
import { folderSource } from '../../../src/core/engine/model/sources.ts';
import { Shelf, type LabPlatform } from '../../../src/core/lab/shelf.ts';
import { ProgressBars } from '../../../src/core/lab/progress.ts';
import type { WorkerEvent } from '../../../src/core/lab/protocol.ts';
import { resolveTrainConfig } from '../../../src/core/domains/index.ts';
import { relayConfig, RELAY_JUDGE_MODEL } from '../../../src/core/domains/relay/team.ts';

describe('Shelf.parts', () => {
  it('loads the relay team\'s judge as its coach, and the model panel names the agents\' model', async () => {
    await initBackend({ force: 'cpu' });
    const asked: string[] = [];
    const platform = { modelSource: (spec: string) => (asked.push(spec), folderSource(spec)) } as unknown as LabPlatform;
    const events: WorkerEvent[] = [];
    const shelf = new Shelf(platform, new ProgressBars(() => {}), (e) => events.push(e));
    const config = resolveTrainConfig({ ...relayConfig(4), coach: { kind: 'model' } });
    const parts = await shelf.parts(config);
    expect(asked).toEqual(['models/relay', RELAY_JUDGE_MODEL]);
    expect(parts.coach.name).toBe(`model:${RELAY_JUDGE_MODEL}`);
    const models = events.filter((e): e is Extract<WorkerEvent, { kind: 'model' }> => e.kind === 'model').map((e) => e.name);
    expect(models.at(-1)).toBe('models/relay');
    parts.agentModel.model.dispose();
  }, 300_000);

  it('says what the coach is: a judge\'s ranking comes from its folder\'s report.json, the rubric is the rater', async () => {
    const platform = { modelSource: (spec: string) => folderSource(spec) } as unknown as LabPlatform;
    const shelf = new Shelf(platform, new ProgressBars(() => {}), () => {});
    const weak = resolveTrainConfig({ ...relayConfig(4), coach: { kind: 'model', model: 'test/fixtures/relay-judge-weak', template: 'generic' } });
    const q = await shelf.coachQuality(weak, 'model:test/fixtures/relay-judge-weak');
    expect(q.ranking!.p).toBeCloseTo(0.617, 3);
    expect(q.weak).toBe(true);
    expect(q.line).toContain('(test/fixtures/relay-judge-weak/report.json)');
    const rubric = await shelf.coachQuality(resolveTrainConfig({ ...relayConfig(4), coach: { kind: 'rule' } }), 'rule:relay');
    expect([rubric.isRater, rubric.weak]).toEqual([true, false]);
  });
});
