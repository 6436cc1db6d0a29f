/**
 * src/core/rl/ against the MAPPA authors' trainer (ltjed/multiagent-coaching, built on OpenRLHF), run
 * in torch on fixed inputs by scripts/authors-rl-fixture.py (test/fixtures/authors-rl/reinforce-pp.json,
 * which names the commit and what was stood in for). Agreement is within 1e-5. Where the two differ
 * by design, the test names the difference and checks our variant on the same input; docs/rl.md
 * says why each difference is kept:
 *   1. whitening pool: theirs per agent (each agent's trainer sees only its own samples), ours over
 *      the whole batch by default ('agent' is theirs);
 *   2. truncated actions: both mask them out of the loss; ours also leaves them out of the
 *      whitening statistics, theirs keeps their returns in;
 *   3. the whitening's epsilon: ours (G - mean) / (std + 1e-8) once; theirs clamps the variance at
 *      1e-8 and whitens twice (make_experience_list, then the replay buffer), so only a batch whose
 *      returns' std is below 1e-4 sees a difference;
 *   4. weighting across micro-batches: ours divides every micro-batch by the mini-batch's action
 *      tokens (a mean over tokens, whatever the micro-batch size); theirs takes each micro-batch's
 *      token mean and DeepSpeed averages the micro-batches, so with MAPPA's micro-batch of one
 *      sample each action weighs the same whatever its length (a mean over sequences).
 */
import * as tf from '@tensorflow/tfjs-core';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/core/engine/backend.ts';
import { LoraAdapter } from '../../../src/core/engine/lora/adapter.ts';
import { loadModel, type LoadedModel } from '../../../src/core/engine/model/load.ts';
import { rowLogProbs } from '../../../src/core/engine/model/score.ts';
import { folderSource } from '../../../src/core/engine/model/sources.ts';
import { computeAdvantages, type AdvantageInput, type Whitening } from '../../../src/core/rl/advantages.ts';
import { makeBatch, type MicroBatch, type TrainSample } from '../../../src/core/rl/batches.ts';
import { ppoGradient } from '../../../src/core/rl/ppo.ts';
import { DEFAULT_UPDATE } from '../../../src/core/rl/update-settings.ts';
import { PARITY } from '../../helpers/fixtures.ts';
import { repoRoot } from '../../helpers/webgpu.ts';

interface Sample {
  agent: string; prompt: number[]; action: number[]; reward: number;
  old_logprobs: number[]; ref_logprobs: number[]; truncated: boolean;
}
/** One run of their pipeline on the samples at `indices` (in that order). */
interface Run {
  indices: number[]; token_rewards: number[][]; returns: number[][]; kl_means: number[];
  advantages_global: number[][]; advantages: number[][];
}
interface ReinforceCase {
  name: string; kl_coef: number; samples: Sample[];
  per_agent: Record<string, Run>; pooled?: Run;
  per_agent_without_truncated?: Record<string, Run>; pooled_without_truncated?: Run;
}
interface LossPart { samples: number[]; loss: number; grad_logprobs: number[][] }
interface Fixture {
  source: { commit: string };
  reinforce_pp: ReinforceCase[];
  ppo: {
    clip_eps: number; samples: Sample[]; log_ratio: number[][]; advantages: number[][];
    one_micro_batch: LossPart[]; micro_batches_of_one: LossPart[]; accumulation_scale: number;
  };
}

const FIXTURE: Fixture = JSON.parse(readFileSync(path.join(repoRoot, 'test/fixtures/authors-rl/reinforce-pp.json'), 'utf8'));
const TOL = 1e-5;
const caseNamed = (name: string) => FIXTURE.reinforce_pp.find((c) => c.name === name)!;

const inputs = (c: ReinforceCase): AdvantageInput[] => c.samples.map((s) => ({
  agent: s.agent, reward: s.reward, oldLogprobs: s.old_logprobs, refLogprobs: s.ref_logprobs, truncated: s.truncated,
}));
const ours = (c: ReinforceCase, whitening: Whitening) => computeAdvantages(inputs(c), { klCoef: c.kl_coef, whitening });

/** Largest |a - b| over the samples a run covers (ours indexed by sample, theirs by position in the run). */
function gap(ourRows: number[][], run: Run, field: 'returns' | 'advantages' | 'advantages_global' | 'token_rewards'): number {
  let m = 0;
  run.indices.forEach((i, k) => {
    expect(ourRows[i].length).toBe(run[field][k].length);
    ourRows[i].forEach((v, t) => (m = Math.max(m, Math.abs(v - run[field][k][t]))));
  });
  return m;
}
/** Per-token rewards from returns with discount 1: r_t = G_t - G_{t+1}. */
const tokenRewards = (returns: number[][]) => returns.map((g) => g.map((v, t) => v - (g[t + 1] ?? 0)));

describe('REINFORCE++ against the authors\' trainer', () => {
  it(`the fixture comes from their commit (${FIXTURE.source.commit.slice(0, 7)}) and covers what it says`, () => {
    expect(FIXTURE.source.commit).toMatch(/^[0-9a-f]{40}$/);
    expect(FIXTURE.reinforce_pp.map((c) => c.name)).toEqual(['clean', 'strong-kl', 'truncated', 'near-constant']);
  });

  for (const name of ['clean', 'strong-kl', 'truncated']) {
    it(`${name}: the k1 KL folded into every token's reward and returns with discount 1 match`, () => {
      const c = caseNamed(name);
      const out = ours(c, 'agent');
      for (const run of Object.values(c.per_agent)) {
        expect(gap(out.returns, run, 'returns')).toBeLessThan(TOL);
        expect(gap(tokenRewards(out.returns), run, 'token_rewards')).toBeLessThan(TOL);
      }
    });
  }

  it('the mean k1 KL per action token matches their per-sample KL means weighted by length', () => {
    const c = caseNamed('clean');
    const run = c.pooled!;
    const tokens = run.indices.map((i) => c.samples[i].action.length);
    const theirs = run.kl_means.reduce((a, kl, k) => a + kl * tokens[k], 0) / tokens.reduce((a, n) => a + n, 0);
    expect(Math.abs(ours(c, 'batch').meanKl - theirs)).toBeLessThan(TOL);
  });

  for (const name of ['clean', 'strong-kl']) {
    it(`${name}: per-agent whitening matches theirs (both their whitenings: the second changes nothing)`, () => {
      const c = caseNamed(name);
      const out = ours(c, 'agent');
      for (const run of Object.values(c.per_agent)) {
        expect(gap(out.advantages, run, 'advantages')).toBeLessThan(TOL);
        expect(gap(out.advantages, run, 'advantages_global')).toBeLessThan(TOL);
      }
    });
  }

  it('difference 1: our default whitens over all agents at once; that is theirs run on the pooled batch', () => {
    expect(DEFAULT_UPDATE.whitening).toBe('batch');
    for (const name of ['clean', 'strong-kl']) {
      const c = caseNamed(name);
      const batch = ours(c, 'batch');
      expect(gap(batch.advantages, c.pooled!, 'advantages')).toBeLessThan(TOL);
      // ...and it is a real difference: per agent, the same samples get other advantages.
      const apart = Math.max(...Object.values(c.per_agent).map((run) => gap(batch.advantages, run, 'advantages')));
      expect(apart).toBeGreaterThan(0.05);
    }
  });

  it('difference 2: a truncated action gets advantage 0 and stays out of the statistics; theirs keeps its return in them', () => {
    const c = caseNamed('truncated');
    const cut = c.samples.findIndex((s) => s.truncated);
    expect(cut).toBeGreaterThanOrEqual(0);
    for (const [whitening, runs] of [['agent', Object.values(c.per_agent_without_truncated!)], ['batch', [c.pooled_without_truncated!]]] as const) {
      const out = ours(c, whitening);
      expect(out.advantages[cut].every((a) => a === 0)).toBe(true);
      // Ours equals theirs run without the truncated action...
      for (const run of runs) expect(gap(out.advantages, run, 'advantages')).toBeLessThan(TOL);
    }
    // ...while their run with it shifts everyone else's advantages (its own are masked in their loss).
    const withCut = c.per_agent[c.samples[cut].agent];
    const others = { ...withCut, indices: withCut.indices.filter((i) => i !== cut),
      advantages: withCut.advantages.filter((_, k) => withCut.indices[k] !== cut) };
    expect(gap(ours(c, 'agent').advantages, others, 'advantages')).toBeGreaterThan(1e-3);
  });

  it('difference 3: near-constant returns (std < 1e-4): ours divides by std + 1e-8; theirs clamps the variance, then whitens again', () => {
    const c = caseNamed('near-constant');
    const run = c.per_agent.solver;
    const out = ours(c, 'agent');
    expect(gap(out.returns, run, 'returns')).toBeLessThan(1e-9);
    const flat = run.returns.flat();
    const mean = flat.reduce((a, b) => a + b, 0) / flat.length;
    const std = Math.sqrt(flat.reduce((a, g) => a + (g - mean) ** 2, 0) / flat.length);
    expect(std).toBeLessThan(1e-4);
    // Ours, on their returns: one whitening with the epsilon added to the std.
    run.indices.forEach((i, k) => run.returns[k].forEach((g, t) => expect(out.advantages[i][t]).toBeCloseTo((g - mean) / (std + 1e-8), 4)));
    // Theirs: the first whitening divides by sqrt(1e-8) = 1e-4, not by the std...
    run.advantages_global.flat().forEach((a, j) => expect(a).toBeCloseTo((flat[j] - mean) / 1e-4, 4));
    // ...and the replay buffer's second one brings the advantages back to unit variance, close to ours.
    const final = run.advantages.flat();
    expect(Math.sqrt(final.reduce((a, x) => a + x * x, 0) / final.length)).toBeCloseTo(1, 4);
    expect(gap(out.advantages, run, 'advantages')).toBeLessThan(1e-8 / std * 2);
  });
});

describe('PPO-clip loss against the authors\' trainer', () => {
  let base: LoadedModel;
  let adapter: LoraAdapter;
  const p = FIXTURE.ppo;
  const samples: TrainSample[] = p.samples.map((s) => ({ agent: s.agent, prompt: s.prompt, action: s.action, reward: s.reward, truncated: s.truncated }));
  let old: number[][]; // our old log-probs: the model's log-probs minus the fixture's log-ratio, so ratio = exp(log_ratio)

  beforeAll(async () => {
    await initBackend({ force: 'cpu' });
    base = await loadModel(folderSource(path.join(PARITY, 'llama')));
    adapter = LoraAdapter.create(base.config, { rank: 4, alpha: 8, targetModules: ['q_proj', 'v_proj', 'up_proj'] }, 'solver', 3);
    for (const v of adapter.variables()) v.assign(tf.randomNormal(v.shape, 0, 0.2, 'float32', 5)); // every parameter matters
    old = [];
    for (const [i, s] of samples.entries()) {
      const b = makeBatch([{ ...s, truncated: false }]);
      const rows = s.action.map((_, j) => s.prompt.length - 1 + j);
      const logp = tf.tidy(() => rowLogProbs(base.model, b.ids, rows, { attentionMask: b.mask, adapter, train: true }).logp.arraySync());
      old.push(logp.map((l, j) => l - p.log_ratio[i][j]));
    }
  });

  const batchOf = (rows: number[]): MicroBatch =>
    makeBatch(samples, { adv: p.advantages, old, ref: old /* the reference enters only a side metric */ }, rows);

  /** d(sum_t w_t logp_t)/d(adapter): their per-token gradient pushed through our model by the chain rule. */
  function chainRule(parts: LossPart[], scale: number): Map<string, Float32Array> {
    const vars = adapter.variables();
    const { grads } = tf.variableGrads(() => {
      const terms = parts.map((part) => {
        const b = batchOf(part.samples);
        const rows: number[] = [];
        const w: number[] = [];
        b.actionMask.forEach((row, r) => row.forEach((m, t) => {
          if (!m) return;
          rows.push(r * row.length + t);
          w.push(part.grad_logprobs[r][t - (samples[part.samples[r]].prompt.length - 1)] * scale);
        }));
        const { logp } = rowLogProbs(base.model, b.ids, rows, { attentionMask: b.mask, adapter, train: true });
        return tf.sum(tf.mul(logp, tf.tensor1d(w)));
      });
      return tf.addN(terms) as tf.Scalar;
    }, vars);
    return new Map(vars.map((v) => [v.name, grads[v.name].dataSync() as Float32Array]));
  }

  async function oursSummed(microBatches: number[][], tokenCount: number): Promise<{ loss: number; grads: Map<string, Float32Array> }> {
    const vars = adapter.variables();
    let loss = 0;
    const sum = new Map(vars.map((v) => [v.name, new Float32Array(v.size)]));
    for (const rows of microBatches) {
      const g = await ppoGradient(base.model, adapter, { batch: batchOf(rows), clipEps: p.clip_eps, tokenCount });
      loss += g.loss;
      g.grads.forEach((t, k) => t.dataSync().forEach((x, j) => (sum.get(vars[k].name)![j] += x)));
      tf.dispose(g.grads);
    }
    return { loss, grads: sum };
  }

  const maxGap = (a: Map<string, Float32Array>, b: Map<string, Float32Array>) =>
    Math.max(...[...a].map(([k, x]) => x.reduce((m, v, j) => Math.max(m, Math.abs(v - b.get(k)![j])), 0)));
  const tokensOf = (rows: number[]) => rows.reduce((a, i) => a + (samples[i].truncated ? 0 : samples[i].action.length), 0);

  it('one micro-batch: the loss (mean over the unmasked action tokens) and its gradient match', async () => {
    const [theirs] = p.one_micro_batch;
    const all = samples.map((_, i) => i);
    expect(samples.some((s) => s.truncated)).toBe(true); // their truncation mask and our action mask both drop it
    const got = await oursSummed([all], tokensOf(all));
    expect(Math.abs(got.loss - theirs.loss)).toBeLessThan(TOL);
    expect(maxGap(got.grads, chainRule([theirs], 1))).toBeLessThan(TOL);
  });

  it('each of their one-sample micro-batches matches ours on that sample alone', async () => {
    for (const part of p.micro_batches_of_one) {
      if (tokensOf(part.samples) === 0) {
        expect(part.loss).toBe(0); // a truncated action alone: their masked mean is 0, ours has nothing to run
        continue;
      }
      const got = await oursSummed([part.samples], tokensOf(part.samples));
      expect(Math.abs(got.loss - part.loss)).toBeLessThan(TOL);
    }
  });

  it('difference 4: micro-batches of one sample: ours stays the mean over tokens; theirs becomes the mean over sequences', async () => {
    const all = samples.map((_, i) => i);
    const ones = all.filter((i) => !samples[i].truncated).map((i) => [i]); // ours skips a micro-batch with nothing to learn from
    const got = await oursSummed(ones, tokensOf(all));
    // Ours: the same loss and gradient as one micro-batch (their token mean)...
    const [whole] = p.one_micro_batch;
    expect(Math.abs(got.loss - whole.loss)).toBeLessThan(TOL);
    expect(maxGap(got.grads, chainRule([whole], 1))).toBeLessThan(TOL);
    // ...theirs: DeepSpeed averages the micro-batches' token means (1/4 each, the truncated one's 0 included).
    const parts = p.micro_batches_of_one;
    const theirs = parts.reduce((a, part) => a + part.loss * p.accumulation_scale, 0);
    expect(Math.abs(got.loss - theirs)).toBeGreaterThan(0.05);
    const perSequence = parts.filter((part) => tokensOf(part.samples) > 0).reduce((a, part) => a + part.loss, 0) / parts.length;
    expect(theirs).toBeCloseTo(perSequence, 6);
  });
});
