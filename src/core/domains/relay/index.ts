/**
 * The relay team, as one folder's entry: N agents (1..128) that each do one step of a sum (team.ts) on
 * relay tasks (tasks.ts), judged step by step by its rubric, and coached by its own judge model
 * (models/relay-judge, built by scripts/pretrain-relay-judge.ts) through its own coach template.
 *
 * For: `RELAY_TEAM`, what domains/index.ts registers. Not for: the team's logic (team.ts) or
 * measuring its judge (judge.ts).
 * Example: RELAY_TEAM.forWorkflow!(relayWorkflow(4)).heldOut(200) -> the 200 held-out relay tasks for 4 agents.
 */
import type { Team } from '../../loop/team.ts';
import { relayHeldOut, relayTasks } from './tasks.ts';
import { RELAY_COACH_TEMPLATE, RELAY_JUDGE_MODEL, relayConfig, relayOutcome, relayRuleCoach, relayStepVerdict, relayWorkflow } from './team.ts';

/**
 * The relay sizes the team menu offers (the teaching demo: process vs outcome with 2, 4 and 6 agents;
 * Scale the team's 8 to 32, and 64; the largest, 128); any other size from 1 to 128 is typed in the page's size field (`sized`).
 */
const MENU_SIZES = [2, 4, 6, 8, 16, 32, 64, 128];

/** The relay team of n agents: a fixed training pool of distinct tasks, the held-out 200, per-step checks. */
function relayTeam(n: number): Team {
  return {
    name: 'relay',
    trainPool: (seed) => relayTasks(n, seed, 4000),
    // Drawn at random (seeded) with no sorting, so any prefix is already an unbiased sample.
    heldOut: (count) => relayHeldOut(n).slice(0, count),
    outcome: relayOutcome,
    stepRight: (t) => t.actions.map((a) => relayStepVerdict(a.messages[a.messages.length - 1]?.content ?? '', a.text).right),
    ruleCoach: relayRuleCoach,
    judgeModel: RELAY_JUDGE_MODEL,
    coachTemplate: RELAY_COACH_TEMPLATE,
    metricNames: ['stepAccuracy'],
  };
}

/** The relay team as registered: of 2 agents, and of as many as a workflow has (forWorkflow). */
export const RELAY_TEAM: Team = {
  ...relayTeam(2),
  forWorkflow: (w) => relayTeam(w.agents.length),
  presets: () => MENU_SIZES.map(relayWorkflow).map((w) => ({
    name: w.name, label: `relay of ${w.agents.length} agents${w.agents.length <= 6 ? ' (credit is the bottleneck)' : ''}`, workflow: w,
  })),
  sized: { min: 1, max: 128, workflow: relayWorkflow },
  // A relay's settings do not depend on its size.
  settings: (w) => Object.fromEntries(Object.entries(relayConfig(w.agents.length)).filter(([k]) => k !== 'workflow')),
};
