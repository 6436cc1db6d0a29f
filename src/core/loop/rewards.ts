/**
 * From coached trajectories to training samples: reward modes, reward shaping, and the
 * actions each agent learns from.
 *
 * For: `coachTrajectories` (builds what the coach sees, calls it, returns the verdicts),
 * `trainSamples` (rewards per action -> TrainSample per trainable agent) and `creditedTrajectories`
 * (the record: copies of the trajectories whose actions carry their verdict, reward and advantage).
 * Each stage returns values; nothing is written into the trajectories it was given.
 * Not for: advantages (rl/advantages.ts).
 *
 * Reward of an agent's action (MAPPA sections 3-4), the credit method a run trains with:
 *   process         score / 10                     (default; the paper trains on this alone)
 *   outcome         1 if the team's final answer is right else 0, for every action of the trajectory
 *   mixed           w * process + (1 - w) * outcome
 *   counterfactual  no coach: on a tree-shaped rollout (fanOut), the action's subtree's mean outcome
 *                   minus its siblings' (../rl/counterfactual.ts, leave-one-out replays)
 *   groups          no coach: the trajectory's outcome against its prompt's, plus against the steps
 *                   that met the same state, the same agent with the same input (../rl/state-groups.ts)
 * An agent with several turns (the Code Executor) is coached once on its whole work; that reward
 * sits on the last token of each of its turns. With shaping on, every turn is also coached on its
 * own (its text and its tool output), and w_shape * turn score / 10 is added as a per-token reward
 * on that turn's last token: one rollout then yields a learning signal per turn. The verdict shown on
 * each action (`actionVerdicts`) is always its agent's, the one its reward comes from.
 * Example: process, score 7 -> reward 0.7; outcome on a wrong trajectory -> 0 for all actions.
 */
import type { TrainSample } from '../rl/batches.ts';
import { counterfactualCredit } from '../rl/counterfactual.ts';
import { groupStats, stateGroupCredit, type GroupStats } from '../rl/state-groups.ts';
import { actionInputText, NEUTRAL_SCORE, type ActionContext } from '../coach/coach-format.ts';
import type { ChainPlace, Coach, CoachResult, TierRecord } from '../coach/coach.ts';
import type { Action, Trajectory } from './trajectory.ts';
import type { WorkflowSpec } from './workflow.ts';

/** Every reward mode, in the order the settings offer them: the one list the type, the settings' menu and the credit methods come from. */
export const REWARD_MODES = ['process', 'outcome', 'mixed', 'counterfactual', 'groups'] as const;
export type RewardMode = (typeof REWARD_MODES)[number];

export interface RewardSettings {
  mode: RewardMode;
  /** Weight of the process reward in 'mixed' mode. */
  processWeight: number;
  shaping: boolean;
  shapingWeight: number;
  /** 'counterfactual': each agent's replies to one frozen input (its fan-out), in chain order; [] = 2 for every agent. */
  fanOut: number[];
}

export const DEFAULT_REWARDS: RewardSettings = { mode: 'process', processWeight: 0.5, shaping: false, shapingWeight: 0.5, fanOut: [] };

/** Whether a mode's rewards read the coach's scores (the others learn from outcomes alone). */
export function usesCoach(mode: RewardMode): boolean {
  return mode === 'process' || mode === 'mixed';
}

/** The tree a counterfactual run plays for a team of `agents`: its fan-outs (the config's, else 2 at every agent). */
export function fanOutOf(settings: RewardSettings, agents: number): number[] | undefined {
  if (settings.mode !== 'counterfactual') return undefined;
  return Array.from({ length: agents }, (_, i) => settings.fanOut[i] ?? (settings.fanOut.length ? 1 : 2));
}

/** Per trajectory and agent: the coach's verdict on the agent's whole work, and per turn when shaping. */
export interface CoachedTrajectory {
  agentScores: Map<string, CoachResult>;
  turnScores: Map<Action, CoachResult>;
}

/** What the coach sees for an agent's whole work in one trajectory (all its turns). */
export function agentContext(w: WorkflowSpec, t: Trajectory, agentId: string, facts?: string): ActionContext | null {
  const actions = t.actions.filter((a) => a.agentId === agentId);
  if (actions.length === 0) return null;
  const spec = w.agents.find((a) => a.id === agentId)!;
  const observations = actions.map((a) => a.observation).filter((o): o is string => !!o);
  return {
    problem: t.task.problem,
    agentId,
    role: spec.role,
    input: actionInputText(actions[0].messages),
    output: actions.map((a) => a.text).join('\n'),
    observation: observations.length ? observations.join('\n') : undefined,
    groundTruth: spec.final ? t.task.answer : undefined,
    facts,
    final: !!spec.final,
    task: t.task,
  };
}

/** One turn alone (for shaping). */
function turnContext(w: WorkflowSpec, t: Trajectory, action: Action): ActionContext {
  const spec = w.agents.find((a) => a.id === action.agentId)!;
  return {
    problem: t.task.problem,
    agentId: action.agentId,
    role: `${spec.role} (turn ${action.turn})`,
    input: actionInputText(action.messages),
    output: action.text,
    observation: action.observation,
    final: false,
    task: t.task,
  };
}

export interface CoachStats {
  calls: number;
  failures: number;
  cached: number;
  /** A coach in tiers: how many actions each tier scored, the tier-1 judge's version, a teaching (coach/tiered-coach.ts). */
  tiers?: TierRecord;
}

/** Whether a run's rewards read any coach score: a coach mode (process, mixed), or shaping's per-turn scores. */
export function readsCoach(settings: Pick<RewardSettings, 'mode' | 'shaping'>): boolean {
  return usesCoach(settings.mode) || settings.shaping;
}

/**
 * Coach every agent of every trajectory (and every turn of multi-turn agents when shaping), all of
 * the iteration's actions in one `scoreBatch` (the coach batches them across the team). A run whose
 * credit reads no coach (outcome, counterfactual, groups, without shaping) calls no coach at all:
 * no verdicts, no calls (a judge's view of such a run is asked for separately).
 */
export async function coachTrajectories(w: WorkflowSpec, trajs: Trajectory[], coach: Coach, settings: RewardSettings,
  factsFor?: (t: Trajectory, agentId: string) => string | undefined): Promise<{ coached: CoachedTrajectory[]; stats: CoachStats }> {
  if (!readsCoach(settings)) {
    return { coached: trajs.map(() => ({ agentScores: new Map(), turnScores: new Map() })), stats: { calls: 0, failures: 0, cached: 0 } };
  }
  const jobs: { ctx: ActionContext; place: ChainPlace; put: (r: CoachResult) => void }[] = [];
  const coached = trajs.map((t, chain) => {
    const c: CoachedTrajectory = { agentScores: new Map(), turnScores: new Map() };
    w.agents.forEach((spec, step) => {
      const place = { chain, step, failed: !t.correct };
      const ctx = agentContext(w, t, spec.id, factsFor?.(t, spec.id));
      if (ctx) jobs.push({ ctx, place, put: (r) => c.agentScores.set(spec.id, r) });
      const turns = t.actions.filter((a) => a.agentId === spec.id);
      if (settings.shaping && turns.length > 1) {
        for (const a of turns) jobs.push({ ctx: turnContext(w, t, a), place, put: (r) => c.turnScores.set(a, r) });
      }
    });
    return c;
  });
  const results = await coach.scoreBatch(jobs.map((j) => j.ctx), jobs.map((j) => j.place));
  results.forEach((r, i) => jobs[i].put(r));
  return {
    coached,
    stats: {
      calls: results.filter((r) => !r.cached).length, failures: results.filter((r) => !r.ok).length, cached: results.filter((r) => r.cached).length,
      ...(coach.tierRecord ? { tiers: coach.tierRecord() } : {}),
    },
  };
}

/** The verdict shown on an action: its agent's, on the whole work (the one its reward comes from). */
export type ActionVerdict = NonNullable<Action['coach']>;

/**
 * Each action's verdict, for the inspector, the credit view, the per-agent score metric and the
 * trajectory export. Under shaping the turn's own answer follows in `raw` (its score is in the
 * token rewards), not in place of the agent's.
 */
export function actionVerdicts(trajs: Trajectory[], coached: CoachedTrajectory[]): Map<Action, ActionVerdict> {
  const out = new Map<Action, ActionVerdict>();
  trajs.forEach((t, i) => {
    for (const a of t.actions) {
      const r = coached[i].agentScores.get(a.agentId);
      const turn = coached[i].turnScores.get(a);
      if (!r) continue;
      const raw = turn ? `${r.raw}\n--- turn ${a.turn} alone (shaping) ---\n${turn.raw}` : r.raw;
      out.set(a, { raw, score: r.score, ok: r.ok, attempts: r.attempts, correct: r.correct, ...(r.tier ? { tier: r.tier } : {}) });
    }
  });
  return out;
}

/** Reward of one agent's work in a trajectory under a mode that reads it alone (process, outcome, mixed). */
export function agentReward(settings: RewardSettings, t: Pick<Trajectory, 'correct'>, score: number): number {
  const process = score / 10;
  const outcome = t.correct ? 1 : 0;
  if (settings.mode === 'process') return process;
  if (settings.mode === 'mixed') return settings.processWeight * process + (1 - settings.processWeight) * outcome;
  return outcome;
}

/** A step's state for state groups: its agent and the input it received. */
export function stateKey(a: Action): string {
  return `${a.agentId}\u0000${actionInputText(a.messages)}`;
}

/**
 * The credit of the coach-free methods that read the whole iteration at once (counterfactual, groups):
 * per distinct action (leaves of a tree share their ancestors'), and the state groups' sizes.
 * Null for the modes that credit each trajectory alone.
 */
export function iterationCredit(w: WorkflowSpec, trajs: Trajectory[], mode: RewardMode): { credit: Map<Action, number>; groups?: GroupStats } | null {
  const outcome = (t: Trajectory) => (t.correct ? 1 : 0);
  const credit = new Map<Action, number>();
  if (mode === 'counterfactual') {
    const depth = new Map(w.agents.map((a, i) => [a.id, i]));
    const values = counterfactualCredit(trajs.map((t) => ({ prompt: `${t.task.id}#${t.sample}`, path: t.branch ?? [], outcome: outcome(t) })));
    trajs.forEach((t, i) => t.actions.forEach((a) => credit.set(a, values[i][depth.get(a.agentId)!] ?? 0)));
    return { credit };
  }
  if (mode === 'groups') {
    const grouped = trajs.map((t) => ({ prompt: t.task.id, outcome: outcome(t), states: t.actions.map(stateKey) }));
    const values = stateGroupCredit(grouped);
    trajs.forEach((t, i) => t.actions.forEach((a, j) => credit.set(a, values[i][j])));
    return { credit, groups: groupStats(grouped) };
  }
  return null;
}

/** An action's reward, and its per-token rewards under shaping (on each turn's last token). */
export interface ActionReward {
  reward: number;
  tokenRewards?: number[];
}

/**
 * Rewards of the trajectories' actions, and one TrainSample per distinct action of a trainable agent
 * (`actionOf`: the action it came from); with state groups, how the steps grouped.
 */
export function trainSamples(w: WorkflowSpec, trajs: Trajectory[], coached: CoachedTrajectory[], settings: RewardSettings,
  trainable: (agentId: string) => boolean):
  { samples: TrainSample[]; rewards: Map<Action, ActionReward>; actionOf: Map<TrainSample, Action>; groups?: GroupStats } {
  const samples: TrainSample[] = [];
  const rewards = new Map<Action, ActionReward>();
  const actionOf = new Map<TrainSample, Action>();
  const whole = iterationCredit(w, trajs, settings.mode);
  trajs.forEach((t, i) => {
    for (const a of t.actions) {
      if (rewards.has(a)) continue; // an ancestor the leaves of a tree share: one sample
      const verdict = coached[i].agentScores.get(a.agentId);
      const reward = whole ? whole.credit.get(a)! : agentReward(settings, t, verdict?.score ?? NEUTRAL_SCORE);
      const turn = coached[i].turnScores.get(a);
      const tokenRewards = turn ? a.tokens.map((_, k) => (k === a.tokens.length - 1 ? (settings.shapingWeight * turn.score) / 10 : 0)) : undefined;
      rewards.set(a, { reward, tokenRewards });
      if (!trainable(a.agentId) || a.tokens.length === 0) continue;
      const sample: TrainSample = {
        agent: a.agentId,
        prompt: a.promptTokens,
        action: a.tokens,
        reward,
        tokenRewards,
        group: `${t.task.id}/${a.agentId}/${a.turn}`,
        truncated: a.truncated,
        ...(a.logprobs?.length === a.tokens.length ? { sampledLogprobs: a.logprobs } : {}),
      };
      samples.push(sample);
      actionOf.set(sample, a);
    }
  });
  return { samples, rewards, actionOf, ...(whole?.groups ? { groups: whole.groups } : {}) };
}

/** What the record keeps of an iteration's credit, per action: its verdict, its reward and the advantage trained on. */
export interface Credit {
  verdicts: Map<Action, ActionVerdict>;
  /** Absent for actions of trajectories dropped before the update. */
  rewards?: Map<Action, ActionReward>;
  /** Absent for actions not trained on. */
  advantages?: Map<Action, number>;
}

/**
 * The iteration's record: a copy of each trajectory whose actions carry their credit (the trajectories
 * given are not changed). The inspector and trajectories.jsonl read it.
 * Example: an action with verdict score 8, reward 0.8, advantage 0.31 -> {...action, coach: {score: 8, ...}, reward: 0.8, advantage: 0.31}
 */
export function creditedTrajectories(trajs: Trajectory[], credit: Credit): Trajectory[] {
  return trajs.map((t) => ({ ...t, actions: t.actions.map((a) => creditedAction(a, credit)) }));
}

function creditedAction(a: Action, credit: Credit): Action {
  const out: Action = { ...a };
  const verdict = credit.verdicts.get(a);
  if (verdict) out.coach = verdict;
  const r = credit.rewards?.get(a);
  if (r) {
    out.reward = r.reward;
    out.tokenRewards = r.tokenRewards;
  }
  const advantage = credit.advantages?.get(a);
  if (advantage !== undefined) out.advantage = advantage;
  return out;
}
