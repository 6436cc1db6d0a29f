/**
 * What the coach of a run is, in one line: what it reads, and how often it agrees with the rater (the
 * team's rubric): its within-agent ranking accuracy, measured, never assumed. A coach is only as useful
 * as that ranking: on the relay of 4 a coach ranking about 79 % of an agent's pairs as the rater does
 * already helped, and every judge ranking 50-61 % made the team worse than untrained (docs/judges.md).
 *
 * Where the figure comes from, in order:
 *   the rubric                    100 % by definition (it is the rater)
 *   a judge folder's report.json  `check.ranking` (the build script's check on held-out steps; read by the lab)
 *   MEASURED below                the shipped math/data judge, by the bench command named in each row
 *   anything else                 "not measured" (a WebLLM model, a folder without a report)
 * A miscalibrated coach (noise on its scores) is said to be so; its ranking is the table's where measured.
 *
 * For: lab.ts (sends a run's CoachQuality with the run) and the page (the coach line, the run's verdict).
 * Not for: measuring a judge (bench judge, bench judge-axis).
 *
 * Example: coachQuality('model:models/relay-judge', 'relay', null, { p: 0.998, low: 0.994, high: 1 }, 'models/relay-judge/report.json').line
 *   -> 'Coach: judge models/relay-judge (AI), reading each action in its context; it ranks 99.8 % [99.4, 100.0] of an agent's
 *       differently-rated actions as the rater (the team's rubric) does (models/relay-judge/report.json).'
 */
import type { Miscalibration } from '../coach/coach.ts';
import { wilson, type Interval } from '../stats/intervals.ts';

/** A coach ranking below this did not help on the relay of 4 (the lowest measured ranking that did: the rubric with noise σ = 8). */
export const HELPFUL_RANKING = 0.79;

/**
 * Rankings measured by the project's benchmarks for coaches whose folder carries no report (judge
 * folder + domain -> interval and the command that measured it).
 */
const MEASURED: Record<string, Interval & { source: string }> = {
  'models/judge:math': { p: 0.507, low: 0.477, high: 0.549, source: 'npm run -s bench -- judge --math-every 2; docs/judges.md' },
  'models/judge:data': { p: 0.730, low: 0.663, high: 0.806, source: 'npm run -s bench -- judge --math-every 2; docs/judges.md' },
};

/** The rubric with Gaussian noise σ on its scores, measured on the relay of 4 (npm run -s bench -- judge-axis --noise 2,4,8; docs/judges.md). */
const NOISY_RUBRIC: Record<number, Interval> = {
  2: { p: 1, low: 1, high: 1 },
  4: { p: 0.958, low: 0.946, high: 0.969 },
  8: { p: 0.790, low: 0.764, high: 0.823 },
};

export interface CoachQuality {
  /** 'rule' (the rubric), 'model' (a judge model), 'webllm' (a hosted chat model), from the coach's name. */
  kind: 'rule' | 'model' | 'webllm';
  /** The coach in words: "the rubric (the rater)", "judge models/relay-judge (AI)". */
  who: string;
  /** A judge model's folder as the page names it ("models/relay-judge"). */
  folder?: string;
  /** Its within-agent ranking accuracy against the rater, where measured. */
  ranking: Interval | null;
  /** Where the ranking comes from ("by definition", a report file, a bench command). */
  source: string;
  /** Whether it ranks below HELPFUL_RANKING (null: not measured). */
  weak: boolean | null;
  /** It is the rater itself (the rubric, unchanged). */
  isRater: boolean;
  /** The one line the page shows. */
  line: string;
  /** A judge's build, where its folder's report.json says it (judgeBuild): what it is and what it learnt from. */
  build?: JudgeBuild | null;
}

/**
 * What a judge's report.json says of its build (scripts/pretrain-relay-judge.ts writes it): its size, the
 * model it started from, the rated steps it was trained on, the coach template it reads ("team": the team's
 * own), and how many held-out steps its ranking (`check.ranking`) was measured on.
 */
export interface JudgeBuild {
  parameters: number | null;
  /** The model it was warm-started from ("models/relay"), if any: the first stage's start where it was built in stages. */
  from: string | null;
  /** Training examples: the team's steps, each rated by the rubric (summed over its stages). */
  examples: number | null;
  /** How many builds it went through, each continuing the last (report.json `lineage`); 1 when it records none. */
  stages: number;
  template: string | null;
  /** Held-out steps of the ranking check. */
  checkSteps: number | null;
}

/**
 * The build a judge's report.json records, or null when it records none of it. A judge built in stages, each
 * continuing the last (models/relay-judge: teams of 1..6 from models/relay, then twice on teams up to 128), lists
 * them in `lineage`; its start is then the first stage's and its examples the sum over the stages, e.g.
 * lineage [{ init: 'models/relay', examples: 24268 }, { init: 'stage 1', examples: 45082 }] -> from 'models/relay',
 * examples 69350, stages 2.
 */
export function judgeBuild(report: unknown): JudgeBuild | null {
  const r = report as {
    parameters?: unknown; examples?: unknown; flags?: { init?: unknown; template?: unknown }; check?: { steps?: unknown };
    lineage?: { init?: unknown; examples?: unknown }[];
  } | null;
  if (!r || typeof r !== 'object') return null;
  const num = (x: unknown) => (typeof x === 'number' && Number.isFinite(x) ? x : null);
  const str = (x: unknown) => (typeof x === 'string' && x ? x : null);
  const lineage = Array.isArray(r.lineage) && r.lineage.length > 0 ? r.lineage : null;
  const summed = lineage?.every((s) => num(s?.examples) !== null) ? lineage.reduce((a, s) => a + (s.examples as number), 0) : null;
  const found = {
    parameters: num(r.parameters), from: str(lineage ? lineage[0]?.init : r.flags?.init), examples: lineage ? summed : num(r.examples),
    template: str(r.flags?.template), checkSteps: num(r.check?.steps),
  };
  return Object.values(found).some((v) => v !== null) ? { ...found, stages: lineage?.length ?? 1 } : null;
}

const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
const span = (i: Interval) => `${pct(i.p)} [${(i.low * 100).toFixed(1)}, ${(i.high * 100).toFixed(1)}]`;

/** A judge folder as the page names it: the site's own folder, not its origin ("models/relay-judge"). */
export function judgeFolder(coachName: string): string {
  return coachName.replace(/^model:/, '').replace(/\+miscalibrated$/, '').replace(/^https?:\/\/[^/]+\//, '').replace(/^\.\//, '').replace(/\/$/, '');
}

/**
 * The `check.ranking` interval of a judge's report.json, or null. A bootstrap over steps cannot leave 100 %
 * when every step agreed ([100.0, 100.0] for 480 of 480): such an interval is replaced by Wilson's on the
 * report's held-out step count (480 of 480 -> [99.2, 100.0]).
 */
export function reportRanking(report: unknown): Interval | null {
  const check = (report as { check?: { ranking?: Partial<Interval>; steps?: unknown } } | null)?.check;
  const r = check?.ranking;
  if (!(r && typeof r.p === 'number' && typeof r.low === 'number' && typeof r.high === 'number')) return null;
  const steps = typeof check?.steps === 'number' && check.steps > 0 ? check.steps : null;
  if (r.high - r.low < 1e-9 && steps) return { ...wilson(Math.round(r.p * steps), steps), p: r.p };
  return { p: r.p, low: r.low, high: r.high };
}

/**
 * The coach of a run: `coachName` as the lab names it ("rule:relay", "model:models/relay-judge",
 * "webllm:…", with "+miscalibrated" when noise is added), its team's domain, its miscalibration, and the
 * ranking its folder's report gives (`reported`, from `reportFile`) when there is one.
 */
export function coachQuality(coachName: string, domain: string, miscalibration: Miscalibration | null, reported: Interval | null = null,
  reportFile = ''): CoachQuality {
  const kind = coachName.startsWith('model:') ? 'model' : coachName.startsWith('webllm') ? 'webllm' : 'rule';
  const noise = miscalibration?.noise ?? 0;
  const other = Boolean(miscalibration && (miscalibration.lengthBias || miscalibration.favourAgent));
  let who: string;
  let reads: string;
  let ranking: Interval | null = null;
  let source = '';
  if (kind === 'rule') {
    who = 'the rubric (the rater)';
    reads = 'checking each agent\'s own step against the task';
    ranking = { p: 1, low: 1, high: 1 };
    source = 'by definition: the judges are measured against it';
  } else if (kind === 'model') {
    const folder = judgeFolder(coachName);
    who = `judge ${folder} (AI)`;
    reads = 'reading each action in its context (the agent\'s input, its reply and tool output)';
    const table = MEASURED[`${folder}:${domain}`];
    if (reported) {
      ranking = reported;
      source = reportFile || `${folder}/report.json`;
    } else if (table) {
      ranking = table;
      source = table.source;
    }
  } else {
    who = `${coachName.replace(/\+miscalibrated$/, '').replace(/^webllm:/, 'WebLLM ')} (AI)`;
    reads = 'reading each action in its context';
  }
  // Noise on the scores: the measured ranking of the noisy rubric where there is one; otherwise unknown.
  if (noise > 0 || other) {
    const measured = kind === 'rule' && !other ? NOISY_RUBRIC[noise] : undefined;
    ranking = measured ?? null;
    source = measured ? `the rubric with noise σ = ${noise} on the relay of 4, npm run -s bench -- judge-axis (docs/judges.md)` : '';
    who += noise > 0 ? ` with noise σ = ${noise} on its scores` : ' with a bias on its scores';
  }
  const weak = ranking ? ranking.high < HELPFUL_RANKING || ranking.p < HELPFUL_RANKING : null;
  const agrees = ranking
    ? kind === 'rule' && !noise && !other
      ? 'it is the rater itself, the reference every judge is measured against (100 % by definition)'
      : `it ranks ${span(ranking)} of an agent's differently-rated actions as the rater (the team's rubric) does (${source})`
    : 'how often it agrees with the rater (the team\'s rubric) has not been measured';
  const caution = weak ? `; below about ${Math.round(HELPFUL_RANKING * 100)} %, a coach made the relay team worse than untrained (docs/judges.md)` : '';
  const isRater = kind === 'rule' && !noise && !other;
  return {
    kind, who, ...(kind === 'model' ? { folder: judgeFolder(coachName) } : {}), ranking, source, weak, isRater,
    line: `Coach: ${who}, ${reads}; ${agrees}${caution}.`,
  };
}
