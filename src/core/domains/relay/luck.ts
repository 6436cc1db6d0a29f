/**
 * The relay's luck floor: why a chain with wrong steps still ends right about one time in ten, and
 * what that leaves of outcome reward's signal (the theory; bench/snr.ts measures it, docs/credit.md
 * words it).
 *
 * The mechanism. The team's answer is the last digit of start + k1 + ... + kN, each addition kept on a
 * dial of D = 10 positions (tasks.ts). Write agent j's error e_j = (its digit - the right digit given
 * its input) mod D: 0 when the step is right. Errors add up along the chain, so the last digit is right
 * exactly when e_1 + ... + e_N = 0 (mod D): a wrong chain ends right when its errors cancel. One wrong
 * step never cancels; two can (a 3 then a 7), and many wrong steps cancel about 1 time in D.
 *
 * The model: each step right with chance p, independently; a wrong step's digit any of the D - 1 others
 * alike (the relay model's habit, passing its input on unchanged, gives error -k mod D with k uniform on
 * 1..9: every nonzero error alike). Then, with lambda = (D p - 1) / (D - 1) (the step's error
 * distribution's Fourier coefficient at every nonzero frequency):
 *   - a rollout is rewarded by outcome reward with chance   P = 1/D + (1 - 1/D) lambda^N      (`rewardedShare`)
 *     which is pᴺ + (1 - pᴺ) q, q = (P - pᴺ) / (1 - pᴺ) the chance a wrong chain ends right (`wrongChainRight`):
 *     0 at N = 1, rising to 1/D as N grows;
 *   - of the rewarded rollouts, the share whose chain was right is pᴺ / P; the rest is luck (`luckShare`);
 *   - what outcome reward says about one step: the reward's mean given the step right less given it
 *     wrong is lambda^(N-1) (`outcomePush`), where process reward's is 1. Given the step, the other N - 1
 *     steps' errors sum to 0 with chance 1/D + (1 - 1/D) lambda^(N-1), to any one nonzero error with
 *     chance (1 - that) / (D - 1); the difference is lambda^(N-1). So outcome reward's expected gradient on
 *     an agent is lambda^(N-1) of process reward's, and its spread does not shrink (P(1 - P) stays near
 *     (1/D)(1 - 1/D)): past a few agents, nearly everything outcome reward says is noise.
 * (This replaces an older reading, that outcome reward rewards pᴺ of rollouts because a chain must have
 * all its steps right: pᴺ is the chance of a right chain, not of a rewarded rollout.)
 *
 * For: the formulas above, pure (the page's Scale the team, bench/snr.ts). Not for: measuring p or q
 * (bench/snr.ts reads them from real rollouts).
 * Example (hand-worked, test/unit/relay/luck.test.ts): p = 0.55, N = 2, D = 10: lambda = 4.5 / 9 = 0.5,
 *   P = 0.1 + 0.9 x 0.25 = 0.325 against pᴺ = 0.3025; q = 0.0225 / 0.6975 = 3.2 %; outcome's push 0.5.
 *   At N = 32: P = 0.1 + 0.9 x 0.5^32 = 10.0 % (pᴺ = 5.1e-9), push 0.5^31 = 4.7e-10.
 */

/** The relay's dial: sums keep their last digit (tasks.ts's relayStep). */
export const RELAY_DIAL = 10;

/** lambda = (D p - 1) / (D - 1): how much of a step's correctness survives one more step of noise. Example: relayLambda(0.55) -> 0.5. */
export function relayLambda(p: number, dial = RELAY_DIAL): number {
  return (dial * p - 1) / (dial - 1);
}

/** Outcome reward's chance of a rewarded rollout: 1/D + (1 - 1/D) lambda^N. Example: rewardedShare(0.55, 2) -> 0.325. */
export function rewardedShare(p: number, n: number, dial = RELAY_DIAL): number {
  return 1 / dial + (1 - 1 / dial) * relayLambda(p, dial) ** n;
}

/** The chance that a chain with a wrong step still ends right: (P - pᴺ) / (1 - pᴺ). Example: wrongChainRight(0.55, 2) -> 0.0323. */
export function wrongChainRight(p: number, n: number, dial = RELAY_DIAL): number {
  const right = p ** n;
  return right >= 1 ? 0 : (rewardedShare(p, n, dial) - right) / (1 - right);
}

/** The same with q given (measured): P = pᴺ + (1 - pᴺ) q. Example: rewardedWithFloor(0.55, 2, 0.0323) -> 0.325. */
export function rewardedWithFloor(p: number, n: number, q: number): number {
  return p ** n + (1 - p ** n) * q;
}

/** The share of outcome reward's rewarded rollouts that are luck (a wrong chain): 1 - pᴺ / P. Example: luckShare(0.55, 32) -> 1 - 5e-8. */
export function luckShare(p: number, n: number, dial = RELAY_DIAL): number {
  return 1 - p ** n / rewardedShare(p, n, dial);
}

/** Outcome reward's push on one step, as a share of process reward's: lambda^(N-1). Example: outcomePush(0.55, 4) -> 0.125. */
export function outcomePush(p: number, n: number, dial = RELAY_DIAL): number {
  return relayLambda(p, dial) ** (n - 1);
}

/**
 * The step accuracy a team of N needs for greedy team accuracy T, the luck floor included: the inverse of
 * rewardedShare, lambda = ((T - 1/D) / (1 - 1/D))^(1/N), p = ((D - 1) lambda + 1) / D. Below the floor (T <= 1/D)
 * it answers 1/D, the chance level. Example: stepForTeam(0.5, 128) -> 0.994316
 * ((0.4 / 0.9)^(1/128) = 0.993685; (9 x 0.993685 + 1) / 10), where "every step right" alone would ask 0.5^(1/128) = 0.994599.
 */
export function stepForTeam(team: number, n: number, dial = RELAY_DIAL): number {
  if (team <= 1 / dial) return 1 / dial;
  const lambda = ((team - 1 / dial) / (1 - 1 / dial)) ** (1 / n);
  return ((dial - 1) * lambda + 1) / dial;
}

/**
 * Outcome reward's rollouts for the same signal-to-noise as process reward's (docs/credit.md, prediction 3):
 * one over the squared correlation of the reward with "my step was right", Cov = p (1 - p) lambda^(N-1):
 * P (1 - P) / (p (1 - p) lambda^(2(N-1))). Example: predictedRolloutRatio(0.55, 2) -> 0.325 x 0.675 / (0.2475 x 0.25) = 3.55.
 */
export function predictedRolloutRatio(p: number, n: number, dial = RELAY_DIAL): number {
  const P = rewardedShare(p, n, dial);
  return (P * (1 - P)) / (p * (1 - p) * outcomePush(p, n, dial) ** 2);
}
