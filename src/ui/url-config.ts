/**
 * The experiment in the URL (TensorFlow Playground style), short at any team size: `?team=` names the
 * team (a menu preset, `?team=data-team`, or a sized team with its size, `?team=relay&agents=128`),
 * `?config=<json>` holds only what differs from that named configuration (the team's own settings are
 * left out: resolveTrainConfig applies them), `?backend=webgpu|wasm|cpu` forces a backend,
 * `?limits=default` asks the GPU for WebGPU's default limits (128 MiB bindings: what the most limited
 * browser GPU gives; see backend.ts) and
 * `?coach=webllm:<model id>` picks a WebLLM coach. Opening the same link opens the same run (its
 * id is derived from the whole resolved config), so a link reproduces an experiment.
 *
 * For: reading the URL at start-up (a part it cannot read is named in `error`, never dropped in
 * silence) and rewriting it (replaceState) as settings change.
 * Not for: validation (the worker resolves and validates the config as the CLI does).
 * An older link with the whole workflow in ?config= still loads (its workflow is used when ?team= is absent). What
 * differs is written deflated (`?configz=`, base64url) when its JSON is longer than LONG_CONFIG: an edited relay of
 * 128 is then about 1 KB, not 44 KB (a server answers HTTP 431 to a request line past about 16 KB).
 * Example: ?config={"seed":3,"rewards":{"mode":"outcome"}}  ->  {seed: 3, rewards: {mode: 'outcome'}}
 *          ?team=relay&agents=128&config={"seed":3}  ->  {seed: 3, workflow: <relay of 128>}
 *          urlFor(href, {config: relayConfig(128)}) -> '...?team=relay&agents=128' (a few words, not 44 KB)
 *          setPath({}, 'rewards.mode', 'outcome') -> {rewards: {mode: 'outcome'}}
 */
import type { BackendName, WebGPULimits } from '../core/engine/backend.ts';
import { fieldSpec } from '../core/loop/config-fields.ts';
import { namedWorkflow, withoutTeamSettings, workflowName } from '../core/domains/index.ts';
import { deflateSync, inflateSync, strFromU8, strToU8 } from 'fflate';

export type Patch = Record<string, unknown>;

export interface UrlState {
  backend?: BackendName;
  /** ?limits=default: the WebGPU device gets the default limits instead of the adapter's best. */
  webgpuLimits?: WebGPULimits;
  config: Patch;
  webllm?: string;
  /** ?run=<id>: a run this browser holds (a dataset run: its problems are not in the link). */
  run?: string;
  /** ?baseline=0 skips the untrained team's evaluation (it is slow on software WebGPU). */
  baseline?: boolean;
  /** What in the link could not be read (each part named, joined by ' · '); the page says so and uses the defaults for those parts. */
  error?: string;
}

export function readUrl(href: string): UrlState {
  const q = new URL(href).searchParams;
  const out: UrlState = { config: {} };
  const problems: string[] = [];
  const b = q.get('backend');
  if (b === 'webgpu' || b === 'wasm' || b === 'cpu') out.backend = b;
  else if (b !== null) problems.push(`the link's ?backend=${b} is not a backend (webgpu, wasm or cpu); using the best this browser has`);
  const baseline = q.get('baseline');
  if (baseline === '0') out.baseline = false;
  else if (baseline !== null && baseline !== '1') problems.push(`the link's ?baseline=${baseline} is neither 0 nor 1; the untrained team is measured`);
  const limits = q.get('limits');
  if (limits === 'default') out.webgpuLimits = 'default';
  else if (limits !== null) problems.push(`the link's ?limits=${limits} is not "default"; the GPU's own limits are used`);
  const coach = q.get('coach');
  if (coach?.startsWith('webllm:') && coach.length > 'webllm:'.length) out.webllm = coach.slice('webllm:'.length);
  else if (coach !== null) problems.push(`the link's ?coach=${coach} is not "webllm:<model id>"; the configuration's coach scores`);
  const run = q.get('run');
  if (run) out.run = run;
  const packed = q.get('configz');
  let raw = q.get('config');
  if (packed !== null && raw === null) {
    try {
      raw = unpack(packed);
    } catch (e) {
      problems.push(`the link's ?configz= could not be unpacked (${(e as Error).message}); using the default configuration`);
    }
  }
  if (raw !== null) {
    try {
      const parsed = JSON.parse(raw);
      if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('expected a JSON object');
      out.config = parsed as Patch;
    } catch (e) {
      problems.push(
        `the link's ?config= is not a JSON object (${(e as Error).message}); ` +
          'using the default configuration — fix the link, or change a setting to replace it',
      );
    }
  }
  const team = q.get('team');
  const agentsRaw = q.get('agents');
  if (team !== null) {
    const agents = agentsRaw === null ? undefined : Number(agentsRaw);
    const w = namedWorkflow(team, agents);
    if (typeof w === 'string') problems.push(`the link's ?team=${team}${agentsRaw === null ? '' : `&agents=${agentsRaw}`} names no team: ${w}; using the default team`);
    else out.config = { ...out.config, workflow: w };
  } else if (agentsRaw !== null) {
    problems.push(`the link's ?agents=${agentsRaw} names no team: it goes with ?team=, e.g. ?team=relay&agents=${agentsRaw}`);
  }
  // A parameter this page does not read is named, never dropped in silence: ?seed=3 is not ?config={"seed":3}.
  for (const [key, value] of q) {
    if (KNOWN.has(key)) continue;
    const field = fieldSpec(key);
    problems.push(field
      ? `the link's ?${key}=${value} is refused: a setting goes in ?config=, e.g. ?config={"${key}":${JSON.stringify(example(field, value))}}, `
        + `or in Settings → ${field.label}; using the default ${field.label}`
      : `the link's ?${key}=${value} is not a parameter of this page (it reads ${[...KNOWN].map((k) => `?${k}=`).join(', ')}); it was ignored`);
  }
  if (problems.length) out.error = problems.join(' · ');
  return out;
}

/** The query parameters the page reads. */
const KNOWN = new Set(['team', 'agents', 'config', 'configz', 'backend', 'baseline', 'limits', 'coach', 'run']);

/** A ?config= JSON longer than this is written deflated (?configz=). */
export const LONG_CONFIG = 1500;

/** JSON text deflated, as base64url. */
function pack(json: string): string {
  let bin = '';
  for (const b of deflateSync(strToU8(json), { level: 9 })) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** pack's inverse. */
function unpack(text: string): string {
  const bin = atob(text.replace(/-/g, '+').replace(/_/g, '/'));
  return strFromU8(inflateSync(Uint8Array.from(bin, (c) => c.charCodeAt(0))));
}

/** The value a ?config= example shows for setting `f`: the link's own when it is one the setting can take, else one that is. */
function example(f: NonNullable<ReturnType<typeof fieldSpec>>, v: string): unknown {
  const n = Number(v);
  if (f.kind === 'int' || f.kind === 'number') return v.trim() !== '' && Number.isFinite(n) ? n : f.min;
  if (f.kind === 'enum') return f.values.includes(v) ? v : f.values[0];
  return v !== 'false' && v !== '0';
}

/** The URL for a state, keeping other query parameters and the path: the team by its name, the config by what differs from it. */
export function urlFor(href: string, s: Omit<UrlState, 'error'>): string {
  const u = new URL(href);
  const config = withoutTeamSettings(s.config);
  const name = config.workflow ? workflowName(config.workflow as Parameters<typeof workflowName>[0]) : null;
  if (name) delete config.workflow;
  if (name) u.searchParams.set('team', name.team);
  else u.searchParams.delete('team');
  if (name?.agents !== undefined) u.searchParams.set('agents', String(name.agents));
  else u.searchParams.delete('agents');
  const json = Object.keys(config).length ? JSON.stringify(config) : null;
  u.searchParams.delete('config');
  u.searchParams.delete('configz');
  if (json && json.length > LONG_CONFIG) u.searchParams.set('configz', pack(json));
  else if (json) u.searchParams.set('config', json);
  if (s.backend) u.searchParams.set('backend', s.backend);
  else u.searchParams.delete('backend');
  if (s.webllm) u.searchParams.set('coach', `webllm:${s.webllm}`);
  else u.searchParams.delete('coach');
  if (s.run) u.searchParams.set('run', s.run);
  else u.searchParams.delete('run');
  return u.href;
}

/** Copy of `patch` with the dotted `path` set to `value` (objects along the path are copied). */
export function setPath(patch: Patch, path: string, value: unknown): Patch {
  const [head, ...rest] = path.split('.');
  if (!rest.length) return { ...patch, [head]: value };
  const inner = (patch[head] && typeof patch[head] === 'object' && !Array.isArray(patch[head]) ? patch[head] : {}) as Patch;
  return { ...patch, [head]: setPath(inner, rest.join('.'), value) };
}
