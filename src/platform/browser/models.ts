/**
 * Where the worker's models come from, and the checks made before loading one.
 *
 * For: turning a model spec into a ModelSource and refusing models that cannot fit:
 *   "models/agent"             the embedded model, plain files under the site (<base>/models/agent/<file>)
 *   "org/name" | "https://…"   the Hugging Face hub layout (<base>/resolve/main/<file>), cached in
 *                              Cache Storage so a model loaded once works offline
 *   "picked:<name>"            files the user picked or dropped (kept in memory by the worker)
 * Not for: parsing or loading (core/engine/model/load.ts does that).
 *
 * Example: const src = sourceFor('HuggingFaceTB/SmolLM2-135M-Instruct', baseUrl);
 */
import type { ModelSource } from '../../core/engine/model/source.ts';
import { filesSource, isEmbedded, urlSource, type PickedFile } from '../../core/engine/model/sources.ts';

const CACHE_NAME = 'mappa-models-v1';

/** Picked/dropped model folders, by spec ("picked:<folder>"). */
export const pickedModels = new Map<string, PickedFile[]>();

/** fetch through Cache Storage: a hit is served offline; a good GET response is stored. */
async function cachingFetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
  const url = String(input instanceof Request ? input.url : input);
  const method = (init?.method ?? 'GET').toUpperCase();
  const ranged = Boolean((init?.headers as Record<string, string> | undefined)?.Range);
  const cache = typeof caches !== 'undefined' ? await caches.open(CACHE_NAME).catch(() => null) : null;
  const hit = cache && !ranged ? await cache.match(url, { ignoreMethod: true }) : undefined;
  if (hit) return method === 'HEAD' ? new Response(null, { status: 200, headers: hit.headers }) : hit;
  const res = await fetch(input, init);
  if (cache && res.ok && method === 'GET' && !ranged && res.status === 200) {
    try {
      await cache.put(url, res.clone());
    } catch (e) {
      // A full cache must not fail the load; the page says so through the console.
      console.warn(`could not cache ${url} for offline use: ${(e as Error).message}`);
    }
  }
  return res;
}

/** Plain files under a folder URL (the site's own models/): `<base>/<file>`. */
function flatUrlSource(base: string): ModelSource {
  return urlSource(base, { fetch: (input, init) => fetch(String(input).replace('/resolve/main/', '/'), init) });
}

/** A model spec -> source. `baseUrl` is the site's root URL (the page's directory). */
export function sourceFor(spec: string, baseUrl: string): ModelSource {
  if (spec.startsWith('picked:')) {
    const files = pickedModels.get(spec);
    if (!files) throw new Error(`${spec}: the picked files are gone (they live only until the page is reloaded); pick the folder again`);
    return filesSource(files);
  }
  if (isEmbedded(spec)) return flatUrlSource(new URL(spec.replace(/^\.\//, ''), baseUrl).href);
  if (spec.startsWith('/')) return urlSource(new URL(spec, baseUrl).href, { fetch: cachingFetch });
  if (/^https?:\/\//.test(spec) || /^[\w.-]+\/[\w.-]+$/.test(spec)) return urlSource(spec, { fetch: cachingFetch });
  throw new Error(`model "${spec}" is not a hub id (org/name), an http(s) URL, or an embedded model (models/...)`);
}
