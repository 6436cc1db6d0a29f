/**
 * Relay tasks: a chained computation cut into one checkable step per agent, for the experiment where
 * credit assignment is the bottleneck (the relay team, team.ts).
 *
 * A task is a start digit and N numbers to add, one per agent, keeping only the last digit after each
 * addition (arithmetic modulo 10: a 10-position dial). Agent 1 gets "3 + 4", replies "7"; agent 2
 * gets "7 + 5" (whatever agent 1 replied, then its own number), replies "2"; and so on. The team's
 * answer is the last agent's digit. Each step can be checked on its own, given the input the agent
 * received (team.ts's rule coach), which is what process reward needs. The outcome is right when every
 * step is, and also when the wrong steps' errors add up to 0 on the dial (a 3 too many, then a 3 too
 * few): a long chain with wrong steps still ends right about 1 time in 10 (luck.ts, the luck floor).
 *
 * For: `relayTasks(n, seed, count)` (training), `relayHeldOut(n)` (a fixed set of 200 per team size,
 * never drawn for training). Not for: prompts or scoring (team.ts).
 *
 * Example: relayTasks(2, 0, 1)[0] -> {id: 'relay2:…', problem: 'Start at 3. Add 4, then 5, keeping only
 *          the last digit each time.', answer: '2', parts: ['3 + 4', '+ 5'], start: 3, adds: [4, 5]}
 */
import type { RolloutTask } from '../../loop/trajectory.ts';
import { Rng } from '../../stats/rng.ts';

export interface RelayTask extends RolloutTask {
  /** What each agent is given besides its predecessor's answer: agent 1 "3 + 4", the others "+ 5". */
  parts: string[];
  start: number;
  /** The number each agent adds (1..9, so passing the input on unchanged is always wrong). */
  adds: number[];
}

export const RELAY_MIN_AGENTS = 1;
/** The largest relay team (issue: a hundred agents in one tab). Any size 1..128 has its 200 held-out tasks. */
export const RELAY_MAX_AGENTS = 128;
/**
 * The team sizes the shipped relay models saw in pretraining (scripts/pretrain-relay.ts and
 * scripts/pretrain-relay-judge.ts draw teams of 1..6); a larger team asks them for positions they
 * never saw ("Relay agent 57 of 128"), measured by `npm run -s bench -- relay-positions`.
 */
export const RELAY_PRETRAINED_AGENTS = 6;
/** The sizes with a shipped config (configs/relay-<n>.json): every pretrained size, then doublings to the largest. */
export const RELAY_CONFIG_SIZES = [1, 2, 3, 4, 5, 6, 8, 16, 32, 64, 128];
const RELAY_HELD_OUT = 200;

/** The digit after adding `k` to `x` on the 10-position dial. Example: relayStep(7, 5) -> 2. */
export function relayStep(x: number, k: number): number {
  return (((x + k) % 10) + 10) % 10;
}

function signature(start: number, adds: number[]): string {
  return `${start}:${adds.join(',')}`;
}

function makeTask(n: number, start: number, adds: number[], tag: string): RelayTask {
  const answer = adds.reduce(relayStep, start);
  const list = adds.length === 1 ? `${adds[0]}` : `${adds.slice(0, -1).join(', ')}, then ${adds[adds.length - 1]}`;
  return {
    id: `relay${n}:${tag}:${signature(start, adds)}`,
    problem: `Start at ${start}. Add ${list}, keeping only the last digit each time.`,
    answer: String(answer),
    parts: adds.map((k, i) => (i === 0 ? `${start} + ${k}` : `+ ${k}`)),
    start,
    adds,
  };
}

function checkSize(n: number): void {
  if (!Number.isInteger(n) || n < RELAY_MIN_AGENTS || n > RELAY_MAX_AGENTS) {
    throw new RangeError(`relay team: ${n} agents asked for; use ${RELAY_MIN_AGENTS}..${RELAY_MAX_AGENTS}`);
  }
}

function draw(rng: Rng, n: number): { start: number; adds: number[] } {
  return { start: rng.int(0, 9), adds: Array.from({ length: n }, () => rng.int(1, 9)) };
}

const heldOutCache = new Map<number, RelayTask[]>();

/** The fixed held-out set for a team of `n`: 200 distinct tasks (all of them when fewer exist). */
export function relayHeldOut(n: number): RelayTask[] {
  checkSize(n);
  let tasks = heldOutCache.get(n);
  if (!tasks) {
    const rng = new Rng(`relay-heldout-v1:${n}`);
    const total = 10 * 9 ** n;
    const seen = new Set<string>();
    tasks = [];
    while (tasks.length < Math.min(RELAY_HELD_OUT, Math.floor(total / 4))) {
      const { start, adds } = draw(rng, n);
      const sig = signature(start, adds);
      if (seen.has(sig)) continue;
      seen.add(sig);
      tasks.push(makeTask(n, start, adds, 'heldout'));
    }
    heldOutCache.set(n, tasks);
  }
  return tasks;
}

/**
 * `count` distinct seeded training tasks for a team of `n`, none of them in the held-out set (fewer
 * when the team is so small that fewer exist: 68 for one agent).
 */
export function relayTasks(n: number, seed: number | string, count: number): RelayTask[] {
  checkSize(n);
  const seen = new Set(relayHeldOut(n).map((t) => signature(t.start, t.adds)));
  const available = 10 * 9 ** n - seen.size;
  const rng = new Rng(`relay-train:${n}:${seed}`);
  const out: RelayTask[] = [];
  while (out.length < Math.min(count, available)) {
    const { start, adds } = draw(rng, n);
    const sig = signature(start, adds);
    if (seen.has(sig)) continue;
    seen.add(sig);
    out.push(makeTask(n, start, adds, 'train'));
  }
  return out;
}
