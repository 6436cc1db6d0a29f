/**
 * `mappa train`'s flags for a coach in tiers (coach.tiers, src/core/coach/escalation.ts) and what the run
 * leaves of it: the flags become the config's coach.tiers (validated with every other setting), and
 * the tier-2 answers are written as <out>/corrections.jsonl (the JSONL `mappa judge teach --ratings` reads).
 *
 * For: src/cli/train.ts. Not for: the tiered coach itself (src/core/coach/tiered-coach.ts).
 * Example: tiersFlags({tiers: '0.2', 'tier-pick': 'random'}) -> {budget: 0.2, pick: 'random'}
 *          tiersFlags({'teach-every': '8'}) -> CliError '--teach-every: needs --tiers SHARE ...'
 */
import type { Coach } from '../core/coach/coach.ts';
import { formatRatings } from '../core/coach/corrections.ts';
import { TieredCoach } from '../core/coach/tiered-coach.ts';
import type { TierSettings } from '../core/coach/escalation.ts';
import type { Person } from '../core/coach/person-tier.ts';
import type { Cleanup } from './cleanup.ts';
import { CliError, parseIntFlag } from './common.ts';
import { checkPersonFlag, linePerson } from './person-io.ts';

export const TIER_OPTIONS = {
  tiers: { type: 'string' }, 'tier-pick': { type: 'string' }, 'tier-threshold': { type: 'string' }, 'teach-every': { type: 'string' },
  'tier-person': { type: 'string' }, 'tier-person-share': { type: 'string' }, 'tier-person-wait': { type: 'string' },
} as const;

/** The share a person is asked about when --tier-person gives none (at most the tier-2 budget). */
export const DEFAULT_PERSON_SHARE = 0.05;

export const TIERS_USAGE = `--tiers SHARE [--tier-pick P] [--tier-threshold S] [--teach-every K]: a coach in tiers (coach.tiers): the coach (--coach model: a judge) scores every action, the
team's rubric (standing in for a large hosted judge) this share of them, picked by --tier-pick (default
spread: those the judge is least sure of), only above --tier-threshold when given; the judge is taught on
the rubric's answers every --teach-every K of them (default 32, 0: never; no replay data is mixed in
from the command line). Each iteration's line says how many actions each tier scored; the answers are
written to <out>/corrections.jsonl (the format mappa judge teach --ratings reads). --tier-pick: spread,
random or first-wrong (the first wrong step of each failed chain).
--tier-person FILE|- [--tier-person-share S] [--tier-person-wait SECONDS]: tier 3, a person (coach.tiers.person):
of the actions the rubric scored, the share S (default 0.05, at most --tiers) where the judge and the
rubric disagree most are asked as questions (JSON lines in <out>/questions.jsonl, and on stdout with -);
the answers are read from FILE as it grows, or from stdin (-): {"id": "3-5", "score": 0..10},
{"id": "3-5", "skip": true} or "3-5 7", one a line. The run waits at most SECONDS (default 120) an
iteration; a question still open then (or at stdin's end) is unanswered and the rubric's score stands.\n`;

/** coach.tiers from the flags (--tiers and the ones that shape it), or undefined when none is given. */
export function tiersFlags(o: {
  tiers?: string; 'tier-pick'?: string; 'tier-threshold'?: string; 'teach-every'?: string; 'tier-person'?: string; 'tier-person-share'?: string;
  'tier-person-wait'?: string;
}): Record<string, unknown> | undefined {
  if (o['tier-person'] === undefined) {
    const stray = (['tier-person-share', 'tier-person-wait'] as const).find((k) => o[k] !== undefined);
    if (stray) throw new CliError(`--${stray}: needs --tier-person FILE or - (where the person's answers come from)`);
  }
  if (o.tiers === undefined) {
    const stray = (['tier-pick', 'tier-threshold', 'teach-every', 'tier-person'] as const).find((k) => o[k] !== undefined);
    if (stray) throw new CliError(`--${stray}: needs --tiers SHARE (the share of actions the rubric scores), e.g. --tiers 0.2`);
    return undefined;
  }
  return {
    budget: Number(o.tiers),
    ...(o['tier-pick'] !== undefined ? { pick: o['tier-pick'] } : {}),
    ...(o['tier-threshold'] !== undefined ? { threshold: Number(o['tier-threshold']) } : {}),
    ...(o['teach-every'] !== undefined ? { teachEvery: parseIntFlag(o['teach-every'], '--teach-every', 0) } : {}),
    ...(o['tier-person'] !== undefined ? {
      person: o['tier-person-share'] !== undefined ? Number(o['tier-person-share']) : Math.min(DEFAULT_PERSON_SHARE, Number(o.tiers)),
    } : {}),
    ...(o['tier-person-wait'] !== undefined ? { personWait: parseIntFlag(o['tier-person-wait'], '--tier-person-wait', 1) } : {}),
  };
}
/** A tiered coach's tier-2 answers as <out>/corrections.jsonl; nothing for a run with one coach. */
export async function writeCorrections(coach: Coach, store: { writeFile(name: string, data: string): Promise<void> }): Promise<void> {
  if (coach instanceof TieredCoach) await store.writeFile('corrections.jsonl', formatRatings(coach.corrections));
}

/** Before any work: --tier-person names stdin or a file that exists, and a config asking a person (coach.tiers.person > 0) has one; the config back. */
export function checkTierPerson<C extends { coach: { tiers: TierSettings | null } }>(flag: string | undefined, config: C): C {
  const tiers = config.coach.tiers;
  if (flag !== undefined) checkPersonFlag(flag);
  else if ((tiers?.person ?? 0) > 0) {
    throw new CliError(`coach.tiers.person: ${tiers!.person} asks a person; give --tier-person FILE or - (stdin) for the answers, or set it to 0`);
  }
  return config;
}

/** Tier 3's answers for the run (src/cli/person-io.ts), closed with the run; none without --tier-person. */
export function tierPerson(flag: string | undefined, out: string, cleanup: Cleanup): Person | undefined {
  if (flag === undefined) return undefined;
  const person = linePerson(flag, out, (line) => process.stderr.write(`${line}\n`));
  cleanup.add(() => person.close());
  return person;
}
