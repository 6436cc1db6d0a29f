/**
 * Which judges the coach menus offer for a run's settings: the judge its line began with (a folder such as
 * models/relay-judge) and every version taught from that line in this browser (judge-desk.ts stores them as
 * `taught:<name>-<12 hex of the sha-256 of their weights>`, the spec coach.model takes and a run's config.json
 * and used.json record). A version of another line, or of another team, is not offered; with no taught
 * version, nothing is offered beyond the judge itself.
 *
 * For: the Settings drawer's coach menu and the corrections panel's "Coach with" (src/ui); headless, no DOM.
 * Not for: teaching (judge-desk.ts) or loading a taught judge (judge-desk.ts taughtSource).
 *
 * Example: const c = resolveTrainConfig({ ...relayConfig(4), coach: { kind: 'model', model: 'models/relay-judge-weak' } });
 *          coachChoices(c, [{ spec: 'taught:relay-judge-weak-8f90966516a0', parent: 'models/relay-judge-weak', team: 'relay', … }])
 *          -> { root: 'models/relay-judge-weak', current: 'models/relay-judge-weak',
 *               taught: [{ spec: 'taught:relay-judge-weak-8f90966516a0', label: 'taught:relay-judge-weak-8f90966516a0', … }] }
 */
import { judgeSpec } from '../core/coach/coaches.ts';
import type { JudgeVersion } from '../core/coach/correction-book.ts';
import { teamOf } from '../core/domains/index.ts';
import type { TrainConfig } from '../core/loop/config.ts';

/** One taught version as a menu offers it. */
export interface TaughtChoice {
  spec: string;
  /** The option's words: the spec alone, which carries its weights' hash (as the run's config.json and used.json name it); it fits the 19rem column. */
  label: string;
  /** The option's tooltip: its full sha-256, parent and measured ranking before and after. */
  title: string;
  version: JudgeVersion;
}

export interface CoachChoices {
  /** The judge the line began with (never a taught one): what "judge model (AI)" names. Null: the team has no judge. */
  root: string | null;
  /** The judge the settings name now (a taught spec or a folder). Null: the team has no judge. */
  current: string | null;
  /** The versions taught from the root's line, oldest first; empty when none is stored. */
  taught: TaughtChoice[];
}

/** A judge spec without its site's origin ("https://host/models/relay-judge" -> "models/relay-judge", "./x" -> "x"). */
export const shortSpec = (spec: string): string => spec.replace(/^https?:\/\/[^/]+\//, '').replace(/^\.\//, '');

/**
 * The first judge of `spec`'s line: its parents followed back to one that was not taught here. A taught spec
 * this store does not know (taught in another browser) is its own root.
 * Example: lineRoot('taught:j-bbbbbbbbbbbb', [{ spec: 'taught:j-bbbbbbbbbbbb', parent: 'taught:j-aaaaaaaaaaaa' },
 *                                            { spec: 'taught:j-aaaaaaaaaaaa', parent: 'models/j' }])
 *          -> 'models/j'
 */
export function lineRoot(spec: string, versions: readonly Pick<JudgeVersion, 'spec' | 'parent'>[]): string {
  let at = spec;
  for (let hops = 0; at.startsWith('taught:') && hops <= versions.length; hops++) {
    const v = versions.find((x) => x.spec === at);
    if (!v) break;
    at = v.parent;
  }
  return at;
}

const ranking = (r: JudgeVersion['before']['ranking']) => (r ? `${r.percent.toFixed(1)} % [${r.low.toFixed(1)}, ${r.high.toFixed(1)}]` : 'not measured');

/** The judges a coach menu offers for `config` (see the file's note); `versions` as the desk stores them (any team). */
export function coachChoices(config: Pick<TrainConfig, 'coach' | 'workflow'>, versions: readonly JudgeVersion[]): CoachChoices {
  let current: string;
  try {
    current = judgeSpec(config.coach, teamOf(config.workflow));
  } catch {
    return { root: null, current: null, taught: [] }; // the team has no judge of its own and none is named
  }
  const mine = versions.filter((v) => v.team === config.workflow.domain);
  const root = lineRoot(current, mine);
  const taught = mine.filter((v) => lineRoot(v.spec, mine) === root).map((v) => ({
    spec: v.spec,
    label: v.spec,
    title: `taught in this browser from ${shortSpec(v.parent)} on ${v.corrections} correction${v.corrections === 1 ? '' : 's'}; `
      + `sha-256 of its weights ${v.hash}; ranking against the rater on the batch it was taught on `
      + `${ranking(v.before.ranking)} before, ${ranking(v.after.ranking)} after`,
    version: v,
  }));
  return { root, current, taught };
}
