/**
 * Choosing the next token from one row of logits: greedy, temperature, top-k, top-p, seeded.
 *
 * For: the decode loop (host side; the logits row is already on the host).
 * Not for: log-probabilities used in training (score.ts recomputes those on the device).
 *
 * The returned log-probability is that of the chosen token under softmax(logits / temperature)
 * before top-k/top-p truncation (temperature 0 = greedy: under softmax(logits)). That is the
 * quantity a policy-gradient trainer recomputes as the "old" policy.
 * Example: logits [0, ln 3], greedy -> {token 1, logprob ln(3/4)}.
 */

export interface SamplingOptions {
  /** 0 or less = greedy (argmax). Default 1. */
  temperature?: number;
  /** Keep the k most likely tokens (0 = off). */
  topK?: number;
  /** Keep the smallest set of tokens whose probability reaches p (1 = off). */
  topP?: number;
}

/** Anything that yields uniform numbers in [0, 1): the project's seeded `Rng` fits. */
export interface UniformSource {
  next(): number;
}

export interface Sampled {
  token: number;
  logprob: number;
}

function argmax(row: Float32Array): number {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i] > row[best]) best = i;
  return best;
}

/** log sum exp of row / temperature, stable. */
function logNormalizer(row: Float32Array, invT: number, max: number): number {
  let sum = 0;
  for (let i = 0; i < row.length; i++) sum += Math.exp((row[i] - max) * invT);
  return Math.log(sum);
}

export function sampleToken(row: Float32Array, opts: SamplingOptions, rng: UniformSource): Sampled {
  const temperature = opts.temperature ?? 1;
  const greedy = temperature <= 0;
  const invT = greedy ? 1 : 1 / temperature;
  const max = row[argmax(row)];
  const logZ = logNormalizer(row, invT, max);
  const logprobOf = (token: number) => (row[token] - max) * invT - logZ;
  if (greedy) {
    const token = argmax(row);
    return { token, logprob: logprobOf(token) };
  }

  // Candidates sorted by logit, truncated by top-k, then by top-p on the renormalised probabilities.
  const vocab = row.length;
  const topK = opts.topK && opts.topK > 0 ? Math.min(opts.topK, vocab) : vocab;
  const topP = opts.topP ?? 1;
  let candidates: number[];
  if (topK === vocab && topP >= 1) {
    candidates = [];
  } else {
    const order = Array.from({ length: vocab }, (_, i) => i);
    order.sort((a, b) => row[b] - row[a] || a - b);
    candidates = order.slice(0, topK);
    if (topP < 1) {
      let keptMass = 0;
      let total = 0;
      for (const i of candidates) total += Math.exp((row[i] - max) * invT);
      let cut = candidates.length;
      for (let j = 0; j < candidates.length; j++) {
        keptMass += Math.exp((row[candidates[j]] - max) * invT) / total;
        if (keptMass >= topP) {
          cut = j + 1;
          break;
        }
      }
      candidates = candidates.slice(0, Math.max(cut, 1));
    }
  }

  const u = rng.next();
  if (candidates.length === 0) {
    // Full distribution: inverse CDF over the vocabulary in index order.
    let acc = 0;
    const target = u * Math.exp(logZ);
    for (let i = 0; i < vocab; i++) {
      acc += Math.exp((row[i] - max) * invT);
      if (acc > target) return { token: i, logprob: logprobOf(i) };
    }
    const last = argmax(row);
    return { token: last, logprob: logprobOf(last) };
  }
  let total = 0;
  for (const i of candidates) total += Math.exp((row[i] - max) * invT);
  let acc = 0;
  for (const i of candidates) {
    acc += Math.exp((row[i] - max) * invT);
    if (acc > u * total) return { token: i, logprob: logprobOf(i) };
  }
  const fallback = candidates[candidates.length - 1];
  return { token: fallback, logprob: logprobOf(fallback) };
}
