/**
 * REINFORCE++ advantages for per-action rewards (MAPPA section 4), host side.
 *
 * For: turning each action's reward (plus optional per-token shaping rewards) and the KL to the
 * reference policy into one advantage per action token. Not for: the loss (update.ts).
 *
 * Per token t of an action:  r_t = -klCoef * (logp_old_t - logp_ref_t)      (k1 estimator)
 *                                  + shaping_t  +  [t is the last token] * reward
 * Return with discount 1: G_t = sum_{s >= t} r_s. Then whitening:
 *   'batch' (default): (G - mean) / std over every action token of the whole batch, all agents;
 *   'agent': the same per agent;  'group': GRPO-style, the scalar reward normalised within its
 *   prompt group (mean/std of the group's rewards), KL folded per token, no further whitening;
 *   'state': a per-state baseline, (G - b) / std: b is the mean reward this agent has earned from this very
 *   input in earlier iterations (`StateBaselines`, the trainer's; the agent's batch mean for an input not met
 *   before), std over the batch's (G - b). An action right where the agent is always right has advantage
 *   about 0, so it no longer pushes the adapter (and its neighbouring inputs) around; unbiased, since b does
 *   not depend on the action.
 * Truncated actions get advantage 0 (masked out).
 *
 * Worked example (klCoef 0, batch whitening): two one-token actions with rewards 1 and 0 ->
 * returns [1], [0] -> mean 0.5, std 0.5 -> advantages [1], [-1].
 */

export type Whitening = 'batch' | 'agent' | 'group' | 'state';

export interface AdvantageInput {
  agent: string;
  reward: number;
  /** log-probs of the action tokens under the policy that sampled them, and under the reference. */
  oldLogprobs: number[];
  refLogprobs: number[];
  /** Extra per-token rewards (reward shaping), same length as the action; optional. */
  tokenRewards?: number[];
  /** Prompt group for 'group' whitening (samples of the same prompt and agent). */
  group?: string;
  /** 'state' whitening: the reward this agent's input has earned before (StateBaselines.attach); absent: the agent's batch mean. */
  baseline?: number;
  truncated?: boolean;
}

export interface AdvantageOptions {
  klCoef: number;
  whitening: Whitening;
  /** Added to the std before dividing, to avoid blowing up a near-constant batch. */
  eps?: number;
}

export interface AdvantageOutput {
  advantages: number[][];
  returns: number[][];
  /** Mean k1 KL (old vs reference) per action token, over non-truncated actions. */
  meanKl: number;
}

function meanStd(values: number[]): { mean: number; std: number } {
  if (values.length === 0) return { mean: 0, std: 0 };
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  const variance = values.reduce((a, v) => a + (v - mean) ** 2, 0) / values.length;
  return { mean, std: Math.sqrt(variance) };
}

/** 'state' whitening: (G - b) / std, b the sample's state baseline, else its agent's batch mean reward; std over the non-truncated (G - b). */
function stateAdvantages(samples: AdvantageInput[], returns: number[][], eps: number): number[][] {
  const sums = new Map<string, [number, number]>(); // agent -> [reward sum, samples], in one pass
  for (const s of samples) {
    const t = sums.get(s.agent) ?? [0, 0];
    sums.set(s.agent, [t[0] + s.reward, t[1] + 1]);
  }
  const agentMean = (a: string) => sums.get(a)![0] / sums.get(a)![1];
  const centred = returns.map((g, i) => g.map((x) => x - (samples[i].baseline ?? agentMean(samples[i].agent))));
  const { std } = meanStd(centred.flatMap((c, i) => (samples[i].truncated ? [] : c)));
  return centred.map((c) => c.map((x) => x / (std + eps)));
}

export function computeAdvantages(samples: AdvantageInput[], opts: AdvantageOptions): AdvantageOutput {
  const eps = opts.eps ?? 1e-8;
  let klSum = 0;
  let klCount = 0;

  // GRPO-style: normalise the scalar reward within each (group) before folding in the KL.
  const scalar = samples.map((s) => s.reward);
  if (opts.whitening === 'group') {
    const groups = new Map<string, number[]>();
    samples.forEach((s, i) => {
      const g = s.group ?? `${s.agent}#${i}`;
      groups.set(g, [...(groups.get(g) ?? []), i]);
    });
    for (const idx of groups.values()) {
      const { mean, std } = meanStd(idx.map((i) => samples[i].reward));
      for (const i of idx) scalar[i] = (samples[i].reward - mean) / (std + 1e-6);
    }
  }

  const returns = samples.map((s, i) => {
    const n = s.oldLogprobs.length;
    if (s.refLogprobs.length !== n) throw new Error(`advantages: sample ${i} has ${n} old log-probs but ${s.refLogprobs.length} reference log-probs`);
    if (s.tokenRewards && s.tokenRewards.length !== n) throw new Error(`advantages: sample ${i} has ${s.tokenRewards.length} token rewards for ${n} tokens`);
    const r = new Array<number>(n);
    for (let t = 0; t < n; t++) {
      const kl = s.oldLogprobs[t] - s.refLogprobs[t];
      if (!s.truncated) {
        klSum += kl;
        klCount++;
      }
      r[t] = -opts.klCoef * kl + (s.tokenRewards?.[t] ?? 0) + (t === n - 1 ? scalar[i] : 0);
    }
    for (let t = n - 2; t >= 0; t--) r[t] += r[t + 1]; // discount 1
    return r;
  });

  const advantages = returns.map((g) => g.slice());
  if (opts.whitening === 'state') {
    stateAdvantages(samples, returns, eps).forEach((a, i) => (advantages[i] = a));
  } else if (opts.whitening !== 'group') {
    const pools = new Map<string, number[]>();
    samples.forEach((s, i) => {
      if (s.truncated) return;
      const key = opts.whitening === 'agent' ? s.agent : '*';
      pools.set(key, [...(pools.get(key) ?? []), i]);
    });
    for (const idx of pools.values()) {
      const { mean, std } = meanStd(idx.flatMap((i) => returns[i]));
      for (const i of idx) advantages[i] = returns[i].map((g) => (g - mean) / (std + eps));
    }
  }
  samples.forEach((s, i) => {
    if (s.truncated) advantages[i] = advantages[i].map(() => 0);
  });
  return { advantages, returns, meanKl: klCount ? klSum / klCount : 0 };
}

/**
 * The trainer's per-state baselines for 'state' whitening: the mean reward of each (agent, exact prompt), over
 * its last WINDOW samples (a running mean that forgets as the policy moves on).
 * Example: const b = new StateBaselines(); b.record([{agent: 'a', prompt: [1], reward: 1}]);
 *          b.attach([{agent: 'a', prompt: [1], ...}])[0].baseline   // 1
 */
export class StateBaselines {
  private readonly means = new Map<string, { mean: number; n: number }>();
  constructor(readonly window = 8) {}

  private static key(s: { agent: string; prompt: number[] }): string {
    return `${s.agent}|${s.prompt.join(',')}`;
  }

  /** The samples with the baseline of their state where one is known. */
  attach<S extends { agent: string; prompt: number[] }>(samples: S[]): (S & { baseline?: number })[] {
    return samples.map((s) => {
      const m = this.means.get(StateBaselines.key(s));
      return m ? { ...s, baseline: m.mean } : s;
    });
  }

  /** Every state's [key, mean, count], for a checkpoint; `restore` takes them back. */
  entries(): [string, number, number][] {
    return [...this.means].map(([k, m]) => [k, m.mean, m.n]);
  }

  restore(entries: [string, number, number][]): void {
    this.means.clear();
    for (const [k, mean, n] of entries) this.means.set(k, { mean, n });
  }

  /** Folds this iteration's rewards in (after the update has used the baselines from before it). */
  record(samples: { agent: string; prompt: number[]; reward: number }[]): void {
    for (const s of samples) {
      const k = StateBaselines.key(s);
      const m = this.means.get(k) ?? { mean: 0, n: 0 };
      m.n = Math.min(m.n + 1, this.window);
      m.mean += (s.reward - m.mean) / m.n;
      this.means.set(k, m);
    }
  }
}
