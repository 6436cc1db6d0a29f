/**
 * The relay team's own judge (models/relay-judge, scripts/pretrain-relay-judge.ts): reading the team's
 * own template it scores a right step above the input passed on unchanged in every fixed context, the
 * relay team's coach ("team") loads it (and a config naming another judge keeps that one), and the
 * judge-vs-rater measures on hand-made scores.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/core/engine/backend.ts';
import { loadModel, type LoadedModel } from '../../../src/core/engine/model/load.ts';
import { folderSource } from '../../../src/core/engine/model/sources.ts';
import { isEmptyReply, ModelCoach } from '../../../src/core/coach/coach.ts';
import { buildCoach, coachTemplateOf, judgeSpec, templateName } from '../../../src/core/coach/coaches.ts';
import { actionInputText, DEFAULT_COACH_TEMPLATE, type ActionContext } from '../../../src/core/coach/coach-format.ts';
import { resolveTrainConfig, teamOf } from '../../../src/core/domains/index.ts';
import { relayHeldOut, relayStep } from '../../../src/core/domains/relay/tasks.ts';
import { RELAY_COACH_TEMPLATE, RELAY_JUDGE_MODEL, relayRuleScore, relayWorkflow } from '../../../src/core/domains/relay/team.ts';
import { baselineScores, judgeVsRater, type RatedStep } from '../../../src/core/domains/relay/judge.ts';
import { counterfactualTwin, relayWant, tasksFor, teamSizes } from '../../../scripts/pretrain-relay-judge.ts';
import { Rng } from '../../../src/core/stats/rng.ts';
import { DEFAULT_TRAIN_CONFIG } from '../../../src/core/loop/config.ts';
import { placeVars, renderTemplate } from '../../../src/core/loop/workflow.ts';

/** Agent `position` of a team of n on held-out task `index`, its predecessors all right, replying `reply(x, k)`. */
function stepContext(n: number, position: number, index: number, reply: (x: number, k: number) => number): ActionContext {
  const task = relayHeldOut(n)[index];
  const w = relayWorkflow(n);
  const agent = w.agents[position - 1];
  const x = task.adds.slice(0, position - 1).reduce(relayStep, task.start);
  const k = task.adds[position - 1];
  const vars: Record<string, string | number> = { ...placeVars(w, position - 1), part: task.parts[position - 1] };
  if (position > 1) vars[`output:${w.agents[position - 2].id}`] = String(x);
  const messages = [{ content: renderTemplate(agent.system, vars) }, { content: renderTemplate(agent.user, vars) }];
  return {
    problem: task.problem, agentId: agent.id, role: agent.role, input: actionInputText(messages), output: String(reply(x, k)),
    groundTruth: agent.final ? task.answer : undefined, final: !!agent.final, task,
  };
}

describe('models/relay-judge', () => {
  let judge: LoadedModel;
  beforeAll(async () => {
    await initBackend({ force: 'cpu' });
    judge = await loadModel(folderSource(RELAY_JUDGE_MODEL), { tokenizer: 'required' });
  });

  // The shipped judge reads the team's own template (RELAY_COACH_TEMPLATE) and ranks 99.6 % or more of an agent's
  // differently-rated held-out pairs as the rater does at every team size 1..128 (docs/judges.md): every fixed context is checked.
  it('scores a right step above the input passed on, in every fixed context, in the coach format', async () => {
    const cases: [number, number, number][] = [[4, 1, 0], [4, 2, 3], [4, 4, 5], [2, 2, 7], [6, 3, 11], [3, 2, 1], [5, 5, 2], [1, 1, 4], [4, 3, 9], [6, 6, 8], [2, 1, 12], [5, 2, 6],
      // Larger teams (two- and three-digit roles and sizes: the 1..6 judge copied the reply from a fixed distance and failed these).
      [8, 7, 1], [16, 3, 2], [16, 12, 0], [32, 17, 4], [64, 40, 5], [100, 99, 3], [128, 3, 2], [128, 100, 1], [128, 128, 7]];
    const contexts = cases.flatMap(([n, p, i]) => [stepContext(n, p, i, relayStep), stepContext(n, p, i, (x) => x)]);
    const results = await new ModelCoach(judge, RELAY_COACH_TEMPLATE).scoreBatch(contexts);
    expect(results.every((r) => r.ok), results.map((r) => r.raw).join(' | ')).toBe(true);
    cases.forEach((c, k) => expect(results[2 * k].score, `${c}: ${results[2 * k].raw} vs ${results[2 * k + 1].raw}`).toBeGreaterThan(results[2 * k + 1].score));
  }, 300_000);

  // coach.batch (actions judged together) is a speed setting: greedy answers, the same in any batch.
  it('answers the same whatever its batch (coach.batch), and a config sets it', async () => {
    const cases: [number, number, number][] = [[4, 2, 3], [16, 12, 0], [32, 17, 4], [128, 3, 2], [128, 100, 1], [128, 128, 7], [64, 40, 5]];
    const contexts = cases.flatMap(([n, p, i]) => [stepContext(n, p, i, relayStep), stepContext(n, p, i, (x) => x), stepContext(n, p, i, (x) => (x + 3) % 10)]);
    const raws = async (batch: number) => (await new ModelCoach(judge, RELAY_COACH_TEMPLATE, undefined, batch).scoreBatch(contexts)).map((r) => r.raw);
    const one = await raws(contexts.length);
    expect(await raws(16)).toEqual(one);
    expect(await raws(5)).toEqual(one);
    expect(DEFAULT_TRAIN_CONFIG.coach.batch).toBe(16);
    expect(resolveTrainConfig({ workflow: relayWorkflow(4), coach: { batch: 64 } }).coach.batch).toBe(64);
    expect(() => resolveTrainConfig({ workflow: relayWorkflow(4), coach: { batch: 0 } })).toThrow(/coach.batch/);
  }, 300_000);

  // The judge reads the input cell and the reply, not the task: two tasks whose agent 3 sees the same digits are one prompt.
  // Such a prompt runs once in a coach's life, and its answer is the one a fresh coach gives it.
  it('runs each prompt once: a repeated prompt (another task, the same cell) is answered from memory, as a fresh coach answers it', async () => {
    const n = 8;
    const tasks = relayHeldOut(n);
    const cellOf = (i: number) => {
      const t = tasks[i];
      return `${t.adds.slice(0, 2).reduce(relayStep, t.start)}+${t.parts[2]}`;
    };
    const seen = new Map<string, number>();
    let pair: [number, number] | undefined;
    for (let i = 0; i < tasks.length && !pair; i++) {
      const j = seen.get(cellOf(i));
      if (j !== undefined && tasks[j].problem !== tasks[i].problem) pair = [j, i];
      seen.set(cellOf(i), i);
    }
    const [a, b] = pair!;
    const contexts = [stepContext(n, 3, a, relayStep), stepContext(n, 3, b, relayStep), stepContext(n, 3, a, (x) => x), stepContext(n, 4, a, relayStep)];
    expect(contexts[0].problem).not.toBe(contexts[1].problem);
    const coach = new ModelCoach(judge, RELAY_COACH_TEMPLATE);
    const first = await coach.scoreBatch(contexts);
    expect([coach.asked, coach.generated]).toEqual([4, 3]);
    const again = await coach.scoreBatch(contexts.slice(0, 2));
    expect([coach.asked, coach.generated]).toEqual([6, 3]);
    expect(again.map((r) => r.raw)).toEqual(first.slice(0, 2).map((r) => r.raw));
    const fresh = await Promise.all(contexts.map(async (c) => (await new ModelCoach(judge, RELAY_COACH_TEMPLATE).scoreBatch([c]))[0].raw));
    expect(first.map((r) => r.raw)).toEqual(fresh);
  }, 300_000);

  // An empty reply did nothing: it scores 0 (a wrong answer for the last agent) and is never shown to the judge, which
  // read a missing reply as the right digit in some cells (docs/judges.md, "A blind spot of the relay judge"). The other actions of
  // the batch are judged as they are alone.
  it('scores an empty reply 0 without asking the judge, and the rest of the batch as alone', async () => {
    const empty = (c: ActionContext, output: string) => ({ ...c, output });
    const contexts = [stepContext(16, 3, 2, relayStep), empty(stepContext(16, 5, 1, relayStep), ''), stepContext(16, 5, 1, (x) => x),
      empty(stepContext(8, 8, 3, relayStep), ' \u001d\n'), stepContext(8, 8, 3, relayStep)];
    const coach = new ModelCoach(judge, RELAY_COACH_TEMPLATE);
    const results = await coach.scoreBatch(contexts);
    expect([coach.asked, coach.generated]).toEqual([3, 3]);
    expect(results.map((r) => [r.score, r.ok, r.attempts])).toEqual([[10, true, 1], [0, true, 0], [0, true, 1], [0, true, 0], [10, true, 1]]);
    expect([results[1].correct, results[3].correct]).toEqual([undefined, false]);
    const alone = await new ModelCoach(judge, RELAY_COACH_TEMPLATE).scoreBatch([contexts[0], contexts[2], contexts[4]]);
    expect([results[0], results[2], results[4]]).toEqual(alone);
    expect([isEmptyReply(''), isEmptyReply(' \n\t'), isEmptyReply('\u001d'), isEmptyReply('7'), isEmptyReply(' 0 ')]).toEqual([true, true, true, false, false]);
  }, 300_000);

  it('is the relay team\'s own judge ("team"), reading the team\'s own template, unless the config names others', async () => {
    const relay = teamOf(relayWorkflow(4));
    expect(relay.judgeModel).toBe(RELAY_JUDGE_MODEL);
    expect(DEFAULT_TRAIN_CONFIG.coach.model).toBe('team');
    expect(judgeSpec(DEFAULT_TRAIN_CONFIG.coach, relay)).toBe(RELAY_JUDGE_MODEL);
    expect(judgeSpec({ model: 'models/other-judge' }, relay)).toBe('models/other-judge');
    expect(coachTemplateOf(DEFAULT_TRAIN_CONFIG.coach, relay)).toBe(RELAY_COACH_TEMPLATE);
    expect(coachTemplateOf({ template: 'generic' }, relay)).toBe(DEFAULT_COACH_TEMPLATE);
    expect(templateName(DEFAULT_TRAIN_CONFIG.coach, relay)).toBe('team');
    // The math team: its own judge is models/judge, and it has no template of its own (the generic one).
    const math = teamOf(resolveTrainConfig({}).workflow);
    expect(judgeSpec(DEFAULT_TRAIN_CONFIG.coach, math)).toBe('models/judge');
    expect(coachTemplateOf(DEFAULT_TRAIN_CONFIG.coach, math)).toBe(DEFAULT_COACH_TEMPLATE);
    expect(templateName(DEFAULT_TRAIN_CONFIG.coach, math)).toBe('generic');
    const asked: string[] = [];
    const coach = await buildCoach({ ...DEFAULT_TRAIN_CONFIG.coach, kind: 'model' }, async (spec) => (asked.push(spec), judge), relay);
    expect(asked).toEqual([RELAY_JUDGE_MODEL]);
    expect(coach.name).toBe(`model:${RELAY_JUDGE_MODEL}`);
    // The rule coach is still the rubric.
    expect((await buildCoach({ ...DEFAULT_TRAIN_CONFIG.coach, kind: 'rule' }, async () => judge, relay)).name).toBe('rule:relay');
  });
});

describe('judgeVsRater', () => {
  it('counts within-agent pairs, ties half, and the baselines sit at chance', () => {
    const rater = [10, 0, 10, 0];
    const groups = ['4:agent1', '4:agent1', '4:agent2', '4:agent2'];
    const perfect = judgeVsRater(rater, [9, 1, 10, 0], groups, { reps: 20 });
    expect(perfect.pairs).toBe(2);
    expect(perfect.ranking.p).toBe(1);
    expect(perfect.agreement.p).toBe(1);
    expect(perfect.mae.p).toBeCloseTo(0.5);
    expect(judgeVsRater(rater, [5, 5, 0, 10], groups, { reps: 20 }).ranking.p).toBe(0.25);
    const { mean } = baselineScores(rater);
    expect(judgeVsRater(rater, mean, groups, { reps: 20 }).ranking.p).toBe(0.5);
  });
});

describe('counterfactualTwin (scripts/pretrain-relay-judge.ts --pairs 1)', () => {
  it('gives a right step a wrong reply and a wrong step the right one, re-rated by the rubric', () => {
    const rng = new Rng('twin-test');
    const step = (reply: (x: number, k: number) => number, position = 2): RatedStep => {
      const context = stepContext(4, position, 3, reply);
      const r = relayRuleScore(context);
      return { context, rating: { score: r.score, correct: context.final ? r.correct : undefined }, kind: r.score === 10 ? 'right' : 'other', group: `4:agent${position}`, n: 4, position };
    };
    for (let i = 0; i < 20; i++) {
      const right = counterfactualTwin(step(relayStep), rng)!;
      expect(right.rating.score).toBe(0);
      expect(right.kind === 'passed-on' || right.kind === 'other').toBe(true);
      expect(Number(right.context.output)).not.toBe(relayWant(right.context.input));
    }
    const passed = counterfactualTwin(step((x) => x), rng)!;
    expect(passed.rating.score).toBe(10);
    expect(passed.kind).toBe('right');
    expect(Number(passed.context.output)).toBe(relayWant(passed.context.input));
    // The final agent's ANSWER_CORRECT follows the new reply.
    const last = counterfactualTwin(step((x) => x, 4), rng)!;
    expect(last.rating).toEqual({ score: 10, correct: true });
    // Everything but the reply is the same context.
    expect({ ...passed.context, output: '' }).toEqual({ ...step((x) => x).context, output: '' });
  });
});

describe('teamSizes and tasksFor (scripts/pretrain-relay-judge.ts --sizes, --large-steps)', () => {
  it('reads sizes and ranges, refuses sizes outside 1..128, and keeps the small sizes at --tasks', () => {
    expect(teamSizes('1-6')).toEqual([1, 2, 3, 4, 5, 6]);
    expect(teamSizes('1-6,7-128:11')).toEqual([1, 2, 3, 4, 5, 6, 7, 18, 29, 40, 51, 62, 73, 84, 95, 106, 117, 128]);
    expect(teamSizes('16,8,8')).toEqual([8, 16]);
    expect(() => teamSizes('1-129')).toThrow(/--sizes: a relay team has 1..128 agents, got 129/);
    expect(() => teamSizes('a-b')).toThrow(/--sizes: team sizes like/);
    expect(tasksFor(4, 300, 400)).toBe(300);
    expect(tasksFor(7, 300, 400)).toBe(58);
    expect(tasksFor(128, 300, 400)).toBe(4);
  });
});
