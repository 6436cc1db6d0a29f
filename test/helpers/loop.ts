/**
 * Pieces the loop tests share: a checkpoint store in memory, a deterministic rule coach that needs
 * no model, and an iteration's metrics without its wall-clock figures (for equality checks).
 *
 * Example: const store = new MemoryStore(); await Trainer.create(config, { agentModel, coach: testCoach(), tools, compute }, { store });
 *          expect(resumed.metrics.map(stable)).toEqual(full.metrics.map(stable));
 */
import { RuleCoach, cachedCoach } from '../../src/core/coach/coach.ts';
import { cutJsonl, TRAJECTORIES, type CheckpointFiles, type RunStore } from '../../src/core/loop/checkpoint.ts';
import type { IterationMetrics } from '../../src/core/loop/records.ts';

export class MemoryStore implements RunStore {
  files: CheckpointFiles | null = null;
  /** The metrics records, as appended. */
  records: unknown[] = [];
  texts = new Map<string, Uint8Array | string>();
  async save(f: CheckpointFiles) { this.files = { ...f }; }
  async load() { return this.files; }
  async appendMetrics(r: unknown) { this.records.push(JSON.parse(JSON.stringify(r))); }
  async metrics<T>() { return this.records.slice() as T[]; }
  async cutBack(n: number) {
    this.records = this.records.filter((r) => (r as { iteration: number }).iteration <= n);
    const t = this.texts.get(TRAJECTORIES);
    if (typeof t === 'string') this.texts.set(TRAJECTORIES, cutJsonl(t, n).text);
    return [];
  }
  async writeFile(name: string, data: Uint8Array | string) { this.texts.set(name, data); }
  async readFile(name: string) { return this.texts.get(name) ?? null; }
  async appendText(name: string, text: string) { this.texts.set(name, String(this.texts.get(name) ?? '') + text); }
  async clear() { this.files = null; this.records = []; this.texts.clear(); }
}

/** A coach that rewards short answers that contain a digit: deterministic, no model needed. */
export const testCoach = () => cachedCoach(new RuleCoach('test-rule', (a) => ({ score: /\d/.test(a.output) ? 8 : Math.max(0, 6 - a.output.length / 40), correct: a.final ? false : undefined })));

/** Everything except wall-clock figures. */
export function stable(m: IterationMetrics) {
  const { seconds, rolloutTokensPerSecond, updateTokensPerSecond, ...rest } = m;
  return rest;
}
