/**
 * What a run used, by content: each model that took part (the agents' model, the judge) by its path
 * and a sha256 over its files, and the coach template's sha256. A config says what the user asked
 * ("coach.model": "team"); this record says what that meant on the day, so that a rebuilt
 * models/relay-judge is noticed before a resumed run goes on with a different coach.
 *
 * For: the checkpoint (`used.json` beside state.json, written by session.ts), summary.json (the CLI)
 * and `--resume` / the page's stored runs (`usedChange` says what changed). Not for: loading models.
 *
 * Example: const used = await runUsed({ agents: folderSource('models/relay'), judge: folderSource('models/relay-judge'),
 *                                       template: { name: 'team', text: RELAY_COACH_TEMPLATE } });
 *          -> { models: [{ role: 'agents', path: 'models/relay', sha256: '3f…' }, { role: 'judge', path: 'models/relay-judge', sha256: '9c…' }],
 *               coachTemplate: { name: 'team', sha256: '51…' } }
 *          usedChange(saved, used) -> 'the judge models/relay-judge (sha256 9c0a1b2c then, 77d1e0f3 now)' or null
 */
import { readAllBytes, type ModelSource } from '../engine/model/source.ts';
import { coachTemplateOf, judgeSpec, templateName, type CoachingTeam, type CoachSettings } from '../coach/coaches.ts';
import { jsonWhere } from './checkpoint.ts';

export interface ModelUsed {
  /** 'agents' (the team's model) or 'judge' (the coach's model). */
  role: 'agents' | 'judge';
  /** The folder or URL it was read from. */
  path: string;
  /** sha256 over its files (modelHash). */
  sha256: string;
}

export interface RunUsed {
  models: ModelUsed[];
  /** The template a judge read ("team", "generic" or "custom") and its text's sha256; absent with a rubric coach. */
  coachTemplate?: { name: string; sha256: string };
}

/** The files of a model folder that decide what it computes, in this order, where present. */
const MODEL_FILES = [
  'config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json', 'special_tokens_map.json',
  'model.safetensors', 'model.safetensors.index.json',
];

async function sha256(data: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', data as Uint8Array<ArrayBuffer>);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

const utf8 = (s: string) => new TextEncoder().encode(s);

/** The sha256 of a text (a coach template). */
const textHash = (text: string) => sha256(utf8(text));

/**
 * sha256 over a model's files: for each file present (config, tokenizer, weights, and every shard an
 * index names), its name, its length and its sha256, one line each; then the sha256 of those lines.
 * Example: modelHash(folderSource('models/relay-judge')) -> '9c0a1b2c…' (64 hex digits)
 */
export async function modelHash(source: ModelSource): Promise<string> {
  const files: string[] = [];
  for (const f of MODEL_FILES) if (await source.has(f)) files.push(f);
  if (files.includes('model.safetensors.index.json')) {
    const index = await source.readJson<{ weight_map?: Record<string, string> }>('model.safetensors.index.json');
    files.push(...[...new Set(Object.values(index.weight_map ?? {}))].sort());
  }
  const lines: string[] = [];
  for (const f of files) {
    const all = await readAllBytes(source, f);
    lines.push(`${f} ${all.length} ${await sha256(all)}`);
  }
  return sha256(utf8(lines.join('\n')));
}

/** The record of what a run uses: its models hashed, and the judge's template when it has a judge. */
export async function runUsed(parts: { agents: ModelSource; judge?: ModelSource | null; template?: { name: string; text: string } | null }):
  Promise<RunUsed> {
  const models: ModelUsed[] = [{ role: 'agents', path: parts.agents.name, sha256: await modelHash(parts.agents) }];
  if (parts.judge) models.push({ role: 'judge', path: parts.judge.name, sha256: await modelHash(parts.judge) });
  const used: RunUsed = { models };
  if (parts.judge && parts.template) used.coachTemplate = { name: parts.template.name, sha256: await textHash(parts.template.text) };
  return used;
}

/**
 * What a run of these settings uses: the agents' model as loaded, and the judge and its template that
 * `coach` names for `team` (none with a rubric coach, or where `sourceOf` gives none, e.g. a WebLLM coach).
 * Example: usedBy({ coach: config.coach }, team, loaded.source, (spec) => folderSource(spec))
 */
export function usedBy(c: { coach: CoachSettings }, team: CoachingTeam, agents: ModelSource, sourceOf: (spec: string) => ModelSource | null):
  Promise<RunUsed> {
  const judge = c.coach.kind === 'model' ? sourceOf(judgeSpec(c.coach, team)) : null;
  return runUsed({ agents, judge, template: { name: templateName(c.coach, team), text: coachTemplateOf(c.coach, team) } });
}

const short = (hash: string) => hash.slice(0, 8);
const roleWords = (m: ModelUsed) => (m.role === 'agents' ? `the agents' model ${m.path}` : `the judge ${m.path}`);

/**
 * What changed between the record a run was checkpointed with and what it would use now, in words,
 * or null when nothing did (a record from before `used.json` existed counts as unchanged).
 * Example: usedChange(saved, now) -> 'the judge models/relay-judge changed (sha256 9c0a1b2c then, 77d1e0f3 now)'
 */
export function usedChange(saved: RunUsed | null | undefined, now: RunUsed): string | null {
  if (!saved) return null;
  for (const m of now.models) {
    const was = saved.models.find((s) => s.role === m.role);
    if (!was) return `${roleWords(m)} took no part before (the run had no ${m.role === 'judge' ? 'judge' : 'such model'})`;
    if (was.sha256 !== m.sha256) {
      const where = was.path === m.path ? '' : ` (it was ${was.path})`;
      return `${roleWords(m)} changed${where} (sha256 ${short(was.sha256)} then, ${short(m.sha256)} now)`;
    }
  }
  const gone = saved.models.find((s) => !now.models.some((m) => m.role === s.role));
  if (gone) return `${roleWords(gone)} took part before and does not now`;
  if (saved.coachTemplate && now.coachTemplate && saved.coachTemplate.sha256 !== now.coachTemplate.sha256) {
    return `the coach template changed (${saved.coachTemplate.name}, sha256 ${short(saved.coachTemplate.sha256)} then; `
      + `${now.coachTemplate.name}, ${short(now.coachTemplate.sha256)} now)`;
  }
  return null;
}

/** Reads a checkpoint's used.json; null when the checkpoint predates it. Throws naming `file` when it is not JSON. */
export function parseUsed(bytes: Uint8Array | undefined, file: string): RunUsed | null {
  if (!bytes) return null;
  const text = new TextDecoder().decode(bytes);
  try {
    return JSON.parse(text) as RunUsed;
  } catch (e) {
    throw new Error(`${file} is not valid JSON (${jsonWhere(e as Error)})`);
  }
}
