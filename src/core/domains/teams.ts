/**
 * The teams the sandbox ships, and what changes in a config when the user switches from one to
 * another. A team brings some loop settings of its own (the data team its budgets and coach; the
 * relay team its model, task counts and budget); switching keeps the user's other settings, drops the
 * ones the old team brought, and adds the new team's.
 *
 * For: the page's team menu and editor (src/ui), so that no component knows which settings a team owns.
 * Not for: what a team does (each domain's folder) or validating a workflow (loop/workflow.ts).
 *
 * Example: switchTeam({ lr: 0.001 }, MATH_CHAIN, relayWorkflow(4))
 *   -> { lr: 0.001, ...relayConfig(4) without its workflow, workflow: <relay-4> }
 */
import { MATH_CHAIN, type WorkflowSpec } from '../loop/workflow.ts';
import { DATA_TEAM, DATA_TEAM_SETTINGS } from './data/team.ts';
import { relayConfig, relayWorkflow } from './relay/team.ts';

/** The relay sizes offered (the teaching demo: process vs outcome with 2, 4 and 6 agents). */
const RELAY_SIZES = [2, 4, 6];

/** A shipped team as the page's menu offers it. */
export interface TeamChoice {
  name: string;
  label: string;
  /** A fresh copy: the caller may edit it. */
  workflow: WorkflowSpec;
}

/** The teams the sandbox ships, in the menu's order. */
export function teamPresets(): TeamChoice[] {
  return [
    { name: MATH_CHAIN.name, label: 'math chain (Solver → Executor → Verifier)', workflow: structuredClone(MATH_CHAIN) },
    { name: DATA_TEAM.name, label: 'data analysis (Engineer → Modeler → Analyst)', workflow: structuredClone(DATA_TEAM) },
    ...RELAY_SIZES.map(relayWorkflow).map((w) => ({ name: w.name, label: `relay of ${w.agents.length} agents (credit is the bottleneck)`, workflow: w })),
  ];
}

/** The loop settings a team brings with it (the data team's; the relay team's model and budget); math: none. */
export function teamSettings(w: WorkflowSpec): Record<string, unknown> {
  if (w.domain === 'data') return DATA_TEAM_SETTINGS;
  if (w.domain === 'relay') return Object.fromEntries(Object.entries(relayConfig(w.agents.length)).filter(([k]) => k !== 'workflow'));
  return {};
}

/**
 * The config patch after switching from team `from` to team `to`: the same domain keeps every setting
 * (a relay's settings do not depend on its size); another domain drops the settings the teams bring
 * (a relay's model too, so math and data get theirs back) and adds `to`'s own.
 */
export function switchTeam(patch: Record<string, unknown>, from: WorkflowSpec | undefined, to: WorkflowSpec): Record<string, unknown> {
  if (from && to.domain === from.domain) return { ...patch, workflow: to };
  const relayOwned = from?.domain === 'relay' || to.domain === 'relay' ? Object.keys(relayConfig(2)) : [];
  const owned = new Set([...Object.keys(DATA_TEAM_SETTINGS), ...relayOwned]);
  const rest = Object.fromEntries(Object.entries(patch).filter(([k]) => !owned.has(k)));
  return { ...rest, ...teamSettings(to), workflow: to };
}
