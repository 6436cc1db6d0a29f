/**
 * The relay team's own judge (a tiny causal LM, models/relay-judge) and how it is measured against the
 * rater it learnt from: the relay rubric (relayRuleScore), in the role MAPPA's human rater plays.
 *
 * For: `RELAY_JUDGE_MODEL` (the relay domain's default judge for `coach.kind: "model"`),
 * `relayRatedSteps` (the real relay team's actions, sampled in the exact relay prompts and seen as the
 * coach sees them, each with the rater's verdict), and `judgeVsRater` (within-agent pairwise ranking
 * accuracy, MAE and agreement at the pass line, with 95 % intervals, beside always-the-mean and a coin).
 * Not for: training the judge (scripts/pretrain-relay-judge.ts) or the rubric (team.ts).
 *
 * Example: const steps = await relayRatedSteps(new EngineAgents(relay, new Map()), 4, relayHeldOut(4).slice(0, 50), {seed: 1});
 *          judgeVsRater(steps.map((s) => s.rating.score), judgeScores, steps.map((s) => s.group))
 *            -> {ranking: {p: 0.97, low: .., high: ..}, mae: .., agreement: .., n: 200, pairs: ..}
 */
import { agentContext } from '../../loop/rewards.ts';
import { runRollouts } from '../../loop/rollout.ts';
import { type RolloutTask } from '../../loop/trajectory.ts';
import type { AgentBackend } from '../../loop/agents.ts';
import type { ActionContext } from '../../coach/coach-format.ts';
import { Rng } from '../../stats/rng.ts';
import { tInterval, wilson, type Interval } from '../../stats/intervals.ts';
import { relayDigit, relayOutcome, relayRuleScore, relayWorkflow } from './team.ts';

/** The relay team's judge: what `coach.kind: "model"` loads for the relay team unless the config names another. */

/** What kind of reply a step is, given its input: right, the input passed on unchanged, anything else, or no input to judge. */
export type RelayReplyKind = 'right' | 'passed-on' | 'other' | 'neutral';

export interface RatedStep {
  /** What the coach sees (agentContext of the trajectory), exactly as coaching builds it. */
  context: ActionContext;
  /** The rater (relay rubric) on that context. */
  rating: { score: number; correct?: boolean };
  kind: RelayReplyKind;
  /** Team size and position ("4:agent2"): pairs for ranking are drawn within one group. */
  group: string;
  n: number;
  position: number;
}

function kindOf(ctx: ActionContext, score: number): RelayReplyKind {
  if (score === 10) return 'right';
  const m = /(-?\d+)\s*\+\s*\d+\s*$/.exec(ctx.input.split('\n').pop()!.trim());
  if (!m) return 'neutral';
  return relayDigit(ctx.output) === Number(m[1]) ? 'passed-on' : 'other';
}

/**
 * The relay team of `n` (agents from `agents`: the shipped model with no adapter is the untrained team)
 * on `tasks`, `samples` trajectories each at `temperature` (default 1, the rollouts' temperature), every
 * action as the coach sees it with the rater's verdict.
 */
export async function relayRatedSteps(agents: AgentBackend, n: number, tasks: RolloutTask[],
  opts: { seed: number; samples?: number; temperature?: number }): Promise<RatedStep[]> {
  const workflow = relayWorkflow(n);
  const trajs = await runRollouts(workflow, tasks, {
    agents, tools: {}, samplesPerTask: opts.samples ?? 1, temperature: opts.temperature ?? 1, seed: opts.seed, outcome: relayOutcome,
  });
  const out: RatedStep[] = [];
  for (const t of trajs) {
    workflow.agents.forEach((a, i) => {
      const context = agentContext(workflow, t, a.id);
      if (!context) return;
      const r = relayRuleScore(context);
      out.push({
        context, rating: { score: r.score, correct: context.final ? r.correct : undefined },
        kind: kindOf(context, r.score), group: `${n}:${a.id}`, n, position: i + 1,
      });
    });
  }
  return out;
}

export interface JudgeVsRater {
  n: number;
  /** Pairs within a group whose ratings differ. */
  pairs: number;
  /** Share of those pairs the judge orders as the rater does (judge ties count half); 95 % bootstrap interval over actions. */
  ranking: Interval;
  /** Mean |judge - rater| on 0..10, 95 % t interval over actions. */
  mae: Interval;
  /** Share of actions on the same side of the pass line (score >= 5) as the rater, Wilson interval. */
  agreement: Interval;
}

/** Ranking accuracy over within-group pairs with differing ratings: [concordant + ties / 2, pairs]. */
function rankingCounts(rater: number[], judge: number[], groups: Map<string, number[]>, weights?: number[]): [number, number] {
  let good = 0;
  let pairs = 0;
  for (const idx of groups.values()) {
    for (let a = 0; a < idx.length; a++) {
      for (let b = a + 1; b < idx.length; b++) {
        const i = idx[a];
        const j = idx[b];
        if (rater[i] === rater[j]) continue;
        const w = weights ? weights[i] * weights[j] : 1;
        if (!w) continue;
        pairs += w;
        const dj = judge[i] - judge[j];
        if (dj === 0) good += w / 2;
        else if (Math.sign(dj) === Math.sign(rater[i] - rater[j])) good += w;
      }
    }
  }
  return [good, pairs];
}

/**
 * The judge's scores against the rater's on the same actions. The ranking interval is a bootstrap
 * (`reps` resamples of the actions, with replacement, as multiplicities; percentile 2.5..97.5), since
 * pairs sharing an action are not independent.
 */
export function judgeVsRater(rater: number[], judge: number[], group: string[], opts: { reps?: number; seed?: number; passLine?: number } = {}): JudgeVsRater {
  const n = rater.length;
  const line = opts.passLine ?? 5;
  const groups = new Map<string, number[]>();
  group.forEach((g, i) => groups.set(g, [...(groups.get(g) ?? []), i]));
  const [good, pairs] = rankingCounts(rater, judge, groups);
  const rng = new Rng(`judge-bootstrap/${opts.seed ?? 0}`);
  const boots: number[] = [];
  for (let r = 0; r < (opts.reps ?? 200); r++) {
    const w = new Array<number>(n).fill(0);
    for (let k = 0; k < n; k++) w[rng.int(0, n - 1)]++;
    const [g, p] = rankingCounts(rater, judge, groups, w);
    if (p > 0) boots.push(g / p);
  }
  boots.sort((a, b) => a - b);
  const q = (f: number) => boots[Math.min(boots.length - 1, Math.max(0, Math.floor(f * boots.length)))] ?? NaN;
  const errors = rater.map((r, i) => Math.abs(judge[i] - r));
  const agree = rater.filter((r, i) => (r >= line) === (judge[i] >= line)).length;
  return {
    n,
    pairs,
    ranking: { p: pairs ? good / pairs : NaN, low: q(0.025), high: q(0.975) },
    mae: tInterval(errors),
    agreement: wilson(agree, n),
  };
}

/** The two baselines' scores for the same actions: always the raters' mean, and a fair coin between 0 and 10 (seeded). */
export function baselineScores(rater: number[], seed = 0): { mean: number[]; coin: number[] } {
  const m = rater.reduce((a, b) => a + b, 0) / Math.max(1, rater.length);
  const rng = new Rng(`judge-coin/${seed}`);
  return { mean: rater.map(() => m), coin: rater.map(() => (rng.next() < 0.5 ? 0 : 10)) };
}
