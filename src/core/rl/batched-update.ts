/**
 * The batched policy-gradient update: the same update as update.ts's per-agent one (MAPPA section 4:
 * REINFORCE++ advantages over the whole batch, PPO-clipped loss on action tokens, per-agent clipping
 * and AdamW), but every pass runs rows of several agents at once, each row through its own agent's
 * adapter (batched-passes.ts, BGMV). At 128 agents with a few samples each, that is a few full
 * micro-batches instead of 128 small passes: the update costs its samples, not its number of agents.
 *
 * For: `policyUpdate` with `batched: true` (update.ts hands over here when the compute offers team
 * passes). Not for: the per-agent path (update.ts) or the passes themselves (batched-passes.ts).
 *
 * Stages, as update.ts's:
 *   1. log-probs of every sample under its agent's adapter (team passes) and the reference (adapter
 *      off), in micro-batches of `microBatchSize` rows taken agent after agent;
 *   2. advantages (advantages.ts), the same call on the same numbers;
 *   3. per epoch, per mini-batch round m: every trainable agent's m-th mini-batch, together, in
 *      micro-batches; each agent's gradient summed over them, then one clipped AdamW step per agent.
 * Agent k's part of each loss is divided by its own mini-batch's action tokens, so its gradient is
 * the per-agent path's; the numbers equal update.ts's to float tolerance (test/unit/rl/team-update.test.ts).
 *
 * Example: await policyUpdate(compute, policies, samples, { batched: true, microBatchSize: 16 })
 *          // 128 agents x 4 samples: 32 team passes of 16 rows, 128 AdamW steps
 */
import * as tf from '@tensorflow/tfjs-core';
import { computeAdvantages } from './advantages.ts';
import { chunks, logProbRows, makeBatch, microBatches, perSample, type LogProbJob, type TrainSample } from './batches.ts';
import type { BatchedGradientJob, BatchedLogProbJob } from './batched-passes.ts';
import {
  agentMetrics, clippedStep, closeMetrics, knownLogProbs, missing,
  type AgentPolicy, type AgentUpdateMetrics, type Gradients, type RefMemory, type UpdateMetrics,
} from './update-steps.ts';
import type { UpdateSettings } from './update-settings.ts';

type BatchedCompute = Required<Pick<Gradients, 'batchedLogProbs' | 'batchedGradients'>> & Gradients;

/** Stage 1: old (own adapter) and reference log-probs of every sample, micro-batches taken agent after agent. */
async function teamSamplingLogProbs(gradients: BatchedCompute, team: TeamOf, samples: TrainSample[], s: UpdateSettings, memory?: RefMemory) {
  const known = knownLogProbs(samples, { reuseSampled: s.reuseRolloutLogprobs, memory });
  const old = known.old as number[][];
  const ref = known.ref as number[][];
  const own: BatchedLogProbJob[] = [];
  const base: LogProbJob[] = [];
  const ownParts: { rows: number[]; perRow: number[][] }[] = [];
  const baseParts: { rows: number[]; perRow: number[][] }[] = [];
  for (const rows of microBatches(samples, missing(old, team.order), s.microBatchSize)) {
    const { ids, mask, perRow } = logProbRows(samples, rows);
    const rowAdapter = rows.map((i) => team.agentOf[i]);
    own.push({ adapters: team.adapters, rowAdapter, ids, mask, positions: perRow.flat(), ...(s.sharedPrefix ? { sharePrefix: true } : {}) });
    ownParts.push({ rows, perRow });
  }
  for (const rows of microBatches(samples, missing(ref, team.order), s.microBatchSize)) {
    const { ids, mask, perRow } = logProbRows(samples, rows);
    base.push({ adapter: null, ids, mask, positions: perRow.flat(), ...(s.sharedPrefix ? { prefixGroups: rows.map((i) => team.agentOf[i]) } : {}) });
    baseParts.push({ rows, perRow });
  }
  const mine = own.length ? await gradients.batchedLogProbs(own) : [];
  const refs = base.length ? await gradients.logProbs(base) : [];
  ownParts.forEach((p, k) => perSample(old, p.rows, p.perRow, mine[k]));
  baseParts.forEach((p, k) => {
    perSample(ref, p.rows, p.perRow, refs[k]);
    if (memory) for (const i of p.rows) memory.keep(samples[i], ref[i]);
  });
  return { old, ref };
}

/** The team as the passes see it: agent names and adapters in order, each sample's agent index, samples grouped by agent. */
interface TeamOf {
  names: string[];
  adapters: AgentPolicy['adapter'][];
  agentOf: number[];
  order: number[];
  idx: number[][];
}

function teamOf(policies: Map<string, AgentPolicy>, samples: TrainSample[]): TeamOf {
  const byAgent = new Map<string, number[]>();
  samples.forEach((x, i) => byAgent.set(x.agent, [...(byAgent.get(x.agent) ?? []), i]));
  const names = [...byAgent.keys()];
  const agentOf = new Array<number>(samples.length);
  names.forEach((n, k) => byAgent.get(n)!.forEach((i) => (agentOf[i] = k)));
  const idx = names.map((n) => byAgent.get(n)!);
  return { names, adapters: names.map((n) => policies.get(n)!.adapter), agentOf, order: idx.flat(), idx };
}

/** Per agent, its gradient summed over the round's micro-batches (null where none reached it), loss and side sums. */
interface RoundSums {
  grads: (tf.Tensor[] | null)[];
  losses: number[];
  sides: number[][];
  cells: number;
}

/** Stage 3a: one round's micro-batches through the team passes, summed per agent in micro-batch order. */
async function roundGradients(gradients: BatchedCompute, team: TeamOf, jobs: BatchedGradientJob[]): Promise<RoundSums> {
  const n = team.names.length;
  const out: RoundSums = { grads: new Array(n).fill(null), losses: new Array(n).fill(0), sides: team.names.map(() => [0, 0, 0]), cells: 0 };
  const parts = await gradients.batchedGradients(jobs);
  parts.forEach((part, j) => {
    out.cells += jobs[j].batch.ids.length * jobs[j].batch.ids[0].length;
    part.agents.forEach((k, u) => {
      out.losses[k] += part.losses[u];
      part.sides[u].forEach((v, c) => (out.sides[k][c] += v));
      const prev = out.grads[k];
      if (prev === null) out.grads[k] = part.grads[u];
      else {
        out.grads[k] = prev.map((a, v) => tf.add(a, part.grads[u][v]));
        tf.dispose([...prev, ...part.grads[u]]);
      }
    });
  });
  return out;
}

/** The batched update (see the top comment); `s` is the whole settings, the samples already checked. */
export async function batchedPolicyUpdate(gradients: Gradients, policies: Map<string, AgentPolicy>, samples: TrainSample[],
  s: UpdateSettings, memory?: RefMemory): Promise<UpdateMetrics> {
  if (!gradients.batchedLogProbs || !gradients.batchedGradients) throw new Error('a batched update needs a compute with team passes');
  const compute = gradients as BatchedCompute;
  const started = performance.now();
  const team = teamOf(policies, samples);
  const { old, ref } = await teamSamplingLogProbs(compute, team, samples, s, memory);
  const { advantages, meanKl } = computeAdvantages(
    samples.map((x, i) => ({ ...x, oldLogprobs: old[i], refLogprobs: ref[i] })),
    { klCoef: s.klCoef, whitening: s.whitening },
  );

  const agents: Record<string, AgentUpdateMetrics> = {};
  const sides = team.names.map(() => [0, 0, 0]); // per agent: entropy, clipped, kl sums over its tokens
  team.names.forEach((name, k) => (agents[name] = agentMetrics(samples, team.idx[k])));
  const trainable = team.names.map((name) => policies.get(name)!.trainable);
  const minis = team.idx.map((idx) => chunks(idx, Math.ceil(idx.length / s.miniBatches)));
  const rounds = Math.max(...minis.map((m, k) => (trainable[k] ? m.length : 0)));
  let cells = 0;
  for (let epoch = 0; epoch < s.epochs; epoch++) {
    for (let round = 0; round < rounds; round++) {
      const mini = minis.map((m, k) => (trainable[k] ? m[round] ?? [] : []));
      const tokenCounts = mini.map((rows) => rows.reduce((a, i) => a + (samples[i].truncated ? 0 : samples[i].action.length), 0));
      const rows = mini.flatMap((r, k) => (tokenCounts[k] > 0 ? r.filter((i) => !samples[i].truncated) : []));
      if (!rows.length) continue;
      const jobs = microBatches(samples, rows, s.microBatchSize).map((micro) => ({
        adapters: team.adapters, rowAdapter: micro.map((i) => team.agentOf[i]), clipEps: s.clipEps, tokenCounts,
        ...(s.sharedPrefix ? { sharePrefix: true } : {}),
        batch: makeBatch(samples, { adv: advantages, old, ref }, micro),
      }));
      const g = await roundGradients(compute, team, jobs);
      cells += g.cells;
      for (let k = 0; k < team.names.length; k++) {
        const grads = g.grads[k];
        if (grads === null) continue;
        const m = agents[team.names[k]];
        g.sides[k].forEach((v, c) => (sides[k][c] += v));
        const { gradNorm, skipped } = await clippedStep(policies.get(team.names[k])!, grads, g.losses[k], s.maxGradNorm);
        m.steps++;
        if (skipped) {
          m.skippedSteps++;
          m.skipReasons.push(skipped);
        }
        m.loss += g.losses[k];
        m.gradNorm += gradNorm;
        m.tokens += tokenCounts[k];
      }
    }
  }
  team.names.forEach((name, k) => trainable[k] && closeMetrics(agents[name], sides[k]));
  const seconds = (performance.now() - started) / 1000;
  const sampleAdvantages = advantages.map((a) => (a.length ? a.reduce((x, y) => x + y, 0) / a.length : 0));
  return { agents, kl: meanKl, tokensPerSecond: cells / Math.max(seconds, 1e-9), seconds, sampleAdvantages };
}
