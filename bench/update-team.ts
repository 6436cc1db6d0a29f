/**
 * The update of a team of N agents at an equal number of samples, per agent (one pass per agent's
 * micro-batch, update.ts) against batched (rows of many agents in one pass, each through its own
 * adapter: rl/batched-update.ts), with each time as a ratio to one agent's update of the same samples.
 * The goal (issue: a hundred agents in one tab): batched within 1.5x of one agent at N = 128.
 *
 * For: `npm run -s bench -- update --agents 1,4,8,16,32,64,128 [--samples 512] [--micro 16] [--reps 3]
 * [--model models/relay] [--prompt 28] [--action 2]`, a markdown table on stdout. One process, wasm.
 * Not for: the update's tokens/s at a large shape (bench/update.ts without --agents).
 *
 * The samples: `--samples` actions spread round-robin over the N agents, each a prompt of `--prompt`
 * random tokens and an action of `--action` (a relay step is about 28 + 2 tokens), rewards in [0, 1];
 * every agent a rank-8 LoRA on q, k, v, o with its own AdamW. Each timing is the median of `--reps`
 * updates after one warm-up update.
 *
 * Example: npm run -s bench -- update --agents 1,8,128 --samples 256
 *   | 128 | 2 | 9.80 s (10.1) | 4.10 s (4.3) | 3.20 s (3.3) | 4.45x | 1.86x | 1.45x |
 */
import os from 'node:os';
import { describeBackend, initBackend } from '../src/core/engine/backend.ts';
import { registerCustomKernels } from '../src/core/engine/kernels/register.ts';
import { LoraAdapter } from '../src/core/engine/lora/adapter.ts';
import { loadModel } from '../src/core/engine/model/load.ts';
import { folderSource } from '../src/core/engine/model/sources.ts';
import { AdamW } from '../src/core/rl/adamw.ts';
import { policyUpdate } from '../src/core/rl/update.ts';
import { type AgentPolicy } from '../src/core/rl/update-steps.ts';
import { type TrainSample } from '../src/core/rl/batches.ts';
import { BatchedAdapter } from '../src/core/engine/lora/batched-adapter.ts';
import { thisThread } from '../src/core/compute/local.ts';
import { Rng } from '../src/core/stats/rng.ts';

interface Options {
  agents: number[];
  samples: number;
  micro: number;
  reps: number;
  model: string;
  prompt: number;
  action: number;
}

export function parseTeamArgs(argv: string[]): Options {
  const o: Options = { agents: [1, 4, 8, 16, 32, 64, 128], samples: 512, micro: 16, reps: 3, model: 'models/relay', prompt: 28, action: 2 };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const v = argv[++i];
    if (v === undefined) throw new Error(`bench update --agents: ${flag} needs a value`);
    const whole = (lo: number, hi: number) => {
      const n = Number(v);
      if (!Number.isInteger(n) || n < lo || n > hi) throw new Error(`bench update --agents: ${flag} takes a whole number in ${lo}..${hi}, got "${v}"`);
      return n;
    };
    if (flag === '--agents') {
      o.agents = v.split(',').map(Number);
      if (o.agents.some((n) => !Number.isInteger(n) || n < 1 || n > 1024)) throw new Error(`bench update --agents takes team sizes like 1,8,128, got "${v}"`);
    } else if (flag === '--samples') o.samples = whole(1, 100000);
    else if (flag === '--micro') o.micro = whole(1, 4096);
    else if (flag === '--reps') o.reps = whole(1, 100);
    else if (flag === '--model') o.model = v;
    else if (flag === '--prompt') o.prompt = whole(1, 4096);
    else if (flag === '--action') o.action = whole(1, 4096);
    else throw new Error(`bench update --agents: unknown option "${flag}". Options: --agents 1,8,128 --samples N --micro N --reps N --model DIR --prompt N --action N`);
  }
  const largest = Math.max(...o.agents);
  if (o.samples < largest) throw new Error(`bench update --agents: --samples ${o.samples} is fewer than the ${largest} agents; give every agent a sample`);
  return o;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

export async function main(argv: string[]): Promise<void> {
  const o = parseTeamArgs(argv);
  const info = await initBackend({ force: 'wasm' });
  registerCustomKernels();
  const loaded = await loadModel(folderSource(o.model), { tokenizer: 'skip' });
  const model = loaded.model;
  const compute = thisThread(model);
  const rng = new Rng('bench-update-team');
  const V = loaded.config.vocabSize;
  const base = Array.from({ length: o.samples }, () => ({
    prompt: Array.from({ length: o.prompt }, () => rng.int(1, V - 1)),
    action: Array.from({ length: o.action }, () => rng.int(1, V - 1)),
    reward: rng.next(),
  }));
  const log = (m: string) => console.error(`[bench update --agents ${new Date().toISOString().slice(11, 19)}] ${m}`);
  // Wall time and this process's CPU time (user + system): on a shared machine the CPU time is the steadier figure.
  type Timing = { wall: number; cpu: number; lo?: number; hi?: number };
  const rows: { n: number; perAgent: Timing; gather: Timing; masked: Timing }[] = [];
  for (const n of o.agents) {
    const policies = new Map<string, AgentPolicy>();
    for (let k = 0; k < n; k++) {
      const adapter = LoraAdapter.create(loaded.config, { rank: 8, alpha: 16 }, `agent${k + 1}`, k);
      policies.set(adapter.name, { adapter, optimizer: new AdamW(adapter.variables(), { lr: 1e-3 }), trainable: true });
    }
    const samples: TrainSample[] = base.map((x, i) => ({ ...x, agent: `agent${(i % n) + 1}` }));
    const once = async (batched: boolean, form: 'gather' | 'masked'): Promise<Timing> => {
      BatchedAdapter.form = form;
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      await policyUpdate(compute, policies, samples, { microBatchSize: o.micro, batched });
      const c = process.cpuUsage(c0);
      return { wall: (performance.now() - t0) / 1000, cpu: (c.user + c.system) / 1e6 };
    };
    // Warm-up, then the three ways alternated rep by rep, so that a busy spell on the machine falls on all of them.
    const ways = [[false, 'gather'], [true, 'gather'], [true, 'masked']] as const;
    for (const [b, f] of ways) await once(b, f);
    const got: Timing[][] = [[], [], []];
    for (let r = 0; r < o.reps; r++) for (const [k, [b, f]] of ways.entries()) got[k].push(await once(b, f));
    const med = (ts: Timing[]) => ({
      wall: median(ts.map((t) => t.wall)), cpu: median(ts.map((t) => t.cpu)),
      lo: Math.min(...ts.map((t) => t.cpu)), hi: Math.max(...ts.map((t) => t.cpu)),
    });
    const [perAgent, gather, masked] = got.map(med);
    rows.push({ n, perAgent, gather, masked });
    log(`N = ${n}: CPU s per agent ${perAgent.cpu.toFixed(2)}, batched (gather) ${gather.cpu.toFixed(2)}, batched (masked) ${masked.cpu.toFixed(2)}`);
    for (const p of policies.values()) {
      p.adapter.dispose();
      p.optimizer.dispose();
    }
  }
  BatchedAdapter.form = 'masked';
  const one = rows.find((r) => r.n === 1)?.perAgent;
  console.log(`# The update of N agents at ${o.samples} samples: per agent against batched\n`);
  console.log(`\`npm run -s bench -- update ${argv.join(' ')}\`; ${os.cpus()[0]?.model ?? 'unknown CPU'}, ${describeBackend(info)}, 1 thread; `
    + `${o.model} (${loaded.config.numLayers} layers, hidden ${loaded.config.hiddenSize}), rank-8 LoRA on q, k, v, o per agent; `
    + `${o.samples} samples of ${o.prompt} + ${o.action} tokens, round-robin over the agents; micro-batches of ${o.micro} rows; `
    + `median of ${o.reps} updates per way after a warm-up, the ways alternated. Seconds are this process's CPU time `
    + `(user + system), the median with the range of the reps [min, max], wall time in parentheses; ratios are of median CPU time to `
    + 'one agent\'s per-agent update of the same samples; a difference inside the ranges is no difference. '
    + 'Batched, gather: A and B gathered per row, batched matmuls; masked: the used pairs concatenated, one matmul, each row keeping its own columns.\n');
  console.log('| agents | samples per agent | per agent | batched, gather | batched, masked | per agent / one agent | gather / one agent | masked / one agent |');
  console.log('|---:|---:|---:|---:|---:|---:|---:|---:|');
  const sec = (t: Timing) => `${t.cpu.toFixed(2)} s [${t.lo!.toFixed(2)}, ${t.hi!.toFixed(2)}] (${t.wall.toFixed(2)})`;
  for (const r of rows) {
    const ratio = (t: Timing) => (one ? `${(t.cpu / one.cpu).toFixed(2)}x` : '-');
    console.log(`| ${r.n} | ${+(o.samples / r.n).toFixed(1)} | ${sec(r.perAgent)} | ${sec(r.gather)} | ${sec(r.masked)} | `
      + `${ratio(r.perAgent)} | ${ratio(r.gather)} | ${ratio(r.masked)} |`);
  }
  if (!one) console.log('\n(no N = 1 row: add 1 to --agents for the ratios to one agent)');
  model.dispose();
}
