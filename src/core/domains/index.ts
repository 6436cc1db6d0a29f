/**
 * The teams the sandbox knows, in one registry: each team is one folder of domains/ whose index.ts
 * exports a Team (domain.ts); this file lists the shipped ones, and `registerTeam` adds another at run
 * time. The loop asks the registry for a workflow's Domain and never names a team.
 *
 * For: `domainOf(workflow)` (tasks, outcome, coach facts, rubric, judge, template, metrics), the held-out
 * and training tasks of a config (`heldOutTasks`, `trainTasks`), the page's team menu (`teamPresets`),
 * the settings a team brings (`teamSettings`: resolveTrainConfig applies them, nothing else does) and
 * what a config keeps or drops when the user switches teams (`switchTeam`).
 * Not for: a team's own logic (its folder).
 *
 * Example: domainOf(MATH_CHAIN).heldOut(50) -> 50 level-balanced held-out math problems, levels interleaved;
 *          domainOf(relayWorkflow(4)).heldOut(200) -> the 200 held-out relay tasks for 4 agents;
 *          switchTeam({ seed: 3, lr: 0.01 }, MATH_CHAIN, relayWorkflow(4)) -> { seed: 3, workflow: <relay-4> } (the relay's lr is resolveTrainConfig's to add)
 */
import type { RolloutTask, Trajectory } from '../loop/trajectory.ts';
import type { WorkflowSpec } from '../loop/workflow.ts';
import type { Domain, Team, TeamChoice } from './domain.ts';
import { DATA_TEAM_ENTRY } from './data/index.ts';
import { MATH_TEAM } from './math/index.ts';
import { RELAY_TEAM } from './relay/index.ts';

export type { Domain, Team, TeamChoice } from './domain.ts';

/** The registered teams, in the menu's order; the first one's first workflow is the default. */
const TEAMS: Team[] = [MATH_TEAM, DATA_TEAM_ENTRY, RELAY_TEAM];

/** Adds a team (a folder of its own, e.g. a test's toy team); a team of the same domain is replaced. */
export function registerTeam(team: Team): void {
  const at = TEAMS.findIndex((t) => t.domain === team.domain);
  if (at >= 0) TEAMS[at] = team;
  else TEAMS.push(team);
}

/** The domains a workflow may name. */
export function teamDomains(): string[] {
  return TEAMS.map((t) => t.domain);
}

function teamOf(w: WorkflowSpec): Team {
  const team = TEAMS.find((t) => t.domain === w.domain);
  if (!team) throw new Error(`workflow "${w.name}": no team has the domain "${w.domain}" (known: ${teamDomains().join(', ')})`);
  return team;
}

export function domainOf(w: WorkflowSpec): Domain {
  return teamOf(w).domainFor(w);
}

/** The workflow a config trains when it names none: the first team's first (the math chain). */
export function defaultWorkflow(): WorkflowSpec {
  return TEAMS[0].presets()[0].workflow;
}

/** Every team's workflows, in the menu's order (fresh copies). */
export function teamPresets(): TeamChoice[] {
  return TEAMS.flatMap((t) => t.presets());
}

/**
 * The loop settings a team brings with it (a config patch without the workflow); a team with none: {}.
 * Applied in one place, resolveTrainConfig (loop/config.ts), between the defaults and the config's own values.
 */
export function teamSettings(w: WorkflowSpec): Record<string, unknown> {
  return teamOf(w).settings?.(w) ?? {};
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
 * The held-out tasks an evaluation of `config` runs, in order: the first `config.evalTasks` of a
 * given held-out dataset (the user's file, in its order), else the domain's fixed set in its order.
 * Every evaluation (loop/eval-queue.ts: the page's chunks, `mappa train`, `mappa eval`, the model cards,
 * the lesson) selects through it: one order everywhere.
 */
export function heldOutTasks(config: { workflow: WorkflowSpec; evalTasks: number }, given?: RolloutTask[]): RolloutTask[] {
  return given?.length ? given.slice(0, config.evalTasks) : domainOf(config.workflow).heldOut(config.evalTasks);
}

/** The domain's training tasks for a run of `config`, by level where it has levels (the curriculum's TaskSource). */
export function trainTasks(config: { workflow: WorkflowSpec; seed: number; curriculum: { poolSize: number } }):
  { pool(level: number): RolloutTask[]; leveled: boolean } {
  const d = domainOf(config.workflow);
  return { pool: (level) => d.trainPool(config.seed, level, config.curriculum.poolSize), leveled: Boolean(d.leveled) };
}

/** Mean of each quality metric over the trajectories that report it (e.g. {rocAuc: 0.71}). */
export function meanMetrics(trajs: Trajectory[], names: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const name of names) {
    const values = trajs.map((t) => t.metrics?.[name]).filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
    if (values.length) out[name] = values.reduce((a, b) => a + b, 0) / values.length;
  }
  return out;
}
