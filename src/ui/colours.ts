/**
 * The page's colours for the reward modes: the same on the lesson's charts, its table, the live
 * charts' legends and the inspector, so "orange" means outcome reward wherever a reader meets it.
 * For: any component that draws a run. Not for: deciding what to draw.
 * Example: MODE_COLOUR[config.rewards.mode] -> '#1d4ed8' for a process-reward run.
 */
export const MODE_COLOUR = { process: '#1d4ed8', outcome: '#ea580c', mixed: '#7c3aed', counterfactual: '#0f766e', groups: '#a16207' } as const;
export type RewardModeName = keyof typeof MODE_COLOUR;

/** The untrained team (iteration 0) where it is drawn apart from both runs. */
export const BASE_COLOUR = '#8a93a3';

/** A mode's colour, for a mode read from a saved run's settings (unknown: process, the default). */
export function modeColour(mode: unknown): string {
  return MODE_COLOUR[(typeof mode === 'string' && mode in MODE_COLOUR ? mode : 'process') as RewardModeName];
}
