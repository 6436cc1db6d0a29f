/**
 * A coach in tiers (coach/tiered-coach.ts) on the real weak relay judge (models/relay-judge-weak) as
 * tier 1 and the relay rubric as tier 2, on hand-made relay steps (right replies and replies that pass
 * the input on): every verdict says its tier, tier 2's verdicts are the rubric's own (the independent
 * reference), the budget is kept, every tier-2 answer is kept as a correction, and teaching every K
 * answers makes a version named by the sha-256 of its weights that scores from the next batch on.
 * The config refuses bad tier settings by name.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/core/engine/backend.ts';
import { loadModel, type LoadedModel } from '../../../src/core/engine/model/load.ts';
import { folderSource } from '../../../src/core/engine/model/sources.ts';
import { actionInputText, type ActionContext } from '../../../src/core/coach/coach-format.ts';
import { ModelCoach, RuleCoach, type ChainPlace } from '../../../src/core/coach/coach.ts';
import { buildCoach } from '../../../src/core/coach/coaches.ts';
import { TIER2_RATER, TieredCoach } from '../../../src/core/coach/tiered-coach.ts';
import { AnswerBoard, PERSON_RATER, type Person, type PersonQuestion } from '../../../src/core/coach/person-tier.ts';
import { resolveTrainConfig, teamOf } from '../../../src/core/domains/index.ts';
import { relayHeldOut, relayStep } from '../../../src/core/domains/relay/tasks.ts';
import { RELAY_COACH_TEMPLATE, relayRuleCoach, relayWorkflow } from '../../../src/core/domains/relay/team.ts';
import { placeVars, renderTemplate } from '../../../src/core/loop/workflow.ts';

const WEAK = 'models/relay-judge-weak';

/** Agent `position` of a relay of 4 on held-out task `index`, its predecessors right, replying `reply(x, k)`. */
function stepContext(position: number, index: number, reply: (x: number, k: number) => number): ActionContext {
  const n = 4;
  const task = relayHeldOut(n)[index];
  const w = relayWorkflow(n);
  const agent = w.agents[position - 1];
  const x = task.adds.slice(0, position - 1).reduce(relayStep, task.start);
  const vars: Record<string, string | number> = { ...placeVars(w, position - 1), part: task.parts[position - 1] };
  if (position > 1) vars[`output:${w.agents[position - 2].id}`] = String(x);
  const messages = [{ content: renderTemplate(agent.system, vars) }, { content: renderTemplate(agent.user, vars) }];
  return {
    problem: task.problem, agentId: agent.id, role: agent.role, input: actionInputText(messages), output: String(reply(x, task.adds[position - 1])),
    groundTruth: agent.final ? task.answer : undefined, final: !!agent.final, task,
  };
}

/** 8 chains of 4 steps: even chains right, odd chains pass the input on at step 2 and after (failed). */
function batch(offset: number): { actions: ActionContext[]; places: ChainPlace[] } {
  const actions: ActionContext[] = [];
  const places: ChainPlace[] = [];
  for (let chain = 0; chain < 8; chain++) {
    for (let step = 0; step < 4; step++) {
      const wrong = chain % 2 === 1 && step >= 1;
      actions.push(stepContext(step + 1, offset + chain, wrong ? (x) => x : relayStep));
      places.push({ chain, step, failed: chain % 2 === 1 });
    }
  }
  return { actions, places };
}

describe('TieredCoach', () => {
  let judge: LoadedModel;
  beforeAll(async () => {
    await initBackend({ force: 'wasm' });
    judge = await loadModel(folderSource(WEAK), { tokenizer: 'required' });
  });

  it('tier 1 scores every action, tier 2 (the rubric) the budget\'s share by spread; each verdict says its tier', async () => {
    const coach = new TieredCoach({ judge, template: RELAY_COACH_TEMPLATE }, relayRuleCoach(), { budget: 0.25, pick: 'spread', threshold: 0, teachEvery: 0 }, { seed: 0 });
    const { actions, places } = batch(0);
    const rs = await coach.scoreBatch(actions, places);
    const rubric = await relayRuleCoach().scoreBatch(actions);
    expect(rs.filter((r) => r.tier === 2)).toHaveLength(8); // round(0.25 * 32)
    expect(rs.filter((r) => r.tier === 1)).toHaveLength(24);
    rs.forEach((r, i) => { if (r.tier === 2) expect(r.score).toBe(rubric[i].score); });
    expect(coach.tierRecord()).toEqual({ scored: [24, 8], judge: WEAK, corrections: 8, pending: 8 });
    expect(coach.corrections.every((c) => c.by === TIER2_RATER)).toBe(true);
  }, 120_000);

  it('an empty reply gets the one-coach run\'s 0 from tier 1 (the judge is not believed), and is not escalated', async () => {
    const coach = new TieredCoach({ judge, template: RELAY_COACH_TEMPLATE }, relayRuleCoach(), { budget: 0.25, pick: 'spread', threshold: 0, teachEvery: 0 }, { seed: 0 });
    const { actions, places } = batch(0);
    const empty = [1, 6, 13, 31];
    for (const i of empty) actions[i] = { ...actions[i], output: '' };
    const rs = await coach.scoreBatch(actions, places);
    const alone = await new ModelCoach(judge, RELAY_COACH_TEMPLATE).scoreBatch(empty.map((i) => actions[i]));
    expect(empty.map((i) => rs[i])).toEqual(alone.map((r) => ({ ...r, tier: 1 })));
    expect(alone.map((r) => [r.score, r.attempts])).toEqual(empty.map(() => [0, 0]));
    expect(alone[3].correct).toBe(false); // the last agent's empty reply is a wrong answer
  }, 120_000);

  it('teaches tier 1 every K answers; the version named by its hash scores from the next batch', async () => {
    const coach = new TieredCoach({ judge, template: RELAY_COACH_TEMPLATE }, relayRuleCoach(), { budget: 0.25, pick: 'random', threshold: 0, teachEvery: 8 },
      { seed: 1, teach: { epochs: 1 } });
    await coach.scoreBatch(batch(0).actions, batch(0).places);
    const first = coach.tierRecord();
    expect(first.judge).toBe(WEAK);
    expect(first.taught?.judge).toMatch(/^taught:relay-judge-weak-[0-9a-f]{12}$/);
    expect(first.taught?.corrections).toBe(8);
    expect(first.pending).toBe(0);
    await coach.scoreBatch(batch(8).actions, batch(8).places);
    expect(coach.tierRecord().judge).toBe(first.taught!.judge); // the taught version scored this batch
    coach.dispose();
  }, 300_000);

  it('a rubric tier 1 (biased) with first-wrong escalation needs no judge', async () => {
    const biased = new RuleCoach('rule:always-7', () => ({ score: 7 }));
    const coach = new TieredCoach({ coach: biased }, relayRuleCoach(), { budget: 4 / 32, pick: 'first-wrong', threshold: 0, teachEvery: 0 }, { seed: 0 });
    const { actions, places } = batch(0);
    const rs = await coach.scoreBatch(actions, places);
    // Tier 1 scores 7 everywhere: no step below 5, so each failed chain's lowest = its first step; the 4 failed chains' step 0.
    expect(rs.map((r, i) => (r.tier === 2 ? i : -1)).filter((i) => i >= 0)).toEqual([4, 12, 20, 28]);
    expect(() => new TieredCoach({ coach: biased }, relayRuleCoach(), { budget: 0.1, pick: 'spread', threshold: 0, teachEvery: 0 }, { seed: 0 })).toThrow(/judge model/);
  });

  it('tier 3: the person is asked where tiers 1 and 2 disagree most; an answer replaces tier 2\'s verdict, a skip leaves it', async () => {
    // The person is a script of answers (a person cannot sit in a unit test); the line format and the waiting are person-tier.ts's own.
    const board = new AnswerBoard();
    const asked: PersonQuestion[][] = [];
    const person: Person = { name: 'script', ask: (qs, wait) => (asked.push(qs), board.wait(qs.map((q) => q.id), wait)) };
    board.offer('1-4 0');
    board.offer('{"id": "1-12", "skip": true}');
    const biased = new RuleCoach('rule:always-7', () => ({ score: 7 }));
    const settings = { budget: 4 / 32, pick: 'first-wrong' as const, threshold: 0, teachEvery: 0, person: 2 / 32, personWait: 5 };
    expect(() => new TieredCoach({ coach: biased }, relayRuleCoach(), settings, { seed: 0 })).toThrow(/coach\.tiers\.person: .* none answers here/);
    const coach = new TieredCoach({ coach: biased }, relayRuleCoach(), settings, { seed: 0, person });
    const { actions, places } = batch(0);
    const rs = await coach.scoreBatch(actions, places);
    const rubric = await relayRuleCoach().scoreBatch(actions);
    // Tier 2 scored the 4 failed chains' first steps (right: the rubric gives 10, tier 1 said 7); all disagree by 3: the first two by place.
    expect(asked[0].map((q) => [q.id, q.tier1, q.tier2])).toEqual([['1-4', 7, rubric[4].score], ['1-12', 7, rubric[12].score]]);
    expect(rs[4]).toMatchObject({ score: 0, tier: 3, reason: 'a person' });
    expect(rs[12]).toMatchObject({ score: rubric[12].score, tier: 2 });
    expect(rs.filter((r) => r.tier === 2)).toHaveLength(3);
    const record = coach.tierRecord();
    expect(record.scored).toEqual([28, 3, 1]);
    expect(record.person).toMatchObject({ asked: 2, answered: 1, skipped: 1 });
    expect(coach.corrections.map((c) => c.by).sort()).toEqual([PERSON_RATER, TIER2_RATER, TIER2_RATER, TIER2_RATER]);
    expect(coach.corrections.find((c) => c.by === PERSON_RATER)).toMatchObject({ score: 0, was: 7 });
    // A run resumed after 4 iterations asks its fifth iteration's questions as 5-<index>; none answered in the wait: tier 2 stands.
    const later = new TieredCoach({ coach: biased }, relayRuleCoach(), { ...settings, personWait: 0.1 }, { seed: 0, person });
    later.resumeAt(4);
    const again = await later.scoreBatch(actions, places);
    expect(asked[1].map((q) => q.id)).toEqual(['5-4', '5-12']);
    expect(later.tierRecord()).toMatchObject({ scored: [28, 4, 0], person: { asked: 2, answered: 0, skipped: 0 } });
    expect(again.filter((r) => r.tier === 3)).toHaveLength(0);
  });

  it('the config: coach.tiers defaults, refuses bad values by name, and builds a tiered coach', async () => {
    const w = relayWorkflow(4);
    expect(resolveTrainConfig({ workflow: w }).coach.tiers).toBeNull();
    expect(resolveTrainConfig({ workflow: w, coach: { kind: 'model', tiers: { budget: 0.1 } } }).coach.tiers).toEqual({ budget: 0.1, pick: 'spread', threshold: 0, teachEvery: 32, person: 0, personWait: 120 });
    expect(() => resolveTrainConfig({ workflow: w, coach: { kind: 'model', tiers: { budget: 2 } } })).toThrow(/coach\.tiers\.budget \(share escalated to tier 2\)/);
    expect(() => resolveTrainConfig({ workflow: w, coach: { kind: 'model', tiers: { pick: 'loud' } } })).toThrow(/coach\.tiers\.pick/);
    expect(() => resolveTrainConfig({ workflow: w, coach: { kind: 'model', tiers: { budgt: 0.1 } } })).toThrow(/coach\.tiers\.budgt: unknown key/);
    expect(() => resolveTrainConfig({ workflow: w, coach: { kind: 'model', tiers: { pick: 'random', threshold: 2 } } })).toThrow(/coach\.tiers\.threshold.*needs pick "spread"/);
    expect(() => resolveTrainConfig({ workflow: w, coach: { kind: 'rule', tiers: {} } })).toThrow(/judge model as tier 1/);
    expect(() => resolveTrainConfig({ workflow: w, coach: { kind: 'model', tiers: { budget: 0.1, person: 0.2 } } }))
      .toThrow(/coach\.tiers\.person \(share asked of a person \(tier 3\)\): 0.2 is more than the share escalated to tier 2 \(coach\.tiers\.budget\), 0.1;/);
    expect(() => resolveTrainConfig({ workflow: w, coach: { kind: 'model', tiers: { personWait: 0 } } })).toThrow(/coach\.tiers\.personWait/);
    const c = resolveTrainConfig({ workflow: w, coach: { kind: 'model', model: WEAK, tiers: { budget: 0.1, teachEvery: 0 } } });
    const coach = await buildCoach(c.coach, async () => judge, teamOf(w), { seed: 0 });
    expect(coach.name).toBe(`tiers:model:${WEAK}>${relayRuleCoach().name}`);
  });
});
