/**
 * Building the coach a config asks for: a judge model in the engine or the rule-based verifier,
 * optionally miscalibrated, always cached by content.
 *
 * For: the CLI and the browser worker (they pass in how to load a model). Not for: the coach
 * implementations themselves (coach.ts, rule-coach.ts).
 * Example: await buildCoach({kind: 'rule', ...}, load) -> cached RuleCoach
 */
import type { LoadedModel } from '../engine/model/load.ts';
import { cachedCoach, MiscalibratedCoach, ModelCoach, RuleCoach, type Coach } from './coach.ts';
import type { CoachSettings } from '../loop/config.ts';
import { DEFAULT_COACH_TEMPLATE } from './coach-format.ts';
import { ruleScore, type RuleTask } from '../domains/math/rule-coach.ts';

/** The rule-based verifier as a coach: it checks steps against the task attached to each action. */
export function ruleCoach(): Coach {
  return new RuleCoach('rule', (ctx) => {
    const task = (ctx.task ?? { answer: ctx.groundTruth ?? '' }) as RuleTask;
    const r = ruleScore(task, ctx);
    return { score: r.score, correct: ctx.final ? r.correct : undefined, reason: r.reason };
  });
}

/** `ruleCoach`: the domain's rule-based coach (math verifier by default; data-coach.ts for the data team). */
export async function buildCoach(s: CoachSettings, loadJudge: (spec: string) => Promise<LoadedModel>, rule: () => Coach = ruleCoach): Promise<Coach> {
  let coach: Coach = s.kind === 'rule' ? rule() : new ModelCoach(await loadJudge(s.model), s.template || DEFAULT_COACH_TEMPLATE);
  if (s.miscalibration) coach = new MiscalibratedCoach(coach, s.miscalibration);
  return cachedCoach(coach);
}
