/**
 * Every setting of a TrainConfig a person can change, with its plain-words label and its allowed
 * values: one table that the validator (config.ts), the page's settings and its error banners share,
 * so that a value is refused the same way from a config file, a CLI flag, the URL or a field.
 *
 * For: `checkFields(config)` (throws ConfigFileError naming the field, its label and what it
 * accepts) and `fieldLabel(path)`. Not for: merging partial configs or the workflow (config.ts,
 * workflow.ts).
 *
 * Example: checkFields({...DEFAULT_TRAIN_CONFIG, promptsPerIteration: 2.5})   (a TrainConfig, config.ts)
 *   -> ConfigFileError 'promptsPerIteration (prompts per iteration): must be a whole number in 1..1000000, got 2.5'
 *      with .path 'promptsPerIteration' and .label 'prompts per iteration'
 */
import { REWARD_MODES } from './rewards.ts';
import { ESCALATION_RULES, TIER_KEYS } from '../coach/escalation.ts';

export type FieldSpec =
  | { path: string; label: string; kind: 'int' | 'number'; min: number; max: number; openMin?: boolean; hint?: string }
  | { path: string; label: string; kind: 'enum'; values: readonly string[]; hint?: string }
  | { path: string; label: string; kind: 'bool'; hint?: string };

const int = (path: string, label: string, min: number, max: number, hint?: string): FieldSpec => ({ path, label, kind: 'int', min, max, hint });
const num = (path: string, label: string, min: number, max: number, openMin = false, hint?: string): FieldSpec =>
  ({ path, label, kind: 'number', min, max, openMin, hint });
const bool = (path: string, label: string, hint?: string): FieldSpec => ({ path, label, kind: 'bool', hint });

/** The settings, grouped as the page shows them. Bounds are what the loop can run, not what is wise. */
export const CONFIG_FIELDS: readonly FieldSpec[] = [
  int('seed', 'seed', 0, 2 ** 31 - 1, 'the same seed gives the same run, bit for bit'),
  int('iterations', 'iterations', 1, 100_000),
  int('promptsPerIteration', 'prompts per iteration', 1, 1_000_000, 'problems the team solves each iteration'),
  int('samplesPerPrompt', 'samples per prompt', 1, 1024, 'attempts at each problem, each coached'),
  int('rolloutPasses', 'rollout passes', 1, 64, 'the problems are played in this many passes, side by side on threads; results depend on it, not on threads'),
  int('rolloutBatch', 'rollout batch (rows)', 1, 4096, 'rows an agent decodes together; wider is faster per step, the sampled tokens depend on it'),
  num('temperature', 'training temperature', 0, 10, true, 'sampling temperature of training rollouts (MAPPA: 1.0)'),
  int('evalEvery', 'evaluate every (iterations)', 1, 100_000),
  int('evalTasks', 'held-out problems', 1, 200, 'the held-out set has 200'),
  num('evalTemperature', 'evaluation temperature', 0, 10, false, 'greedy is always evaluated too (MAPPA: 0.6); 0: greedy only'),
  int('checkpointEvery', 'checkpoint every (iterations)', 1, 100_000),
  num('lr', 'learning rate', 0, 1, true),
  num('lrFinal', 'learning rate at the end (share of it)', 0, 1, false, 'falls on a half cosine to this share of the learning rate at the last iteration; 1: constant'),
  num('weightDecay', 'weight decay', 0, 1),
  int('lora.rank', 'LoRA rank', 1, 1024),
  num('lora.alpha', 'LoRA alpha', 0, 1e6, true),
  num('lora.dropout', 'LoRA dropout', 0, 0.99),
  bool('lora.rsLora', 'rank-stabilised LoRA scale'),
  num('update.klCoef', 'KL coefficient', 0, 100),
  num('update.clipEps', 'clip ε', 0, 10, true),
  { path: 'update.whitening', label: 'advantage whitening', kind: 'enum', values: ['batch', 'agent', 'group', 'state'] },
  int('update.microBatchSize', 'micro-batch size', 1, 4096),
  int('update.miniBatches', 'mini-batches', 1, 4096),
  int('update.epochs', 'epochs per iteration', 1, 100),
  num('update.maxGradNorm', 'gradient clip (norm)', 0, 1e9, true),
  bool('update.maskTruncated', 'drop truncated actions from the loss'),
  bool('update.batched', 'one pass for every agent\'s adapter (batched update)'),
  bool('update.sharedPrefix', 'each agent\'s common prompt prefix run once an update pass'),
  bool('update.reuseRolloutLogprobs', 'the rollout\'s log-probs as the sampling policy\'s (temperature 1 only)'),
  bool('update.rememberReference', 'the reference\'s log-probs remembered for the run'),
  {
    path: 'rewards.mode', label: 'reward', kind: 'enum', values: [...REWARD_MODES],
    hint: 'process: the coach scores each action; outcome: the team\'s final answer; counterfactual: replays of each agent\'s turn, no coach; ' +
      'groups: steps from the same input compared, no coach',
  },
  num('rewards.processWeight', 'process weight', 0, 1),
  bool('rewards.shaping', 'shaping (coach every turn)'),
  num('rewards.shapingWeight', 'shaping weight', 0, 10),
  bool('curriculum.skipDecided', 'skip always/never solved'),
  int('curriculum.history', 'results remembered per problem', 1, 100),
  bool('curriculum.dropCoachFailures', 'drop coach failures'),
  bool('curriculum.adaptLevel', 'adapt level'),
  int('curriculum.startLevel', 'start level', 0, 5, '1..5, or 0 for every level mixed'),
  num('curriculum.raiseAt', 'raise the level at (accuracy)', 0, 1),
  num('curriculum.lowerAt', 'lower the level below (accuracy)', 0, 1),
  int('curriculum.poolSize', 'training problems per level', 1, 100_000),
  { path: 'coach.kind', label: 'coach', kind: 'enum', values: ['model', 'rule'], hint: 'model: the team\'s judge model; rule: the rubric' },
  {
    path: 'coach.truth', label: 'ground truth shown to the judge', kind: 'enum', values: ['final', 'every'],
    hint: 'final: with the final agent\'s action only (MAPPA); every: with every agent\'s',
  },
  int('coach.batch', 'coach batch (actions)', 1, 4096, 'actions the judge scores together; wider is faster per action, the same scores'),
  num('coach.miscalibration.noise', 'coach noise (σ of score)', 0, 10),
  num('coach.miscalibration.lengthBias', 'coach length bias (/100 chars)', -10, 10),
  num('coach.miscalibration.seed', 'coach noise seed', 0, 2 ** 31 - 1),
  // coach.tiers (coach/escalation.ts): present only when a run's coach is made of tiers.
  num('coach.tiers.budget', 'share escalated to tier 2', 0, 1, false, 'tier 2 (the rubric, standing in for a large hosted judge) scores this share of each iteration\'s actions'),
  { path: 'coach.tiers.pick', label: 'which actions tier 2 scores', kind: 'enum', values: [...ESCALATION_RULES],
    hint: 'spread: those tier 1 is least sure of; random; first-wrong: the first wrong step of each failed chain' },
  num('coach.tiers.threshold', 'spread to escalate at', 0, 10, false, 'pick spread only: escalate only above this spread (points); 0: always the whole budget'),
  int('coach.tiers.teachEvery', 'teach tier 1 every N answers', 0, 100_000, '0: never; else tier 1 is taught on tier 2\'s answers during the run'),
  num('coach.tiers.person', 'share asked of a person (tier 3)', 0, 1, false,
    '0: off; else a person is asked about this share of each iteration\'s actions, of those tier 2 scored, where tiers 1 and 2 disagree most'),
  int('coach.tiers.personWait', 'seconds to wait for the person', 1, 86_400, 'each iteration; a question still open then is unanswered and tier 2\'s score stands'),
  int('toolTimeoutMs', 'tool time limit (ms)', 1, 600_000),
];

/**
 * The projections a LoRA adapter may target (lora.targetModules), in the model's order; the model's own list is PROJECTIONS (llama.ts),
 * and a test keeps the two equal.
 */
export const LORA_TARGETS = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] as const;

/** The keys a miscalibration object may hold (coach.ts Miscalibration). */
const MISCALIBRATION_KEYS = ['noise', 'favourAgent', 'lengthBias', 'seed'];

export class ConfigFileError extends Error {
  /** The field's path in a config file ("update.klCoef"), and its label for a person ("KL coefficient"). */
  constructor(message: string, readonly path = '', readonly label = '') {
    super(message);
    this.name = 'ConfigFileError';
  }
}

const byPath = new Map(CONFIG_FIELDS.map((f) => [f.path, f]));

/** The plain-words label of a setting ("update.klCoef" -> "KL coefficient"), or the path itself. */
export function fieldLabel(path: string): string {
  return byPath.get(path)?.label ?? path;
}

export function fieldSpec(path: string): FieldSpec | undefined {
  return byPath.get(path);
}

/** A setting's value in a config or a partial one, by its path ("update.klCoef"); undefined when absent. */
export function valueAt(c: unknown, path: string): unknown {
  return path.split('.').reduce<unknown>((o, k) => (o && typeof o === 'object' ? (o as Record<string, unknown>)[k] : undefined), c);
}

/** What a field accepts, in words ("a whole number in 1..4096", "process, outcome or mixed"). */
export function accepts(f: FieldSpec): string {
  if (f.kind === 'bool') return 'true or false';
  if (f.kind === 'enum') return `one of ${f.values.join(', ')}`;
  const range = f.openMin ? `above ${f.min}, at most ${f.max}` : `in ${f.min}..${f.max}`;
  return f.kind === 'int' ? `a whole number ${range}` : `a number ${range}`;
}

/** null when `value` is acceptable for `f`, else the complaint. */
function fieldProblem(f: FieldSpec, value: unknown): string | null {
  const ok = f.kind === 'bool' ? typeof value === 'boolean'
    : f.kind === 'enum' ? typeof value === 'string' && f.values.includes(value)
    : typeof value === 'number' && Number.isFinite(value) && (f.kind === 'number' || Number.isInteger(value))
      && (f.openMin ? value > f.min : value >= f.min) && value <= f.max;
  return ok ? null : `must be ${accepts(f)}, got ${JSON.stringify(value) ?? String(value)}`;
}

/** update.reuseRolloutLogprobs takes the rollout's log-probs as the policy's: true only at temperature 1. */
export function checkReuse(c: { temperature?: unknown; update?: { reuseRolloutLogprobs?: unknown } }): void {
  if (c.update?.reuseRolloutLogprobs !== true || c.temperature === 1) return;
  throw new ConfigFileError(`update.reuseRolloutLogprobs (${fieldLabel('update.reuseRolloutLogprobs')}): needs temperature 1, got temperature ` +
    `${JSON.stringify(c.temperature)}; a rollout at another temperature holds the tempered distribution's log-probs, not the policy's: set it to false`,
  'update.reuseRolloutLogprobs', fieldLabel('update.reuseRolloutLogprobs'));
}

/** Throws ConfigFileError for the first setting out of its range (optional ones only when present). */
export function checkFields(c: {
  coach: { miscalibration: unknown; tiers?: unknown; kind?: unknown }; lora: { targetModules: unknown }; rewards: { fanOut: unknown }; workflow: { agents: unknown[] };
}): void {
  const m = c.coach.miscalibration;
  if (m !== null && (typeof m !== 'object' || Array.isArray(m))) {
    throw new ConfigFileError(`coach.miscalibration: must be null or an object with ${MISCALIBRATION_KEYS.join(', ')}, got ${JSON.stringify(m)}`,
      'coach.miscalibration', 'coach miscalibration');
  }
  for (const k of Object.keys((m ?? {}) as object)) {
    if (!MISCALIBRATION_KEYS.includes(k)) {
      throw new ConfigFileError(`coach.miscalibration.${k}: unknown key (known: ${MISCALIBRATION_KEYS.join(', ')})`,
        `coach.miscalibration.${k}`, 'coach miscalibration');
    }
  }
  const fav = (m as { favourAgent?: unknown } | null)?.favourAgent as { agentId?: unknown; points?: unknown } | undefined;
  if (fav !== undefined
    && (typeof fav !== 'object' || fav === null || typeof fav.agentId !== 'string' || typeof fav.points !== 'number' || !Number.isFinite(fav.points))) {
    throw new ConfigFileError(`coach.miscalibration.favourAgent: must be {"agentId": "<agent>", "points": <number>}, got ${JSON.stringify(fav)}`,
      'coach.miscalibration.favourAgent', 'favoured agent');
  }
  const tiers = c.coach.tiers;
  if (tiers !== null && tiers !== undefined) {
    if (typeof tiers !== 'object' || Array.isArray(tiers)) {
      throw new ConfigFileError(`coach.tiers: must be null (one coach) or an object with ${TIER_KEYS.join(', ')}, got ${JSON.stringify(tiers)}`, 'coach.tiers', 'coach tiers');
    }
    for (const k of Object.keys(tiers)) {
      if (!TIER_KEYS.includes(k)) throw new ConfigFileError(`coach.tiers.${k}: unknown key (known: ${TIER_KEYS.join(', ')})`, `coach.tiers.${k}`, 'coach tiers');
    }
  }
  for (const f of CONFIG_FIELDS) {
    const value = valueAt(c, f.path);
    if (value === undefined && (f.path.startsWith('coach.miscalibration.') || (f.path.startsWith('coach.tiers.') && !tiers))) continue;
    const problem = fieldProblem(f, value);
    if (problem) throw new ConfigFileError(`${f.path} (${f.label}): ${problem}`, f.path, f.label);
  }
  if (tiers) {
    const t = tiers as { pick: string; threshold: number; teachEvery: number; budget: number; person?: number };
    if ((t.person ?? 0) > t.budget) {
      throw new ConfigFileError(`coach.tiers.person (share asked of a person (tier 3)): ${t.person} is more than the share escalated to tier 2 ` +
        `(coach.tiers.budget), ${t.budget}; the person is asked among the actions tier 2 scored: lower it or raise that share`, 'coach.tiers.person', fieldLabel('coach.tiers.person'));
    }
    if (t.threshold > 0 && t.pick !== 'spread') {
      throw new ConfigFileError(`coach.tiers.threshold (spread to escalate at): needs pick "spread", got pick "${t.pick}"; set it to 0`, 'coach.tiers.threshold', fieldLabel('coach.tiers.threshold'));
    }
    if (c.coach.kind !== 'model' && (t.pick === 'spread' || t.teachEvery > 0)) {
      throw new ConfigFileError(`coach.tiers.pick / coach.tiers.teachEvery: pick "spread" and teaching need a judge model as tier 1 (coach.kind "model"); ` +
        `with the rubric as tier 1 set pick to random or first-wrong and teachEvery to 0`, 'coach.tiers.pick', fieldLabel('coach.tiers.pick'));
    }
  }
  const fan = c.rewards.fanOut;
  if (!Array.isArray(fan) || fan.length > c.workflow.agents.length || fan.some((k) => !Number.isInteger(k) || k < 1 || k > 16)) {
    throw new ConfigFileError(`rewards.fanOut (replies per agent): must be a list of at most ${c.workflow.agents.length} whole numbers in 1..16 ` +
      `(one per agent, in chain order), got ${JSON.stringify(fan)}`,
      'rewards.fanOut', 'replies per agent');
  }
  if (!Array.isArray(c.lora.targetModules) || c.lora.targetModules.length === 0) {
    throw new ConfigFileError(`lora.targetModules (LoRA targets): needs at least one of ${LORA_TARGETS.join(', ')}`, 'lora.targetModules', 'LoRA targets');
  }
}
