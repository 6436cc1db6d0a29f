/**
 * Why outcome reward fails on the relay, measured (`npm run -s bench -- snr`): for N = 2..128, the real
 * untrained relay team (models/relay, fresh LoRA adapters: the first update of a run) plays M rollouts at
 * the training temperature, and on those same rollouts, under outcome reward and under process reward
 * (the rubric), each agent's policy gradient is taken sample by sample with the engine's own code
 * (computeAdvantages, makeBatch, ppoGradient). Per agent, the signal-to-noise ratio of one sample's gradient:
 *
 *   SNR = |E g| / sqrt(E |g - E g|^2),   g_s = A_s * grad log pi(a_s)  (the PPO gradient at ratio 1)
 *
 * with |E g|^2 estimated without bias (|mean|^2 less trace(cov) / M) and pooled over the agents measured at
 * that N; 95 % interval: percentile bootstrap over rollouts. Beside it: the Theta(N) variance line of a shared
 * reward (DG-PG, arXiv 2602.20078: SNR ~ 1/sqrt(N), anchored at outcome's N = 2) and the relay's own theory
 * (src/core/domains/relay/luck.ts: outcome's mean gradient is lambda^(N-1) of process's).
 *
 * The same rollouts give the luck floor (luck.ts): per N the step accuracy p, the share of right chains
 * (every step right), the share of rewarded rollouts P, q = the chance a chain with a wrong step still ends
 * right, outcome's push on a step (reward mean given the step right less given it wrong), at T = 1 and greedy.
 *
 * For: bench/results/snr.md (stdout), snr.svg, luck-floor.svg and snr.json (the measured rows: `--from` redraws
 * the report from them without running anything). Not for: training (bench/scale.ts).
 * One agent's per-sample gradients are kept as their Gram matrix K[s][t] = <G_s, G_t> (G = grad log pi), so
 * both rewards' advantages A read off the same backward passes: |mean of A_s G_s|^2 = A'KA / M^2.
 * Example: npm run -s bench -- snr --agents 2,8 --rollouts 32      (a smoke run, under a minute)
 *          nice -n 5 npm run -s bench -- snr > bench/results/snr.md   (the whole measurement: 17-21 min on 2 shared cores, load 6-17;
 *          most of it the 14,336 one-row backward passes and 130k agent steps; --rollouts 64 --grad-samples 512 is about a quarter)
 */
import * as tf from '@tensorflow/tfjs-core';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describeBackend, initBackend } from '../src/core/engine/backend.ts';
import { LoraAdapter } from '../src/core/engine/lora/adapter.ts';
import { openModel } from '../src/cli/common.ts';
import { resolveTrainConfig } from '../src/core/domains/index.ts';
import { relayConfig, relayOutcome, relayStepVerdict, relayDigit } from '../src/core/domains/relay/team.ts';
import { relayStep, relayTasks, RELAY_MAX_AGENTS } from '../src/core/domains/relay/tasks.ts';
import { outcomePush, rewardedShare, RELAY_DIAL } from '../src/core/domains/relay/luck.ts';
import { EngineAgents } from '../src/core/loop/agents.ts';
import { runRollouts } from '../src/core/loop/rollout.ts';
import type { Trajectory } from '../src/core/loop/trajectory.ts';
import { agentReward } from '../src/core/loop/rewards.ts';
import { computeAdvantages } from '../src/core/rl/advantages.ts';
import { makeBatch, type TrainSample } from '../src/core/rl/batches.ts';
import { ppoGradient } from '../src/core/rl/ppo.ts';
import { wilson, type Interval } from '../src/core/stats/intervals.ts';
import { Rng } from '../src/core/stats/rng.ts';
import { svgPanels, type PlotSeries } from './plot.ts';

interface Options { agents: number[]; rollouts: number; gradAgents: number; gradSamples: number; seed: number; boot: number; results: string; from: string | null }

export function parseSnrArgs(argv: string[]): Options {
  const o: Options = { agents: [2, 4, 8, 16, 32, 64, 128], rollouts: 256, gradAgents: 8, gradSamples: 2048, seed: 0, boot: 400, results: 'bench/results', from: null };
  const usage = 'options: --agents 2,4,...,128 --rollouts M (even, >= 8) --grad-agents K --grad-samples S --seed S --boot B --results DIR --from FILE (redraw from a run\'s snr.json)';
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const v = argv[++i];
    if (v === undefined) throw new Error(`bench snr: ${flag} needs a value; ${usage}`);
    const int = (lo: number, hi: number) => {
      const x = Number(v);
      if (!Number.isInteger(x) || x < lo || x > hi) throw new Error(`bench snr: ${flag} takes an integer ${lo}..${hi}, got "${v}"`);
      return x;
    };
    if (flag === '--agents') {
      o.agents = v.split(',').map(Number);
      if (o.agents.some((n) => !Number.isInteger(n) || n < 2 || n > RELAY_MAX_AGENTS)) throw new Error(`bench snr: --agents takes sizes 2..${RELAY_MAX_AGENTS} like 2,8,32, got "${v}"`);
    } else if (flag === '--rollouts') {
      o.rollouts = int(8, 4096);
      if (o.rollouts % 2) throw new Error(`bench snr: --rollouts must be even (2 samples a prompt), got ${v}`);
    } else if (flag === '--grad-agents') o.gradAgents = int(1, RELAY_MAX_AGENTS);
    else if (flag === '--grad-samples') o.gradSamples = int(8, 1e6);
    else if (flag === '--seed') o.seed = int(0, 1e9);
    else if (flag === '--boot') o.boot = int(50, 100000);
    else if (flag === '--results') o.results = v;
    else if (flag === '--from') o.from = v;
    else throw new Error(`bench snr: unknown option "${flag}"; ${usage}`);
  }
  return o;
}

/**
 * Per-sample signal and noise of g_s = a_s G_s from the Gram matrix K of the G_s (M x M, row-major), over the
 * samples `idx` (a bootstrap draw repeats some): |E g|^2 without bias as the mean of a_s a_t K[s][t] over pairs
 * of distinct samples (a U-statistic: no sample paired with itself or its copy), the noise E|g|^2 - |E g|^2.
 * Example (hand-worked, test/unit/bench/snr.test.ts): G = [1, 0], [3, 0] (K = [[1, 3], [3, 9]]), a = [1, 1]:
 *   signal2 = 1 x 3 = 3 (the one pair), E|g|^2 = (1 + 9) / 2 = 5, noise2 = 5 - 3 = 2 (the spread of 1 and 3, over M - 1).
 */
export function gramMoments(K: Float64Array, M: number, a: readonly number[], idx: readonly number[]): { signal2: number; noise2: number } {
  // c_s: how often sample s is drawn; w = c a. Pairs of distinct samples: w'Kw less the diagonal, m^2 - sum c^2 of them.
  const c = new Float64Array(M);
  for (const s of idx) c[s]++;
  const w = new Float64Array(M);
  for (let s = 0; s < M; s++) w[s] = c[s] * a[s];
  const m = idx.length;
  let second = 0;
  let cross = 0;
  let pairs = m * m;
  for (let s = 0; s < M; s++) {
    if (!c[s]) continue;
    second += c[s] * a[s] * a[s] * K[s * M + s];
    pairs -= c[s] * c[s];
    let row = 0;
    for (let t = 0; t < M; t++) row += K[s * M + t] * w[t];
    cross += w[s] * (row - K[s * M + s] * w[s]);
  }
  const signal2 = pairs > 0 ? cross / pairs : NaN;
  return { signal2, noise2: second / m - signal2 };
}

/** Pooled SNR over agents: sqrt(max(0, sum signal2) / sum noise2). */
export function pooledSnr(parts: { signal2: number; noise2: number }[]): number {
  const s = parts.reduce((t, x) => t + x.signal2, 0);
  const n = parts.reduce((t, x) => t + x.noise2, 0);
  return n > 0 ? Math.sqrt(Math.max(0, s) / n) : NaN;
}

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.max(0, Math.floor(q * (s.length - 1))))];
};

interface ChainStats { rollouts: number; stepsRight: number; stepsJudged: number; rightChains: number; rewarded: number; wrongChains: number; wrongRewarded: number; neutral: number }

/** Per rollout: each step right/wrong (undefined: no input digit), the team right, and the error residues of wrong steps. */
function chainFacts(trajs: Trajectory[]) {
  return trajs.map((t) => {
    const steps = t.actions.map((a) => {
      const given = a.messages[a.messages.length - 1]?.content ?? '';
      const v = relayStepVerdict(given, a.text);
      const m = /(-?\d+)?\s*\+\s*(\d+)\s*$/.exec(given.trim());
      const d = relayDigit(a.text);
      const error = v.right === false && m?.[1] !== undefined && d !== null ? (d - relayStep(Number(m[1]), Number(m[2])) + RELAY_DIAL) % RELAY_DIAL : null;
      return { right: v.right, score: v.score, error };
    });
    return { steps, correct: t.correct };
  });
}
type Facts = ReturnType<typeof chainFacts>;

function chainStats(f: Facts): ChainStats {
  const s: ChainStats = { rollouts: f.length, stepsRight: 0, stepsJudged: 0, rightChains: 0, rewarded: 0, wrongChains: 0, wrongRewarded: 0, neutral: 0 };
  for (const r of f) {
    for (const x of r.steps) {
      if (x.right === undefined) s.neutral++;
      else { s.stepsJudged++; if (x.right) s.stepsRight++; }
    }
    const all = r.steps.every((x) => x.right === true);
    if (all) s.rightChains++;
    else { s.wrongChains++; if (r.correct) s.wrongRewarded++; }
    if (r.correct) s.rewarded++;
  }
  return s;
}

/** Outcome's push on a step, measured: mean reward given the step right less given it wrong, pooled over agents. */
function push(f: Facts, idx: readonly number[]): number {
  let [r1, n1, r0, n0] = [0, 0, 0, 0];
  for (const i of idx) {
    for (const x of f[i].steps) {
      if (x.right === true) { n1++; r1 += f[i].correct ? 1 : 0; }
      if (x.right === false) { n0++; r0 += f[i].correct ? 1 : 0; }
    }
  }
  return n1 && n0 ? r1 / n1 - r0 / n0 : NaN;
}

interface SizeResult {
  n: number; t1: ChainStats; greedy: ChainStats; errors: number[]; push: Interval;
  snr: Record<'outcome' | 'process', Interval>; gradAgents: number; seconds: number;
}

export async function main(argv: string[]): Promise<void> {
  const o = parseSnrArgs(argv);
  if (o.from) {
    // Redraw: the measured rows of an earlier run (its snr.json), the report and plots written again; nothing is run.
    const saved = JSON.parse(await readFile(o.from, 'utf8')) as { argv: string[]; header: string; options: Options; results: SizeResult[] };
    await writeReport(saved.results, { ...saved.options, results: o.results }, saved.header, saved.argv);
    return;
  }
  const info = await initBackend({ force: 'wasm' });
  const log = (m: string) => process.stderr.write(`[bench snr ${new Date().toISOString().slice(11, 19)}] ${m}\n`);
  const started = performance.now();
  const spec = resolveTrainConfig(relayConfig(2)).agentModel;
  const relay = await openModel(spec, { tokenizer: 'required' });
  const agents = new EngineAgents(relay, new Map(), 64);
  const results: SizeResult[] = [];
  try {
    for (const n of o.agents) {
      const t0 = performance.now();
      const c = resolveTrainConfig({ ...relayConfig(n), seed: o.seed });
      // At least --rollouts, and enough that the agents measured give --grad-samples per-sample gradients (small N has few agents).
      const perAgent = Math.max(o.rollouts, 2 * Math.ceil(o.gradSamples / Math.min(n, o.gradAgents) / 2));
      const tasks = relayTasks(n, `snr:${o.seed}`, perAgent / 2);
      const play = (temperature: number) => runRollouts(c.workflow, tasks, { agents, tools: {}, samplesPerTask: 2, temperature, seed: o.seed, outcome: relayOutcome });
      const trajs = await play(c.temperature);
      const greedyTrajs = await play(0);
      const facts = chainFacts(trajs);
      const M = trajs.length;
      // The engine's rewards and advantages, one run's batch (every agent), under each reward.
      const advOf = (mode: 'outcome' | 'process') => {
        const samples = trajs.flatMap((t, r) => t.actions.map((a, j) => ({
          agent: a.agentId, reward: agentReward({ ...c.rewards, mode }, t, facts[r].steps[j].score), oldLogprobs: a.logprobs, refLogprobs: a.logprobs, truncated: a.truncated,
        })));
        const out = computeAdvantages(samples, { klCoef: c.update.klCoef, whitening: c.update.whitening }).advantages;
        // Back to [agent position][rollout]: every token of an action has the same advantage here (KL 0 at the start).
        return Array.from({ length: n }, (_, j) => trajs.map((_, r) => out[r * n + j][0] ?? 0));
      };
      const adv = { outcome: advOf('outcome'), process: advOf('process') };
      const positions = [...new Set(Array.from({ length: Math.min(n, o.gradAgents) }, (_, k) => Math.round(1 + (k * (n - 1)) / Math.max(1, Math.min(n, o.gradAgents) - 1))))];
      const grams: { j: number; K: Float64Array }[] = [];
      for (const pos of positions) {
        const j = pos - 1;
        const id = c.workflow.agents[j].id;
        const adapter = LoraAdapter.create(relay.model.config, c.lora, id, c.seed);
        const G: Float32Array[] = [];
        for (const t of trajs) {
          const a = t.actions[j];
          const sample: TrainSample = { agent: id, prompt: a.promptTokens, action: a.tokens, reward: 0, truncated: a.truncated };
          // Advantage 1 on every action token, old = the sampling log-probs (ratio 1): the gradient of -log pi(a).
          const batch = makeBatch([sample], { adv: [a.tokens.map(() => 1)], old: [a.logprobs], ref: [a.logprobs] });
          const g = await ppoGradient(relay.model, adapter, { batch, clipEps: c.update.clipEps, tokenCount: 1 });
          const parts = await Promise.all(g.grads.map((x) => x.data() as Promise<Float32Array>));
          g.grads.forEach((x) => x.dispose());
          const flat = new Float32Array(parts.reduce((s, p) => s + p.length, 0));
          let off = 0;
          for (const p of parts) { flat.set(p, off); off += p.length; }
          G.push(flat);
        }
        adapter.dispose();
        // K = G G' on the backend's matmul: [M, D] x [D, M] -> [M, M].
        const D = G[0].length;
        const flat = new Float32Array(M * D);
        G.forEach((g, s) => flat.set(g, s * D));
        const K = Float64Array.from(await tf.tidy(() => {
          const m = tf.tensor2d(flat, [M, D]);
          return tf.matMul(m, m, false, true);
        }).data());
        grams.push({ j, K });
      }
      const all = trajs.map((_, r) => r);
      const snrOf = (mode: 'outcome' | 'process', idx: readonly number[]) => pooledSnr(grams.map(({ j, K }) => gramMoments(K, M, adv[mode][j], idx)));
      const rng = new Rng(`snr-boot:${n}:${o.seed}`);
      const draws = Array.from({ length: o.boot }, () => Array.from({ length: M }, () => rng.int(0, M - 1)));
      const interval = (f: (idx: readonly number[]) => number): Interval => {
        const xs = draws.map(f).filter(Number.isFinite);
        return { p: f(all), low: quantile(xs, 0.025), high: quantile(xs, 0.975) };
      };
      const errors = new Array<number>(RELAY_DIAL).fill(0);
      facts.forEach((r) => r.steps.forEach((x) => x.error !== null && errors[x.error]++));
      results.push({
        n, t1: chainStats(facts), greedy: chainStats(chainFacts(greedyTrajs)), errors, push: interval((idx) => push(facts, idx)),
        snr: { outcome: interval((idx) => snrOf('outcome', idx)), process: interval((idx) => snrOf('process', idx)) },
        gradAgents: grams.length, seconds: (performance.now() - t0) / 1000,
      });
      const r = results.at(-1)!;
      log(`N=${n}: ${M} rollouts, p ${(r.t1.stepsRight / r.t1.stepsJudged).toFixed(3)}, rewarded ${r.t1.rewarded}/${M}, SNR outcome ${r.snr.outcome.p.toFixed(3)}, process ${r.snr.process.p.toFixed(3)} (${r.seconds.toFixed(0)} s)`);
    }
  } finally {
    relay.model.dispose();
  }
  const minutes = (performance.now() - started) / 60000;
  const header = `${os.cpus()[0]?.model ?? 'unknown CPU'}, ${describeBackend(info)}, 1 thread, Node ${process.version}, `
    + `load ${os.loadavg()[0].toFixed(1)} at the end; ${minutes.toFixed(1)} min in all.`;
  await mkdir(o.results, { recursive: true });
  await writeFile(path.join(o.results, 'snr.json'), JSON.stringify({ argv, header, options: o, results }) + '\n');
  await writeReport(results, o, header, argv);
}

/** snr.md on stdout, snr.svg and luck-floor.svg in --results. */
async function writeReport(results: SizeResult[], o: Options, header: string, argv: string[]): Promise<void> {
  await mkdir(o.results, { recursive: true });
  const { markdown, snrSvg, luckSvg } = report(results, o);
  await writeFile(path.join(o.results, 'snr.svg'), snrSvg);
  await writeFile(path.join(o.results, 'luck-floor.svg'), luckSvg);
  process.stdout.write([
    '# Why outcome reward fails on the relay: the luck floor and the gradient\'s signal-to-noise, measured', '',
    `\`npm run -s bench -- snr ${argv.join(' ')}\`; ${header}`, '', markdown,
  ].join('\n'));
}

const pct = (x: number) => `${(100 * x).toFixed(1)} %`;
const ivp = (i: Interval) => `${pct(i.p)} [${(100 * i.low).toFixed(1)}, ${(100 * i.high).toFixed(1)}]`;
const sci = (x: number) => (Math.abs(x) >= 0.01 || x === 0 ? x.toFixed(3) : x.toExponential(1));
const ivs = (i: Interval) => `${sci(i.p)} [${sci(i.low)}, ${sci(i.high)}]`;

/** The tables, the words computed from them, and the two plots. */
export function report(rs: SizeResult[], o: Options): { markdown: string; snrSvg: string; luckSvg: string } {
  const lines: string[] = [];
  lines.push(`- the untrained relay team (models/relay; fresh LoRA adapters, B = 0, so the base model's policy: a run's first update), `
    + `per N at least ${o.rollouts} rollouts and enough for ${o.gradSamples} per-sample gradients over the agents measured (training tasks x 2 samples, T = 1; `
    + `the same tasks greedy): ${rs.map((r) => `${r.t1.rollouts} at N = ${r.n}`).join(', ')}; seed ${o.seed}`);
  lines.push(`- steps judged by the rubric (relayStepVerdict); a step whose input holds no digit is neutral and left out of p`);
  lines.push(`- theory (src/core/domains/relay/luck.ts): lambda = (10 p - 1) / 9; rewarded share P = 1/10 + 9/10 lambda^N; outcome's push on a step lambda^(N-1)`, '');
  lines.push('## The luck floor: outcome reward\'s rewarded rollouts', '');
  lines.push('| N | temperature | step accuracy p | right chains (every step) [95 %] | p^N | rewarded rollouts P [95 %] | theory P | q: wrong chains that end right [95 %] | luck share of rewards |');
  lines.push('|---:|---|---|---|---:|---|---:|---|---:|');
  for (const r of rs) {
    for (const [name, s] of [['T = 1', r.t1], ['greedy', r.greedy]] as const) {
      const p = s.stepsRight / s.stepsJudged;
      lines.push(`| ${r.n} | ${name} | ${ivp(wilson(s.stepsRight, s.stepsJudged))} | ${ivp(wilson(s.rightChains, s.rollouts))} | ${sci(p ** r.n)} | `
        + `${ivp(wilson(s.rewarded, s.rollouts))} | ${pct(rewardedShare(p, r.n))} | ${s.wrongChains ? ivp(wilson(s.wrongRewarded, s.wrongChains)) : '-'} | `
        + `${s.rewarded ? pct(1 - Math.min(s.rightChains, s.rewarded) / s.rewarded) : '-'} |`);
    }
  }
  lines.push('', '## What outcome reward says about a step, and the gradient\'s signal-to-noise', '');
  lines.push(`Per agent, one sample's gradient g = A grad log pi(a), A the engine's advantage (REINFORCE++, batch whitening) under each reward; `
    + `SNR = |E g| / sqrt(E |g - E g|^2), |E g|^2 estimated without bias, pooled over the agents measured (spread over the chain, first and last included); `
    + `[95 %]: percentile bootstrap over the rollouts (${o.boot} draws). An SNR of 0 means the signal is below what the samples resolve (about 2 / sqrt(rollouts x agents measured)).`, '');
  lines.push('| N | agents measured | outcome\'s push on a step (T = 1) [95 %] | theory lambda^(N-1) | SNR, outcome [95 %] | SNR, process [95 %] | outcome / process | theory: lambda^(N-1) sqrt(p(1-p) / P(1-P)) | s |');
  lines.push('|---:|---:|---|---:|---|---|---:|---:|---:|');
  for (const r of rs) {
    const p = r.t1.stepsRight / r.t1.stepsJudged;
    const P = rewardedShare(p, r.n);
    lines.push(`| ${r.n} | ${r.gradAgents} | ${ivs(r.push)} | ${sci(outcomePush(p, r.n))} | ${ivs(r.snr.outcome)} | ${ivs(r.snr.process)} | `
      + `${sci(r.snr.outcome.p / r.snr.process.p)} | ${sci(outcomePush(p, r.n) * Math.sqrt((p * (1 - p)) / (P * (1 - P))))} | ${r.seconds.toFixed(0)} |`);
  }
  const errs = rs.reduce((acc, r) => acc.map((x, i) => x + r.errors[i]), new Array<number>(RELAY_DIAL).fill(0));
  const wrong = errs.reduce((a, b) => a + b, 0);
  lines.push('', `Wrong steps' errors (reply - right digit, mod 10), all N pooled at T = 1 (${wrong} steps): `
    + errs.slice(1).map((k, i) => `${i + 1}: ${pct(k / wrong)}`).join(', ') + ' (the theory takes each 1/9 = 11.1 %).', '');
  lines.push('## Findings (computed from the rows above)', '');
  const big = rs.filter((r) => r.n >= 16);
  if (big.length) {
    const rw = big.reduce((a, r) => a + r.t1.rewarded, 0);
    const ro = big.reduce((a, r) => a + r.t1.rollouts, 0);
    const rc = big.reduce((a, r) => a + r.t1.rightChains, 0);
    lines.push(`- N >= 16, pooled: outcome reward rewarded ${ivp(wilson(rw, ro))} of ${ro} rollouts at T = 1; ${rc} of them had every step right. The floor is 10 %.`);
  }
  const lost = rs.find((r) => r.snr.outcome.low <= 0);
  if (lost) lines.push(`- outcome reward's SNR interval reaches 0 (no signal resolved) from N = ${lost.n}; process reward's stays at ${rs.filter((r) => r.n >= lost.n).map((r) => sci(r.snr.process.p)).join(', ')} there.`);
  const relayTheory = (r: SizeResult) => {
    const p = r.t1.stepsRight / r.t1.stepsJudged;
    const P = rewardedShare(p, r.n);
    return r.snr.process.p * outcomePush(p, r.n) * Math.sqrt((p * (1 - p)) / (P * (1 - P)));
  };
  const dgpg = (r: SizeResult) => rs[0].snr.outcome.p * Math.sqrt(rs[0].n / r.n);
  const inside = (i: Interval, v: number) => i.low <= v && v <= i.high;
  const ns = (f: (r: SizeResult) => boolean) => rs.filter(f).map((r) => r.n).join(', ') || 'none';
  lines.push(`- outcome's push on a step holds the theory's lambda^(N-1) inside its interval at N = ${ns((r) => inside(r.push, outcomePush(r.t1.stepsRight / r.t1.stepsJudged, r.n)))}; `
    + `the rewarded share P holds 1/10 + 9/10 lambda^N (T = 1) inside its Wilson interval at N = ${ns((r) => inside(wilson(r.t1.rewarded, r.t1.rollouts), rewardedShare(r.t1.stepsRight / r.t1.stepsJudged, r.n)))}.`);
  lines.push(`- outcome's SNR against the two lines, past N = ${rs[0].n}: the relay theory's value lies inside its interval at N = ${ns((r) => r !== rs[0] && inside(r.snr.outcome, relayTheory(r)))}; `
    + `the Theta(N) line's (1/sqrt(N) from N = ${rs[0].n}) lies above its interval at N = ${ns((r) => r !== rs[0] && r.snr.outcome.high < dgpg(r))}, inside it at N = ${ns((r) => r !== rs[0] && inside(r.snr.outcome, dgpg(r)))}.`);
  const pr = rs.map((r) => r.snr.process.p);
  const [first, last] = [rs[0], rs.at(-1)!];
  const apart = first.snr.process.low > last.snr.process.high ? 'fell beyond the noise' : first.snr.process.high < last.snr.process.low ? 'rose beyond the noise' : 'did not move beyond the noise (the intervals overlap)';
  lines.push(`- process reward's SNR across N: ${pr.map(sci).join(', ')} (N = ${rs.map((r) => r.n).join(', ')}); from N = ${first.n} (${ivs(first.snr.process)}) to N = ${last.n} (${ivs(last.snr.process)}) it ${apart}.`);

  const x = (n: number) => Math.log2(n);
  const colors = { outcome: '#d62728', process: '#1f77b4' };
  const snrSeries: PlotSeries[] = (['process', 'outcome'] as const).map((mode) => ({
    label: `${mode} reward, measured [95 %]`, color: colors[mode],
    points: rs.map((r) => ({ x: x(r.n), y: Math.max(r.snr[mode].p, 1e-3), low: Math.max(r.snr[mode].low, 1e-3), high: r.snr[mode].high, atLeast: false })),
  }));
  const a = rs[0];
  snrSeries.push({
    label: 'Theta(N) variance (DG-PG): SNR ~ 1/sqrt(N), from outcome at the first N', color: '#7f7f7f', dashed: true,
    points: rs.map((r) => ({ x: x(r.n), y: a.snr.outcome.p * Math.sqrt(a.n / r.n) })),
  });
  snrSeries.push({
    label: 'relay theory: process x lambda^(N-1) x sqrt(p(1-p) / P(1-P))', color: '#ff7f0e', dashed: true,
    points: rs.map((r) => {
      const p = r.t1.stepsRight / r.t1.stepsJudged;
      const P = rewardedShare(p, r.n);
      return { x: x(r.n), y: r.snr.process.p * outcomePush(p, r.n) * Math.sqrt((p * (1 - p)) / (P * (1 - P))) };
    }).filter((q) => q.y >= 1e-3),
  });
  snrSeries.push({ label: 'what the samples resolve (about 2 / sqrt(rollouts x agents measured))', color: '#bbbbbb', dashed: true,
    points: rs.map((r) => ({ x: x(r.n), y: 2 / Math.sqrt(r.t1.rollouts * r.gradAgents) })) });
  const snrSvg = svgPanels([{
    title: 'SNR of one sample\'s gradient, per agent (0 drawn at 0.001)', xLabel: 'log2 of agents in the relay', yLabel: 'SNR (log scale)',
    logY: true, yMin: 1e-3, series: snrSeries,
  }], 'Why outcome reward fails: gradient SNR against N');
  const luck: PlotSeries[] = [
    { label: 'rewarded rollouts, measured (T = 1) [95 %]', color: '#d62728', dotsOnly: true,
      points: rs.map((r) => { const i = wilson(r.t1.rewarded, r.t1.rollouts); return { x: x(r.n), y: i.p, low: i.low, high: i.high }; }) },
    { label: 'rewarded rollouts, measured (greedy) [95 %]', color: '#9467bd', dotsOnly: true,
      points: rs.map((r) => { const i = wilson(r.greedy.rewarded, r.greedy.rollouts); return { x: x(r.n) + 0.08, y: i.p, low: i.low, high: i.high }; }) },
    { label: 'luck floor: 1/10 + 9/10 lambda^N (p measured at T = 1)', color: '#d62728', dashed: true,
      points: rs.map((r) => ({ x: x(r.n), y: rewardedShare(r.t1.stepsRight / r.t1.stepsJudged, r.n) })) },
    { label: 'luck floor, p measured greedy', color: '#9467bd', dashed: true,
      points: rs.map((r) => ({ x: x(r.n), y: rewardedShare(r.greedy.stepsRight / r.greedy.stepsJudged, r.n) })) },
    { label: 'the old claim: p^N (right chains only)', color: '#7f7f7f', dashed: true,
      points: rs.map((r) => ({ x: x(r.n), y: (r.t1.stepsRight / r.t1.stepsJudged) ** r.n })) },
    { label: 'right chains, measured (T = 1)', color: '#2ca02c', dotsOnly: true,
      points: rs.map((r) => ({ x: x(r.n) - 0.08, y: r.t1.rightChains / r.t1.rollouts })) },
  ];
  const luckSvg = svgPanels([{
    title: 'Rewarded by outcome reward (untrained relay)', xLabel: 'log2 of agents in the relay', yLabel: 'share of rollouts',
    yMin: 0, yMax: 1, series: luck,
  }], 'The luck floor: wrong chains still end right');
  return { markdown: lines.join('\n') + '\n', snrSvg, luckSvg };
}
