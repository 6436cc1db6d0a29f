/**
 * The coach a config asks for: its settings (`CoachSettings`, the config's `coach`), and building it:
 * the team's rubric or a judge model in the engine, reading the team's own coach template or the
 * generic one, optionally miscalibrated, always cached by content.
 *
 * For: the CLI, the page's lab and the benchmarks (they pass in how to load a model and the team's
 * domain). Not for: the coach implementations themselves (coach.ts) or a team's rubric (its folder).
 *
 * Names a config may use (so that config.json says which judge scored and with which prompt):
 *   coach.model     "team": the team's own judge (the relay's models/relay-judge; math and data: models/judge);
 *                   anything else: that judge folder or URL
 *   coach.template  "team" (or ""): the team's own template, the generic one for a team without its own;
 *                   "generic": DEFAULT_COACH_TEMPLATE; anything else: that template text
 * Example: await buildCoach({kind: 'model', model: 'team', template: 'team', miscalibration: null}, load, teamOf(relayWorkflow(4)))
 *            -> a cached ModelCoach named "model:models/relay-judge", reading RELAY_COACH_TEMPLATE
 */
import type { LoadedModel } from '../engine/model/load.ts';
import { cachedCoach, MiscalibratedCoach, ModelCoach, type Coach, type Miscalibration } from './coach.ts';
import { DEFAULT_COACH_TEMPLATE } from './coach-format.ts';
import type { TierSettings } from './escalation.ts';
import { TieredCoach, type TieredOptions } from './tiered-coach.ts';

export interface CoachSettings {
  /** 'model': a judge model in the engine; 'rule': the team's rubric. */
  kind: 'model' | 'rule';
  /** Judge model for kind 'model': "team" (the team's own) or a folder or URL. */
  model: string;
  /** Coach prompt template: "team" or "" (the team's own), "generic", or the template's text. */
  template: string;
  /** Whose actions a judge is shown the ground truth with: the final agent's (MAPPA) or every agent's. */
  truth: 'final' | 'every';
  miscalibration: Miscalibration | null;
  /** Actions a judge model scores in one batch (default 16); greedy, so the scores do not depend on it beyond float rounding. */
  batch?: number;
  /** null: this coach scores every action. Else a coach in tiers (escalation.ts, tiered-coach.ts): this coach is tier 1, the team's rubric tier 2. */
  tiers: TierSettings | null;
}

/** The name a config gives the team's own judge or template. */
const TEAM_OWN = 'team';

/** What building a coach needs of the team: its rubric, and its own judge and template where it has them. */
export interface CoachingTeam {
  ruleCoach(): Coach;
  judgeModel?: string;
  coachTemplate?: string;
}

/** The judge model these settings load: the team's own for "team", else the one named. */
export function judgeSpec(s: Pick<CoachSettings, 'model'>, team: CoachingTeam): string {
  if (s.model !== TEAM_OWN && s.model !== '') return s.model;
  if (!team.judgeModel) throw new Error('coach.model: this team has no judge of its own; name a judge folder in coach.model');
  return team.judgeModel;
}

/** The template text these settings mean for this team. */
export function coachTemplateOf(s: Pick<CoachSettings, 'template'>, team: CoachingTeam): string {
  if (s.template === TEAM_OWN || s.template === '') return team.coachTemplate ?? DEFAULT_COACH_TEMPLATE;
  return s.template === 'generic' ? DEFAULT_COACH_TEMPLATE : s.template;
}

/** The template's name for records and the page: "team", "generic" or "custom" (a text of the config's own). */
export function templateName(s: Pick<CoachSettings, 'template'>, team: CoachingTeam): 'team' | 'generic' | 'custom' {
  if (s.template === TEAM_OWN || s.template === '') return team.coachTemplate ? 'team' : 'generic';
  return s.template === 'generic' || s.template === DEFAULT_COACH_TEMPLATE ? 'generic' : 'custom';
}

/**
 * The coach for these settings and this team: its rubric for kind "rule", else the judge model
 * (judgeSpec) reading the template (coachTemplateOf), shown the truth for every agent under
 * truth "every". A model coach is named "model:<judge folder>" (e.g. "model:models/relay-judge"), so a
 * run's summary says which judge coached.
 */
export async function buildCoach(s: CoachSettings, loadJudge: (spec: string) => Promise<LoadedModel>, team: CoachingTeam,
  tiered: Omit<TieredOptions, 'miscalibration'> = { seed: 0 }): Promise<Coach> {
  if (s.tiers) return buildTiers(s, s.tiers, loadJudge, team, tiered);
  if (s.kind === 'rule') return wrapCoach(team.ruleCoach(), s);
  const loaded = await loadJudge(judgeSpec(s, team));
  const judge = new ModelCoach(loaded, coachTemplateOf(s, team), undefined, s.batch ?? 16);
  return wrapCoach(s.truth === 'every' ? truthForEvery(judge) : judge, s);
}

/**
 * A coach in tiers (tiered-coach.ts): tier 1 the coach these settings name (the judge model read
 * directly, so that its spread can be read and it can be taught; the rubric, biased by the
 * miscalibration, for kind "rule"), tier 2 the team's rubric (standing in for a large hosted judge).
 * Example: buildCoach({...s, kind: 'model', tiers: {budget: 0.2, pick: 'spread', threshold: 0, teachEvery: 32}}, load, team, {seed: 0})
 *            -> a TieredCoach named "tiers:model:models/relay-judge-weak>rule:relay"
 */
async function buildTiers(s: CoachSettings, t: TierSettings, loadJudge: (spec: string) => Promise<LoadedModel>, team: CoachingTeam,
  o: Omit<TieredOptions, 'miscalibration'>): Promise<TieredCoach> {
  if (s.truth === 'every') throw new Error('coach.truth "every" with coach.tiers: not supported; set coach.truth to "final"');
  const tier1 = s.kind === 'rule' ? { coach: team.ruleCoach() } : { judge: await loadJudge(judgeSpec(s, team)), template: coachTemplateOf(s, team) };
  return new TieredCoach(tier1, team.ruleCoach(), t, { ...o, miscalibration: s.miscalibration, batch: s.batch ?? 16 });
}

/**
 * A coach shown the ground truth with every agent's action, not the final agent's alone: the truth
 * comes from the task each context carries. Example: a Code Executor's context gains "Ground truth: 28".
 */
export function truthForEvery(inner: Coach): Coach {
  return {
    name: inner.name,
    scoreBatch: (actions) => inner.scoreBatch(actions.map((a) => (a.groundTruth === undefined && a.task ? { ...a, groundTruth: a.task.answer } : a))),
  };
}

/** A scorer as a run uses it: with the config's miscalibration (noise, bias) when it asks for one, and a content cache. */
export function wrapCoach(scorer: Coach, s: Pick<CoachSettings, 'miscalibration'>): Coach {
  return cachedCoach(s.miscalibration ? new MiscalibratedCoach(scorer, s.miscalibration) : scorer);
}
