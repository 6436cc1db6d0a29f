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

/** The judge every team's `coach.model` names by default (config.ts DEFAULT_CONFIG): the math / data judge. */
export const DEFAULT_JUDGE_MODEL = 'models/judge';

/**
 * A domain's rule coach that also names the team's own judge model (e.g. the relay team's
 * models/relay-judge): buildCoach loads that judge for `coach.kind: "model"` when the config leaves
 * `coach.model` at the default (DEFAULT_JUDGE_MODEL); a config naming any other judge keeps it.
 */
export type TeamRule = (() => Coach) & { readonly teamJudge?: string };

/** `rule` labelled with the team's own judge (see TeamRule). Example: withTeamJudge(relayRuleCoach, 'models/relay-judge'). */
export function withTeamJudge(rule: () => Coach, teamJudge: string): TeamRule {
  return Object.assign(() => rule(), { teamJudge });
}

/** The judge model `buildCoach` loads for these settings and this domain's rule: the team's own judge when the config names the default one. */
export function judgeSpec(s: Pick<CoachSettings, 'model'>, rule?: TeamRule): string {
  return rule?.teamJudge && (!s.model || s.model === DEFAULT_JUDGE_MODEL) ? rule.teamJudge : s.model;
}

/**
 * `ruleCoach`: the domain's rule-based coach (math verifier by default; data-coach.ts for the data team);
 * with a `teamJudge` on it (TeamRule), `coach.kind: "model"` loads that judge unless the config names another.
 * A model coach is named "model:<judge folder>" (e.g. "model:models/relay-judge"), so a run's summary says which judge coached.
 */
export async function buildCoach(s: CoachSettings, loadJudge: (spec: string) => Promise<LoadedModel>, rule: TeamRule = ruleCoach): Promise<Coach> {
  return wrapCoach(s.kind === 'rule' ? rule() : new ModelCoach(await loadJudge(judgeSpec(s, rule)), s.template || DEFAULT_COACH_TEMPLATE), s);
}

/** A scorer as a run uses it: with the config's miscalibration (noise, bias) when it asks for one, and a content cache. */
export function wrapCoach(scorer: Coach, s: Pick<CoachSettings, 'miscalibration'>): Coach {
  return cachedCoach(s.miscalibration ? new MiscalibratedCoach(scorer, s.miscalibration) : scorer);
}
