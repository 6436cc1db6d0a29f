/**
 * Where a relay team's greedy errors are, cell by cell. Greedy decoding is deterministic, so an agent's
 * greedy step accuracy is an average over a finite set of inputs: its predecessor's digit x (0..9) and
 * its own number k (1..9), 90 cells per agent (agent 1's "x + k" is its start digit and number: the
 * same 90). This plays every cell of every agent greedily, the untrained team or a run's checkpoint
 * (its adapters), and reports:
 *   - wrong cells per agent, by position bucket (1-6 pretrained, then doublings);
 *   - which cells are wrong across agents (x by k), and what the wrong reply is (the input passed on,
 *     off by one, other);
 *   - the per-step accuracy a chain would see (each cell weighted as held-out chains meet it: x
 *     uniform, k uniform) and the team accuracy it implies, p^N plus the luck floor (luck.ts).
 *
 * For: `npm run -s bench -- relay-cells --n 128 [--checkpoint RUN/checkpoint] [--agents 1,64,128]`,
 * markdown on stdout. Not for: sampled accuracy or the judge (bench/relay-positions.ts).
 *
 * Example: npm run -s bench -- relay-cells --n 32 --checkpoint /tmp/run/checkpoint
 *   | 1-6 | 6 | 540 | 12 | 97.8 % | ...
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describeBackend, initBackend } from '../src/core/engine/backend.ts';
import { loadModel } from '../src/core/engine/model/load.ts';
import { folderSource, memorySource } from '../src/core/engine/model/sources.ts';
import { importPeft } from '../src/core/engine/lora/peft.ts';
import type { LoraAdapter } from '../src/core/engine/lora/adapter.ts';
import { EngineAgents, type GenerationRequest } from '../src/core/loop/agents.ts';
import { relayWorkflow, relayDigit, relayAgentId } from '../src/core/domains/relay/team.ts';
import { relayStep, RELAY_MAX_AGENTS } from '../src/core/domains/relay/tasks.ts';
import { bucketOf, POSITION_BUCKETS } from './relay-positions.ts';

interface Options { n: number; checkpoint: string | null; agents: number[] | null; model: string; batch: number }

function parse(argv: string[]): Options {
  const o: Options = { n: 32, checkpoint: null, agents: null, model: 'models/relay', batch: 16 };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const v = argv[++i];
    if (v === undefined) throw new Error(`bench relay-cells: ${flag} needs a value`);
    if (flag === '--n') o.n = Number(v);
    else if (flag === '--checkpoint') o.checkpoint = v;
    else if (flag === '--agents') o.agents = v.split(',').map(Number);
    else if (flag === '--relay-model') o.model = v;
    else if (flag === '--batch') o.batch = Number(v);
    else throw new Error(`bench relay-cells: unknown option "${flag}". Options: --n N --checkpoint DIR --agents 1,2,3 --relay-model DIR`);
  }
  if (!Number.isInteger(o.n) || o.n < 1 || o.n > RELAY_MAX_AGENTS) throw new Error(`bench relay-cells: --n takes 1..${RELAY_MAX_AGENTS}, got ${o.n}`);
  return o;
}

async function loadAdapters(dir: string, config: Parameters<typeof importPeft>[1], ids: string[]): Promise<Map<string, LoraAdapter | null>> {
  const out = new Map<string, LoraAdapter | null>();
  for (const id of ids) {
    const folder = path.join(dir, 'adapters', id);
    const files: Record<string, Uint8Array> = {};
    for (const name of await readdir(folder)) files[name] = new Uint8Array(await readFile(path.join(folder, name)));
    out.set(id, await importPeft(memorySource(files, folder), config, id));
  }
  return out;
}

type Kind = 'right' | 'passed on' | 'off by one' | 'other' | 'no digit';

export async function main(argv: string[]): Promise<void> {
  const o = parse(argv);
  const info = await initBackend({ force: 'wasm' });
  const started = performance.now();
  const relay = await loadModel(folderSource(o.model), { tokenizer: 'required' });
  const workflow = relayWorkflow(o.n);
  const positions = o.agents ?? Array.from({ length: o.n }, (_, i) => i + 1);
  const ids = positions.map(relayAgentId);
  const adapters = o.checkpoint ? await loadAdapters(o.checkpoint, relay.config, ids) : new Map<string, LoraAdapter | null>();
  const agents = new EngineAgents(relay, adapters, o.batch);
  // kinds[position][x][k-1]
  const kinds = new Map<number, Kind[][]>();
  for (const p of positions) {
    const spec = workflow.agents[p - 1];
    // The loop renders these two at rollout time (workflow-repeat.ts keeps them in the expanded spec).
    const system = spec.system!.replaceAll('{{position}}', String(p)).replaceAll('{{count}}', String(o.n));
    const reqs: GenerationRequest[] = [];
    for (let x = 0; x <= 9; x++) for (let k = 1; k <= 9; k++) {
      reqs.push({ messages: [{ role: 'system', content: system }, { role: 'user', content: `${x} + ${k}` }], maxTokens: spec.maxTokens ?? 4, temperature: 0 });
    }
    const res = await agents.generate(relayAgentId(p), reqs, 1);
    const grid: Kind[][] = Array.from({ length: 10 }, () => []);
    res.forEach((r, i) => {
      const x = Math.floor(i / 9);
      const k = (i % 9) + 1;
      const d = relayDigit(r.text);
      const want = relayStep(x, k);
      grid[x][k - 1] = d === null ? 'no digit' : d === want ? 'right' : d === x ? 'passed on'
        : (d === relayStep(want, 1) || d === relayStep(want, -1)) ? 'off by one' : 'other';
    });
    kinds.set(p, grid);
  }
  const seconds = (performance.now() - started) / 1000;
  const wrongOf = (g: Kind[][]) => g.flat().filter((k) => k !== 'right').length;
  console.log(`# Greedy errors cell by cell: relay of ${o.n}, ${o.checkpoint ?? `${o.model}, untrained`}\n`);
  console.log(`\`npm run -s bench -- relay-cells ${argv.join(' ')}\`; ${describeBackend(info)}, 1 thread; ${positions.length} agents x 90 cells, ${seconds.toFixed(0)} s.\n`);
  console.log('| positions | agents | cells | wrong | greedy step accuracy (cells uniform) | agents with 0 wrong |');
  console.log('|---|---:|---:|---:|---:|---:|');
  let allWrong = 0;
  for (const [lo, hi] of POSITION_BUCKETS) {
    const ps = positions.filter((p) => p >= lo && p <= hi);
    if (!ps.length) continue;
    const w = ps.reduce((s, p) => s + wrongOf(kinds.get(p)!), 0);
    allWrong += w;
    console.log(`| ${bucketOf(lo)} | ${ps.length} | ${ps.length * 90} | ${w} | ${(100 * (1 - w / (ps.length * 90))).toFixed(2)} % | ${ps.filter((p) => wrongOf(kinds.get(p)!) === 0).length} |`);
  }
  const p = 1 - allWrong / (positions.length * 90);
  const lambda = (10 * p - 1) / 9;
  console.log(`\nAll: ${allWrong} wrong of ${positions.length * 90} cells, p = ${(100 * p).toFixed(2)} %; a chain of ${o.n} with every agent at p: `
    + `p^N = ${(100 * p ** o.n).toFixed(1)} %, with the luck floor 1/10 + 9/10 lambda^N = ${(100 * (0.1 + 0.9 * lambda ** o.n)).toFixed(1)} %.\n`);
  const byKind = new Map<Kind, number>();
  for (const g of kinds.values()) for (const k of g.flat()) if (k !== 'right') byKind.set(k, (byKind.get(k) ?? 0) + 1);
  console.log(`Wrong replies by kind: ${[...byKind].map(([k, c]) => `${k} ${c}`).join(', ') || 'none'}.\n`);
  console.log('Agents wrong in each cell (rows: the input digit x; columns: the number k):\n');
  console.log(`| x \\ k | ${Array.from({ length: 9 }, (_, i) => i + 1).join(' | ')} |`);
  console.log(`|---|${'---:|'.repeat(9)}`);
  for (let x = 0; x <= 9; x++) {
    const row = Array.from({ length: 9 }, (_, k) => [...kinds.values()].filter((g) => g[x][k] !== 'right').length);
    console.log(`| ${x} | ${row.join(' | ')} |`);
  }
  const worst = positions.map((q) => [q, wrongOf(kinds.get(q)!)] as const).sort((a, b) => b[1] - a[1]).slice(0, 8);
  console.log(`\nMost wrong agents: ${worst.map(([q, w]) => `agent${q} ${w}`).join(', ')}.`);
  relay.model.dispose();
}
