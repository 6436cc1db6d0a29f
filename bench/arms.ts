/**
 * Finished training runs compared as arms: each arm is one setting (a coach, a reward mode) run over
 * the same seeds; every pair of arms gets its final held-out accuracy difference, paired problem by
 * problem (Newcombe) per seed and pooled over the seeds, greedy and at the evaluation temperature.
 *
 * For: comparisons with more than the two reward modes of `bench rollouts`, such as judge-coached
 * process vs rule-coached process vs outcome reward. It reads runs that
 * `bench rollouts` or `mappa train` wrote; it trains nothing.
 * Not for: rollouts to a target across modes (bench rollouts and `mappa compare` report those).
 *
 * Example: npm run -s bench -- arms --seeds 0,1,2 --arm judge=runs/cj/math-judge/process
 *            --arm rule=runs/cj/math-rule/process --arm outcome=runs/cj/math-rule/outcome
 *   reads runs/cj/math-judge/process-seed0 .. -seed2 and the others, and prints
 *   | judge - outcome | seed 0 (200 problems) | 28.0 % | 29.5 % | -1.5 pts [-5.2, +2.2] | ... |
 */
import path from 'node:path';
import { alignPerTask, readRun, summarizeRun, type RunSummary, type TargetMetric } from '../src/cli/compare.ts';
import { formatPercent, formatPoints, pairedDifference, wilson } from '../src/core/stats/intervals.ts';

type PerTask = NonNullable<NonNullable<RunSummary['final']>['perTask']>;
type Pairs = Record<TargetMetric, [boolean[], boolean[]]>;
const METRICS: TargetMetric[] = ['greedy', 'sampled'];

/**
 * Two arms' final per-problem results aligned by problem id, seed by seed (null where a seed lacks
 * either arm's results on the same problems), and every seed's pairs pooled.
 * Example: seed 0 A [T, F] B [F, F] on problems a, b; seed 1 missing -> perSeed [{greedy: [[T, F], [F, F]], ...}, null].
 */
export function pairSeeds(a: (PerTask | undefined)[], b: (PerTask | undefined)[]): { perSeed: (Pairs | null)[]; pooled: Pairs } {
  const pooled: Pairs = { greedy: [[], []], sampled: [[], []] };
  const perSeed = a.map((p, s) => {
    const q = b[s];
    const al = p && q ? METRICS.map((m) => alignPerTask(p, q, m)) : [null, null];
    if (!al[0] || !al[1]) return null;
    const pairs = { greedy: al[0], sampled: al[1] } as Pairs;
    for (const m of METRICS) {
      pooled[m][0].push(...pairs[m][0]);
      pooled[m][1].push(...pairs[m][1]);
    }
    return pairs;
  });
  return { perSeed, pooled };
}

/** "A % | B % | A - B pts [low, high]" for one metric's pairs. */
export function pairCells(a: boolean[], b: boolean[]): string {
  return `${pct(a)} | ${pct(b)} | ${formatPoints(pairedDifference(a, b))}`;
}

interface Arm {
  label: string;
  /** Folder prefix: the run of seed S is `${prefix}-seed${S}`. */
  prefix: string;
}

export interface ArmsOptions {
  arms: Arm[];
  seeds: number[];
}

/** Parses `--arm LABEL=PREFIX` (twice or more) and `--seeds 0,1,2`. */
export function parseArmsArgs(argv: string[]): ArmsOptions {
  const o: ArmsOptions = { arms: [], seeds: [0, 1, 2] };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const v = argv[i + 1];
    if (v === undefined || v.startsWith('--')) throw new Error(`bench arms: ${flag} needs a value`);
    i++;
    if (flag === '--arm') {
      const at = v.indexOf('=');
      if (at <= 0 || at === v.length - 1) throw new Error(`bench arms: --arm takes LABEL=FOLDER_PREFIX (runs are PREFIX-seedS), got "${v}"`);
      o.arms.push({ label: v.slice(0, at), prefix: v.slice(at + 1) });
    } else if (flag === '--seeds') {
      o.seeds = v.split(',').map((s) => {
        const n = Number(s);
        if (!Number.isInteger(n) || n < 0) throw new Error(`bench arms: --seeds takes whole numbers like 0,1,2, got "${v}"`);
        return n;
      });
    } else throw new Error(`bench arms: unknown option "${flag}". Options: --arm LABEL=PREFIX (two or more) --seeds 0,1,2`);
  }
  if (o.arms.length < 2) throw new Error('bench arms: give at least two --arm LABEL=PREFIX');
  return o;
}

const pct = (xs: boolean[]) => `${((100 * xs.filter(Boolean).length) / xs.length).toFixed(1)} %`;

/** The report: each arm's pooled final accuracies with Wilson intervals, then every pair's paired differences. */
export function armsReport(arms: { label: string; runs: (RunSummary | null)[] }[], seeds: number[]): string[] {
  const out = ['| arm | runs | final greedy, pooled [95 %] | final sampled, pooled [95 %] |', '|---|---:|---|---|'];
  for (const a of arms) {
    const cells = METRICS.map((m) => {
      const all = a.runs.flatMap((r) => (r?.final?.perTask ? r.final.perTask[m] : []));
      if (!all.length) return 'n/a';
      return `${formatPercent(wilson(all.filter(Boolean).length, all.length))} of ${all.length}`;
    });
    out.push(`| ${a.label} | ${a.runs.filter(Boolean).length} | ${cells.join(' | ')} |`);
  }
  out.push('', 'Final accuracy differences, paired problem by problem (95 % Newcombe interval), per seed and pooled:', '',
    '| pair | runs | greedy A | greedy B | greedy A - B | sampled A | sampled B | sampled A - B |', '|---|---|---:|---:|---|---:|---:|---|');
  for (let i = 0; i < arms.length; i++) {
    for (let j = i + 1; j < arms.length; j++) {
      const name = `${arms[i].label} - ${arms[j].label}`;
      const tasks = (k: number) => arms[k].runs.map((r) => r?.final?.perTask);
      const { perSeed, pooled } = pairSeeds(tasks(i), tasks(j));
      perSeed.forEach((p, s) => out.push(p
        ? `| ${name} | seed ${seeds[s]} (${p.greedy[0].length} problems) | ${METRICS.map((m) => pairCells(...p[m])).join(' | ')} |`
        : `| ${name} | seed ${seeds[s]}: no paired finals | | | | | | |`));
      if (pooled.greedy[0].length) out.push(`| ${name} | seeds pooled (${pooled.greedy[0].length} pairs) | ${METRICS.map((m) => pairCells(...pooled[m])).join(' | ')} |`);
    }
  }
  return out;
}

export async function main(argv: string[]): Promise<void> {
  const o = parseArmsArgs(argv);
  const arms = await Promise.all(o.arms.map(async (a) => ({
    label: a.label,
    runs: await Promise.all(o.seeds.map(async (s) => {
      const dir = `${a.prefix}-seed${s}`;
      try {
        return summarizeRun(await readRun(dir, path.basename(dir)));
      } catch (e) {
        console.error(`[bench arms] ${a.label}, seed ${s}: ${(e as Error).message}; left out`);
        return null;
      }
    })),
  })));
  const empty = arms.find((a) => a.runs.every((r) => r === null));
  if (empty) throw new Error(`bench arms: arm "${empty.label}" has no finished run (looked for ${o.arms.find((a) => a.label === empty.label)!.prefix}-seed{${o.seeds.join(',')}}); pass folder prefixes that bench rollouts or mappa train wrote`);
  console.log([`<!-- npm run -s bench -- arms --seeds ${o.seeds.join(',')} ${o.arms.map((a) => `--arm ${a.label}=${a.prefix}`).join(' ')} -->`,
    ...armsReport(arms, o.seeds)].join('\n'));
}
