// Seeded pseudo-random numbers for everything in mappa-sandbox that must replay exactly:
// task generation, data splits, token sampling, rollout order.
//
// Generator: xoshiro128** (Blackman & Vigna), 128 bits of state as four uint32 words, seeded
// through splitmix32 so that nearby seeds (1, 2, 3) give unrelated streams. Its whole state is
// four numbers, so a training checkpoint can save `rng.getState()` and resume with `setState`.
//
// Not for: cryptography (it is predictable by design), nor for anything that needs more than
// 32 bits of randomness per draw (next() has 32-bit resolution).
//
// Example:
//   const rng = new Rng(42);
//   rng.int(1, 6);            // a die roll, 1..6 inclusive
//   const saved = rng.getState();
//   const a = rng.next();
//   rng.setState(saved);
//   rng.next() === a;         // true

/** Serialisable generator state: four uint32 words (never all zero). */
export type RngState = [number, number, number, number];

/** A seed: a finite number (its integer part is used, any sign/size) or a string (hashed). */
export type Seed = number | string;

const TWO_POW_32 = 4294967296;

/** 32-bit FNV-1a hash of a string's UTF-16 code units. hashString('') === 0x811c9dc5. */
export function hashString(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** One splitmix32 step: returns [output, nextState]. Used only to expand a seed into 128 bits. */
function splitmix32(state: number): [number, number] {
  const next = (state + 0x9e3779b9) >>> 0;
  let z = next;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return [(z ^ (z >>> 16)) >>> 0, next];
}

/** Reduce a seed to one uint32 (numbers beyond 2^32 keep their high bits via a second mix). */
function seedToUint32(seed: Seed): number {
  if (typeof seed === 'string') return hashString(seed);
  if (!Number.isFinite(seed)) throw new Error(`Rng: seed must be a finite number or a string, got ${seed}`);
  const whole = Math.trunc(seed);
  const low = whole >>> 0; // two's-complement low 32 bits, also for negatives
  const high = Math.floor(whole / TWO_POW_32) >>> 0;
  return (low ^ Math.imul(high, 0x9e3779b1)) >>> 0;
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}

export class Rng {
  private s0 = 0;
  private s1 = 0;
  private s2 = 0;
  private s3 = 0;

  /** new Rng(7) and new Rng('heldout-v1') are both valid; the same seed gives the same stream. */
  constructor(seed: Seed = 0) {
    let state = seedToUint32(seed);
    const words: number[] = [];
    for (let i = 0; i < 4; i++) {
      const [out, next] = splitmix32(state);
      words.push(out);
      state = next;
    }
    this.setState(words as RngState);
  }

  /** Build a generator directly from a saved state (see getState). */
  static fromState(state: RngState): Rng {
    const rng = new Rng(0);
    rng.setState(state);
    return rng;
  }

  /** A copy of the four state words; JSON-serialisable. */
  getState(): RngState {
    return [this.s0, this.s1, this.s2, this.s3];
  }

  /** Restore a state from getState(). Throws on anything that is not four uint32 words. */
  setState(state: readonly number[]): void {
    if (!Array.isArray(state) || state.length !== 4 || !state.every((w) => Number.isInteger(w) && w >= 0 && w < TWO_POW_32)) {
      throw new Error(`Rng.setState: expected four uint32 words, got ${JSON.stringify(state)}`);
    }
    if (state.every((w) => w === 0)) throw new Error('Rng.setState: the all-zero state is invalid for xoshiro128**');
    [this.s0, this.s1, this.s2, this.s3] = state;
  }

  /** Next raw uint32 (xoshiro128**). With state [1,2,3,4] the first outputs are 11520, 0, 5927040. */
  nextUint32(): number {
    const result = Math.imul(rotl(Math.imul(this.s1, 5) >>> 0, 7), 9) >>> 0;
    const t = (this.s1 << 9) >>> 0;
    this.s2 = (this.s2 ^ this.s0) >>> 0;
    this.s3 = (this.s3 ^ this.s1) >>> 0;
    this.s1 = (this.s1 ^ this.s2) >>> 0;
    this.s0 = (this.s0 ^ this.s3) >>> 0;
    this.s2 = (this.s2 ^ t) >>> 0;
    this.s3 = rotl(this.s3, 11);
    return result;
  }

  /** Uniform float in [0, 1), 32-bit resolution. */
  next(): number {
    return this.nextUint32() / TWO_POW_32;
  }

  /** Uniform integer in [lo, hi], both inclusive. int(1, 6) is a die roll. */
  int(lo: number, hi: number): number {
    if (!Number.isInteger(lo) || !Number.isInteger(hi) || hi < lo) {
      throw new Error(`Rng.int: need integers lo <= hi, got lo=${lo}, hi=${hi}`);
    }
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  /** Uniform float in [lo, hi). */
  uniform(lo: number, hi: number): number {
    return lo + (hi - lo) * this.next();
  }

  /** True with probability p. */
  bernoulli(p: number): boolean {
    return this.next() < p;
  }

  /** A uniformly chosen element. Throws on an empty array. */
  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('Rng.pick: cannot pick from an empty array');
    return items[Math.floor(this.next() * items.length)];
  }

  /** Index drawn with probability proportional to weights[i] (non-negative, not all zero). */
  weightedIndex(weights: readonly number[]): number {
    let total = 0;
    for (const w of weights) {
      if (!(w >= 0)) throw new Error(`Rng.weightedIndex: weights must be >= 0, got ${w}`);
      total += w;
    }
    if (total <= 0) throw new Error('Rng.weightedIndex: weights sum to zero');
    let target = this.next() * total;
    for (let i = 0; i < weights.length; i++) {
      target -= weights[i];
      if (target < 0) return i;
    }
    // Floating-point leftovers: return the last index with positive weight.
    for (let i = weights.length - 1; i >= 0; i--) if (weights[i] > 0) return i;
    return weights.length - 1;
  }

  /** Fisher-Yates shuffle in place; returns the same array. */
  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      const tmp = items[i];
      items[i] = items[j];
      items[j] = tmp;
    }
    return items;
  }

  /** Normal(mean, std) by Box-Muller; uses two uniforms per call and keeps no cached spare, so
   *  getState() captures everything. */
  normal(mean = 0, std = 1): number {
    const u1 = 1 - this.next(); // (0, 1], safe for log
    const u2 = this.next();
    return mean + std * Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
  }

  /** An independent child stream named by a label, without advancing this one:
   *  rng.fork('sampling') twice gives two identical streams. */
  fork(label: string): Rng {
    const mixed = (this.s0 ^ Math.imul(this.s1, 0x9e3779b1) ^ rotl(this.s2, 13) ^ rotl(this.s3, 27) ^ hashString(label)) >>> 0;
    return new Rng(mixed);
  }
}
