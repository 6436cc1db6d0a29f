/**
 * A judge taught in this browser, loadable by its spec (`taught:<name>-<12 hex of its sha-256>`) as any judge
 * folder is: the lab wraps its platform's model sources with it (lab.ts), so a run's coach.model may name one.
 *
 * For: lab.ts. Not for: teaching (judge-desk.ts) or the versions' record (coach/correction-book.ts).
 * Example: taughtSource('taught:relay-judge-0123456789ab', store, (spec) => platform.modelSource(spec, base)).readJson('config.json')
 */
import { readVersions, weightsFile, type FileStore, type JudgeVersion } from '../../coach/correction-book.ts';
import type { ModelSource } from '../../engine/model/source.ts';

/**
 * A taught judge as a model source: its weights from the store, everything else (config, tokenizer) from
 * the judge it was taught from, and taught.json its record. Lazy, so that it can be made synchronously.
 */
export function taughtSource(spec: string, store: FileStore, parentSource: (spec: string) => ModelSource): ModelSource {
  let found: Promise<{ v: JudgeVersion; parent: ModelSource }> | null = null;
  const find = () => (found ??= readVersions(store).then((all) => {
    const v = all.find((x) => x.spec === spec);
    if (!v) throw new Error(`${spec}: this browser holds no such taught judge (taught judges live in the browser that taught them)`);
    return { v, parent: parentSource(v.parent) };
  }));
  const own = async (file: string): Promise<Uint8Array | null> => {
    const { v } = await find();
    if (file === 'taught.json') return new TextEncoder().encode(JSON.stringify(v, null, 2));
    if (file === 'model.safetensors') {
      const w = await store.readFile(weightsFile(spec));
      if (!w || typeof w === 'string') throw new Error(`${spec}: its weights are missing from this browser's storage`);
      return w;
    }
    return null;
  };
  const hidden = (file: string) => file === 'report.json' || file === 'README.md'; // the parent's report is not this judge's
  const source: ModelSource = {
    name: spec,
    async has(file) {
      if (file === 'taught.json' || file === 'model.safetensors') return (await find(), true);
      return !hidden(file) && (await find()).parent.has(file);
    },
    async readText(file) {
      const b = await own(file);
      return b ? new TextDecoder().decode(b) : (await find()).parent.readText(file);
    },
    async readJson<T>(file: string) {
      return JSON.parse(await source.readText(file)) as T;
    },
    async *stream(file, onProgress) {
      const b = await own(file);
      if (!b) {
        yield* (await find()).parent.stream(file, onProgress);
        return;
      }
      onProgress?.({ file, loaded: b.length, total: b.length });
      yield b;
    },
  };
  return source;
}
