/**
 * The training configuration: one flat-ish, typed object with a default for every value and a
 * validator that refuses unknown keys and wrong types by name (configs/*.json, the UI, the URL).
 *
 * A value comes from one of three layers, in this order: `DEFAULT_TRAIN_CONFIG`, then the settings
 * the config's team brings (`Team.settings`, e.g. the relay's lr 2e-3 and model), then the config
 * itself. `resolveConfig` is the one place that applies them, with the teams the caller knows (the
 * registry's `resolveTrainConfig` passes its own: the CLI, the page and the scripts all resolve through it).
 *
 * For: `resolveConfig(partial, teams)` -> a complete TrainConfig. Not for: running it (train.ts).
 * Example: resolveConfig({rewards: {mode: 'outcome'}, seed: 3}, teams) -> defaults with those two changed.
 *          resolveConfig({workflow: relayWorkflow(4)}, teams).lr -> 0.002 (the relay team's), not the default 0.001
 *          resolveConfig({lerning_rate: 1}, teams) -> ConfigFileError: unknown key "lerning_rate" ...
 *          resolveConfig({workflow: {name: 'relay-128', domain: 'relay', agents: [{repeat: 128, ...}]}}, teams).workflow.agents.length -> 128
 */
import { DEFAULT_LORA, type LoraSettings } from '../engine/lora/adapter.ts';
import { DEFAULT_UPDATE, type UpdateSettings } from '../rl/update-settings.ts';
import type { CoachSettings } from '../coach/coaches.ts';
import { DEFAULT_TIERS } from '../coach/escalation.ts';
import { DEFAULT_CURRICULUM, type CurriculumSettings } from './curriculum.ts';
import { DEFAULT_REWARDS, type RewardSettings } from './rewards.ts';
import { DEFAULT_TIMEOUT_MS } from '../tools/sandbox.ts';
import { validateWorkflow, type WorkflowSpec } from './workflow.ts';
import { expandWorkflow } from './workflow-repeat.ts';
import { checkFields, checkReuse, ConfigFileError, fieldLabel } from './config-fields.ts';


export interface TrainConfig {
  seed: number;
  /** Base model of the agents (folder or hub URL). */
  agentModel: string;
  workflow: WorkflowSpec;
  iterations: number;
  promptsPerIteration: number;
  samplesPerPrompt: number;
  /**
   * The iteration's prompts are played as this many passes (contiguous shares, each with its own
   * seed), side by side where there are threads for them. The results depend on this number, never
   * on the thread count; 1 plays them all in one pass on this thread.
   */
  rolloutPasses: number;
  /**
   * Rows an agent decodes in one batch (prompts x samples of a pass, at most this many at once). Wider
   * batches cost about the same per call, so a wide iteration (many rollouts) pays far less per agent
   * step (docs/performance.md, "Speed at scale"). The sampled tokens depend on it (each batch draws
   * from its own seed), as they do on rolloutPasses.
   */
  rolloutBatch: number;
  /** Sampling temperature of training rollouts (MAPPA: 1.0). */
  temperature: number;
  evalEvery: number;
  /** Held-out problems evaluated (a fixed, level-balanced subset of the 200). */
  evalTasks: number;
  /** Evaluation temperature (MAPPA: 0.6) — greedy is always evaluated too; 0: greedy only (one pass). */
  evalTemperature: number;
  checkpointEvery: number;
  lr: number;
  /** The learning rate at the last iteration as a share of `lr`, reached on a half cosine (rl/adamw.ts, lrAt); 1 keeps it constant. */
  lrFinal: number;
  weightDecay: number;
  lora: LoraSettings;
  update: UpdateSettings;
  rewards: RewardSettings;
  curriculum: CurriculumSettings;
  coach: CoachSettings;
  toolTimeoutMs: number;
}

/** Every setting's default but the workflow's (the caller's teams name the default workflow: the math chain). */
export const DEFAULT_TRAIN_CONFIG: Omit<TrainConfig, 'workflow'> = {
  seed: 0,
  agentModel: 'models/agent',
  iterations: 30,
  // 12 prompts rather than 8: the measured choice (README, "Training the embedded default").
  promptsPerIteration: 12,
  samplesPerPrompt: 2,
  // Two passes: a 2-core machine plays both at once (docs/performance.md, "Rollout seconds of a math iteration").
  rolloutPasses: 2,
  rolloutBatch: 16,
  temperature: 1.0,
  // The whole held-out set (200 problems, about +-3.5 points of noise; 50 would give +-7), every 15
  // iterations so that evaluating stays a small share of the run on 2 cores.
  evalEvery: 15,
  evalTasks: 200,
  evalTemperature: 0.6,
  checkpointEvery: 5,
  lr: 1e-3,
  lrFinal: 1,
  weightDecay: 0,
  lora: { ...DEFAULT_LORA, targetModules: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] },
  update: { ...DEFAULT_UPDATE },
  rewards: { ...DEFAULT_REWARDS },
  // Every level mixed, as the held-out set is (why: README, "Training the embedded default").
  curriculum: { ...DEFAULT_CURRICULUM, startLevel: 0 },
  // The team's rubric; with kind "model", the team's own judge reading the team's own template (coach/coaches.ts).
  coach: { kind: 'rule', model: 'team', template: 'team', truth: 'final', miscalibration: null, batch: 16, tiers: null },
  toolTimeoutMs: DEFAULT_TIMEOUT_MS,
};

type Json = Record<string, unknown>;

/** Merge `patch` into `base`, refusing unknown keys and type changes; `path` names the position. */
function merge<T>(base: T, patch: unknown, path: string): T {
  if (patch === undefined) return base;
  if (base === null) return patch as T; // nullable objects (miscalibration): taken as given
  if (Array.isArray(base)) {
    if (!Array.isArray(patch)) throw new ConfigFileError(`${path}: expected a list, got ${JSON.stringify(patch)}`);
    return patch as T;
  }
  if (typeof base === 'object') {
    if (!patch || typeof patch !== 'object' || Array.isArray(patch)) throw new ConfigFileError(`${path}: expected an object, got ${JSON.stringify(patch)}`);
    const out: Json = { ...(base as Json) };
    for (const [k, v] of Object.entries(patch as Json)) {
      if (!(k in out)) throw new ConfigFileError(`${path ? path + '.' : ''}${k}: unknown key (known: ${Object.keys(out).join(', ')})`);
      out[k] = merge(out[k], v, path ? `${path}.${k}` : k);
    }
    return out as T;
  }
  const label = fieldLabel(path);
  const named = label === path ? path : `${path} (${label})`;
  if (typeof patch !== typeof base) throw new ConfigFileError(`${named}: expected a ${typeof base}, got ${JSON.stringify(patch)}`, path, label);
  // NaN and Infinity are numbers too: a flag like --seed abc arrives as NaN and is refused here, by name.
  if (typeof patch === 'number' && !Number.isFinite(patch)) throw new ConfigFileError(`${named}: expected a finite number, got ${patch}`, path, label);
  return patch as T;
}

/** What resolving a config needs of the teams the caller knows. */
export interface ConfigTeams {
  /** The workflow of a config that names none. */
  defaultWorkflow: WorkflowSpec;
  /** The domains a workflow may name. */
  domains: string[];
  /** The settings a workflow's team brings (a config patch without the workflow). */
  settings(w: WorkflowSpec): Record<string, unknown>;
}

/**
 * A complete, validated config from a partial one (a parsed configs/*.json, the page's patch): the
 * defaults, overlaid by the settings the workflow's team brings, overlaid by `partial`.
 */
export function resolveConfig(partial: unknown, teams: ConfigTeams): TrainConfig {
  const patch = (partial ?? {}) as Json;
  // The workflow is replaced whole (it is validated as a unit), not merged key by key; a repeated agent
  // ("repeat": 128, workflow-repeat.ts) is expanded into its agents first.
  const { workflow: given = teams.defaultWorkflow, ...rest } = patch;
  let workflow: unknown;
  try {
    workflow = expandWorkflow(given);
    validateWorkflow(workflow as WorkflowSpec, teams.domains);
  } catch (e) {
    throw new ConfigFileError(`workflow: ${(e as Error).message}`, 'workflow', 'team');
  }
  const teamDefaults = merge(DEFAULT_TRAIN_CONFIG, teams.settings(workflow as WorkflowSpec), '');
  const c = merge(teamDefaults, rest, '') as TrainConfig;
  c.workflow = workflow as WorkflowSpec;
  // coach.tiers is null or an object; an object's missing keys take the defaults (coach/escalation.ts), its unknown ones are refused.
  if (c.coach.tiers && typeof c.coach.tiers === 'object' && !Array.isArray(c.coach.tiers)) {
    c.coach = { ...c.coach, tiers: merge(DEFAULT_TIERS, c.coach.tiers, 'coach.tiers') };
  }
  checkFields(c);
  checkReuse(c);
  return c;
}
