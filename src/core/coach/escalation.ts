/**
 * Which of an iteration's actions a tiered coach escalates: tier 1 (the team's small judge) has
 * scored every action; tier 2 (a stronger coach) scores a share of them, the ones this rule picks.
 *
 * For: tiered-coach.ts, the tiers benchmark, the config's `coach.tiers` (its keys and defaults live here,
 * their bounds in loop/config-fields.ts with every other setting's). Not for: scoring (coach.ts) or reading the judge's spread (uncertainty.ts).
 *
 * The settings (`coach.tiers`, null when a run has one coach):
 *   budget      the share of the iteration's actions tier 2 may score, 0..1 (k = round(budget * n))
 *   pick        spread:      the largest spread of tier 1's score distribution first (uncertainty.ts;
 *                            an unreadable answer counts as the least sure of all);
 *               random:      k actions drawn at random (the baseline);
 *               first-wrong: per failed chain (the team's answer was wrong), the first step tier 1
 *                            scored below 5, or its lowest-scored step when it scored none below 5;
 *                            chains in random order, one step each; any budget left is drawn at random
 *   threshold   pick spread only: escalate an action only if its spread is at least this many points
 *               (0: none; the budget is always spent). With a threshold the share escalated falls
 *               as tier 1 grows surer: the budget is then a ceiling.
 *   teachEvery  tier 1 is taught every this many tier-2 answers (0: never; tiered-coach.ts)
 *   person      tier 3: the share of the iteration's actions a person is asked about, among those tier 2
 *               scored, where tiers 1 and 2 disagree most (0: off; person-tier.ts); at most budget
 *   personWait  seconds the run waits for the person's answers each iteration; then tier 2's score stands
 *
 * Example: pickEscalations({scores: [9, 2, 6, 8], spreads: [0.5, 3, 4.2, 1]}, {budget: 0.5, pick: 'spread', threshold: 0}, rng)
 *            -> [2, 1]            (n = 4, k = 2: the two largest spreads)
 *          with threshold 3.5      -> [2]   (only one spread reaches 3.5)
 *          pick 'first-wrong', places: chain 0 = actions 0, 1 (failed), chain 1 = actions 2, 3 (right)
 *                                  -> [1, then one of 0, 2, 3 at random]  (action 1 scored 2 < 5)
 */
import type { Rng } from '../stats/rng.ts';
import type { ChainPlace } from './coach.ts';

export const ESCALATION_RULES = ['spread', 'random', 'first-wrong'] as const;
export type EscalationRule = (typeof ESCALATION_RULES)[number];

export interface TierSettings {
  budget: number;
  pick: EscalationRule;
  threshold: number;
  teachEvery: number;
  /** Absent: 0 (no person). */
  person?: number;
  /** Absent: 120. */
  personWait?: number;
}

/** The keys a `coach.tiers` object may hold. */
export const TIER_KEYS: readonly string[] = ['budget', 'pick', 'threshold', 'teachEvery', 'person', 'personWait'];

/** What `coach.tiers: {}` means: a fifth of the actions by the judge's spread, no threshold, taught every 32 answers, no person. */
export const DEFAULT_TIERS: TierSettings = { budget: 0.2, pick: 'spread', threshold: 0, teachEvery: 32, person: 0, personWait: 120 };


/** A score below this is tier 1 calling the step wrong (the middle of 0..10, the neutral score). */
const WRONG_BELOW = 5;

/** How many of `n` actions a budget share allows. Example: escalationCount(64, 0.05) -> 3 */
export function escalationCount(n: number, budget: number): number {
  return Math.min(n, Math.round(budget * n));
}

/** The indices to escalate, in the order picked (see the file's comment). `spreads` NaN: unreadable, the least sure. */
export function pickEscalations(input: { scores: readonly number[]; spreads?: readonly number[]; places?: readonly ChainPlace[] },
  s: Pick<TierSettings, 'budget' | 'pick' | 'threshold'>, rng: Rng): number[] {
  const n = input.scores.length;
  const k = escalationCount(n, s.budget);
  if (k === 0) return [];
  const all = Array.from({ length: n }, (_, i) => i);
  if (s.pick === 'random') return rng.shuffle(all).slice(0, k);
  if (s.pick === 'spread') {
    if (!input.spreads) throw new Error('escalation by spread needs tier 1\'s spreads (a judge model read with readJudge)');
    const key = (i: number) => (Number.isFinite(input.spreads![i]) ? input.spreads![i] : Infinity);
    const order = all.filter((i) => key(i) >= s.threshold).sort((a, b) => key(b) - key(a) || a - b);
    return order.slice(0, k);
  }
  if (!input.places) throw new Error('escalation by the first wrong step needs each action\'s place in its chain');
  const chains = new Map<number, number[]>();
  all.forEach((i) => {
    const p = input.places![i];
    if (p.failed) chains.set(p.chain, [...(chains.get(p.chain) ?? []), i]);
  });
  const firsts = [...chains.values()].map((idx) => {
    const steps = [...idx].sort((a, b) => input.places![a].step - input.places![b].step || a - b);
    const wrong = steps.find((i) => input.scores[i] < WRONG_BELOW);
    return wrong ?? steps.reduce((lo, i) => (input.scores[i] < input.scores[lo] ? i : lo), steps[0]);
  });
  const picked = rng.shuffle(firsts).slice(0, k);
  const taken = new Set(picked);
  return [...picked, ...rng.shuffle(all.filter((i) => !taken.has(i))).slice(0, k - picked.length)];
}
