/**
 * The teams the sandbox knows, in one registry: each team is one folder of domains/ whose index.ts
 * exports a Team (loop/team.ts); this file lists the shipped ones, and `registerTeam` adds another at
 * run time. The callers (the CLI, the lab, the benchmarks, the scripts) resolve a workflow's team here
 * and pass it to the loop, which never looks one up.
 *
 * For: `teamOf(workflow)` (tasks, outcome, coach facts, rubric, judge, template, metrics), a config
 * resolved with its team's settings (`resolveTrainConfig`), the held-out tasks of a config
 * (`heldOutTasks`), the page's team menu (`teamPresets`), the settings a team brings (`teamSettings`)
 * and what a config keeps or drops when the user switches teams (`switchTeam`).
 * Not for: a team's own logic (its folder).
 *
 * Example: teamOf(MATH_CHAIN).heldOut(50) -> 50 level-balanced held-out math problems, levels interleaved;
 *          teamOf(relayWorkflow(4)).heldOut(200) -> the 200 held-out relay tasks for 4 agents;
 *          resolveTrainConfig({ workflow: relayWorkflow(4) }).lr -> 0.002 (the relay team's);
 *          switchTeam({ seed: 3, lr: 0.01 }, MATH_CHAIN, relayWorkflow(4)) -> { seed: 3, workflow: <relay-4> } (the relay's lr is resolveTrainConfig's to add)
 */
import { resolveConfig, type TrainConfig } from '../loop/config.ts';
import { heldOutOf } from '../loop/eval-queue.ts';
import type { Team, TeamChoice } from '../loop/team.ts';
import type { RolloutTask } from '../loop/trajectory.ts';
import type { WorkflowSpec } from '../loop/workflow.ts';
import type { SqlFunction } from '../tools/sql-statements.ts';
import { DATA_TEAM } from './data/index.ts';
import { MATH_TEAM } from './math/index.ts';
import { RELAY_TEAM } from './relay/index.ts';

/** The registered teams, in the menu's order; the first one's first workflow is the default. */
const TEAMS: Team[] = [MATH_TEAM, DATA_TEAM, RELAY_TEAM];

/** Adds a team (a folder of its own, e.g. a test's toy team); a team of the same name is replaced. */
export function registerTeam(team: Team): void {
  const at = TEAMS.findIndex((t) => t.name === team.name);
  if (at >= 0) TEAMS[at] = team;
  else TEAMS.push(team);
}

/** The domains a workflow may name. */
export function teamDomains(): string[] {
  return TEAMS.map((t) => t.name);
}

function registered(w: WorkflowSpec): Team {
  const team = TEAMS.find((t) => t.name === w.domain);
  if (!team) throw new Error(`workflow "${w.name}": no team has the domain "${w.domain}" (known: ${teamDomains().join(', ')})`);
  return team;
}

/** The team a workflow plays: its domain's, as that workflow makes it (a relay of its size). */
export function teamOf(w: WorkflowSpec): Team {
  const team = registered(w);
  return team.forWorkflow?.(w) ?? team;
}

/** The table functions every registered team brings to the SQL tool (the data team's fit_predict): for a SQL tool shared by runs of any team. */
export function sqlFunctions(): SqlFunction[] {
  return TEAMS.flatMap((t) => t.sqlFunctions ?? []);
}

/** The workflow a config trains when it names none: the first team's first (the math chain). */
export function defaultWorkflow(): WorkflowSpec {
  return TEAMS[0].presets!()[0].workflow;
}

/** Every team's workflows, in the menu's order (fresh copies). */
export function teamPresets(): TeamChoice[] {
  return TEAMS.flatMap((t) => t.presets?.() ?? []);
}

/**
 * The loop settings a team brings with it (a config patch without the workflow); a team with none: {}.
 * Applied in one place, resolveTrainConfig, between the defaults and the config's own values.
 */
export function teamSettings(w: WorkflowSpec): Record<string, unknown> {
  return registered(w).settings?.(w) ?? {};
}

/**
 * A complete, validated config from a partial one (a parsed configs/*.json, the page's patch): the
 * defaults, overlaid by the settings the workflow's team brings, overlaid by `partial` (loop/config.ts).
 */
export function resolveTrainConfig(partial: unknown = {}): TrainConfig {
  return resolveConfig(partial, { defaultWorkflow: defaultWorkflow(), domains: teamDomains(), settings: teamSettings });
}

/**
 * The config patch after switching from team `from` to team `to`: the same domain keeps every setting
 * (a team's settings do not depend on its size); another domain drops the user's values of the settings
 * either team brings (so a learning rate set for the relay does not follow to math). `to`'s own
 * settings are not added here: resolveTrainConfig applies them to every config of the team.
 */
export function switchTeam(patch: Record<string, unknown>, from: WorkflowSpec | undefined, to: WorkflowSpec): Record<string, unknown> {
  if (from && to.domain === from.domain) return { ...patch, workflow: to };
  const owned = new Set([...Object.keys(from ? teamSettings(from) : {}), ...Object.keys(teamSettings(to))]);
  const rest = Object.fromEntries(Object.entries(patch).filter(([k]) => !owned.has(k)));
  return { ...rest, workflow: to };
}

/**
 * The held-out tasks an evaluation of `config` runs, in order (loop/eval-queue.ts `heldOutOf` with the
 * config's team): the first `config.evalTasks` of a given held-out dataset, else the team's fixed set.
 */
export function heldOutTasks(config: { workflow: WorkflowSpec; evalTasks: number }, given?: RolloutTask[]): RolloutTask[] {
  return heldOutOf(teamOf(config.workflow), config, given);
}
