/**
 * The teams the sandbox knows, in one registry: each team is one folder of domains/ whose index.ts
 * exports a Team (loop/team.ts); this file lists the shipped ones, and `registerTeam` adds another at
 * run time. The callers (the CLI, the lab, the benchmarks, the scripts) resolve a workflow's team here
 * and pass it to the loop, which never looks one up.
 *
 * For: `teamOf(workflow)` (tasks, outcome, coach facts, rubric, judge, template, metrics), a config
 * resolved with its team's settings (`resolveTrainConfig`), the held-out tasks of a config
 * (`heldOutTasks`), the page's team menu (`teamPresets`), the settings a team brings (`teamSettings`)
 * and what a config keeps or drops when the user switches teams (`switchTeam`), and a workflow's short
 * name in a link (`workflowName`, `namedWorkflow`: "relay of 128" is {team: 'relay', agents: 128}).
 * Not for: a team's own logic (its folder).
 *
 * Example: teamOf(MATH_CHAIN).heldOut(50) -> 50 level-balanced held-out math problems, levels interleaved;
 *          teamOf(relayWorkflow(4)).heldOut(200) -> the 200 held-out relay tasks for 4 agents;
 *          resolveTrainConfig({ workflow: relayWorkflow(4) }).lr -> 0.002 (the relay team's);
 *          switchTeam({ seed: 3, lr: 0.01 }, MATH_CHAIN, relayWorkflow(4)) -> { seed: 3, workflow: <relay-4> } (the relay's lr is resolveTrainConfig's to add)
 *          workflowName(relayWorkflow(128)) -> { team: 'relay', agents: 128 }; namedWorkflow('relay', 128) -> <relay-128>
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

/** The teams that take any number of agents in a range (the page's size field): the domain, its range. */
export function sizedTeams(): { domain: string; min: number; max: number }[] {
  return TEAMS.flatMap((t) => (t.sized ? [{ domain: t.name, min: t.sized.min, max: t.sized.max }] : []));
}

/** The workflow of `n` agents of sized team `domain` (`sizedTeams`), or why there is none, in words. */
export function sizedWorkflow(domain: string, n: number): WorkflowSpec | string {
  const t = TEAMS.find((x) => x.name === domain);
  if (!t?.sized) return `no team "${domain}" takes a number of agents (those that do: ${sizedTeams().map((s) => s.domain).join(', ') || 'none'})`;
  if (!Number.isInteger(n) || n < t.sized.min || n > t.sized.max) return `a ${domain} team has ${t.sized.min} to ${t.sized.max} agents, not ${n}`;
  return t.sized.workflow(n);
}

/** JSON with its object keys sorted: two values that differ only in key order print the same. */
function canonical(v: unknown): string {
  return JSON.stringify(v, (_, x) => (x && typeof x === 'object' && !Array.isArray(x)
    ? Object.fromEntries(Object.keys(x).sort().map((k) => [k, (x as Record<string, unknown>)[k]])) : x));
}

/** Whether two JSON values are the same whatever their key order. Example: sameValue({a: 1, b: 2}, {b: 2, a: 1}) -> true */
function sameValue(a: unknown, b: unknown): boolean {
  return canonical(a) === canonical(b);
}

/**
 * A workflow's short name, for a link: a sized team's domain and size when it is exactly that team's
 * workflow of that size ({team: 'relay', agents: 128}), else a menu preset's name when it is exactly
 * that preset ({team: 'math-chain'}); null for an edited workflow (the link then carries it whole).
 */
export function workflowName(w: WorkflowSpec): { team: string; agents?: number } | null {
  const t = TEAMS.find((x) => x.name === w.domain);
  if (t?.sized && w.agents.length >= t.sized.min && w.agents.length <= t.sized.max && sameValue(t.sized.workflow(w.agents.length), w)) {
    return { team: t.name, agents: w.agents.length };
  }
  const preset = teamPresets().find((p) => p.name === w.name && sameValue(p.workflow, w));
  return preset ? { team: preset.name } : null;
}

/**
 * A workflow in a few words, for a heading: its menu label when it is a preset, a sized team's "<domain> of N
 * agents" when it is that team's workflow of that size, else its own name. Whether it is a sized team says
 * whether the page's real tasks (the fixed teams) are what is open.
 * Example: teamLabel(relayWorkflow(128)) -> { label: 'relay of 128 agents', sized: true }
 */
export function teamLabel(w: WorkflowSpec): { label: string; sized: boolean } {
  const named = workflowName(w);
  const sized = sizedTeams().some((t) => t.domain === w.domain);
  const preset = named && teamPresets().find((p) => p.name === w.name && sameValue(p.workflow, w));
  // A sized preset's label without its aside ("relay of 4 agents (credit is the bottleneck)" -> "relay of 4 agents").
  if (preset) return { label: sized ? preset.label.replace(/ \(.*\)$/, '') : preset.label, sized };
  if (named?.agents !== undefined) return { label: `${named.team} of ${named.agents} agents`, sized };
  return { label: w.name, sized };
}

/** The workflow a link's short name stands for (`workflowName`'s inverse), or why it stands for none, in words. */
export function namedWorkflow(team: string, agents?: number): WorkflowSpec | string {
  if (agents !== undefined) return sizedWorkflow(team, agents);
  const preset = teamPresets().find((p) => p.name === team);
  if (preset) return preset.workflow;
  const sized = sizedTeams().find((s) => s.domain === team);
  if (sized) return `the team "${team}" needs its number of agents, e.g. agents=${sized.max} (${sized.min} to ${sized.max})`;
  return `no team is named "${team}" (the menu's: ${teamPresets().map((p) => p.name).join(', ')})`;
}

/**
 * What of a config patch a named configuration does not already say: the settings equal to those its
 * workflow's team brings are dropped (resolveTrainConfig applies them anyway, so the resolved config,
 * and the run it opens, are the same). Example: withoutTeamSettings(relayConfig(128)) -> { workflow: <relay-128> }
 */
export function withoutTeamSettings(patch: Record<string, unknown>): Record<string, unknown> {
  const w = patch.workflow as WorkflowSpec | undefined;
  if (!w || typeof w !== 'object' || !Array.isArray(w.agents) || !TEAMS.some((t) => t.name === w.domain)) return patch;
  const own = teamSettings(w);
  return Object.fromEntries(Object.entries(patch).filter(([k, v]) => !(k in own) || !sameValue(own[k], v)));
}
