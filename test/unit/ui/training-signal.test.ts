/**
 * "Someone is training in this browser" (src/ui/training-signal.ts) between tabs, here two signals in one
 * Node process over Node's own BroadcastChannel (the browser's, same API): a tab that trains is heard by
 * the other at once, by a tab opened later on asking, and forgotten when it stops, closes or goes silent.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { TrainingSignal } from '../../../src/ui/training-signal.ts';

const open: TrainingSignal[] = [];
function tab(opts?: { beatMs?: number; expireMs?: number }) {
  const heard: (string | null)[] = [];
  const s = new TrainingSignal((w) => heard.push(w), opts);
  open.push(s);
  return { s, heard, last: () => heard.at(-1) ?? null };
}
const settle = (ms = 30) => new Promise((r) => setTimeout(r, ms));
afterEach(() => {
  for (const s of open.splice(0)) s.close();
});

describe('the training signal between tabs', () => {
  it('a tab that trains is heard by another, and its stop too; a tab never hears itself', async () => {
    const a = tab();
    const b = tab();
    a.s.set('the lesson is running');
    await settle();
    expect(b.last()).toBe('the lesson is running');
    expect(a.heard).toEqual([]);
    a.s.set(null);
    await settle();
    expect(b.last()).toBe(null);
  });

  it('a tab opened while another trains hears it on asking, without waiting for a beat', async () => {
    const a = tab({ beatMs: 60_000, expireMs: 180_000 });
    a.s.set('the run is training');
    await settle();
    const late = tab({ beatMs: 60_000, expireMs: 180_000 });
    await settle();
    expect(late.last()).toBe('the run is training');
  });

  it('a closed tab releases the others at once; a silent one after expireMs', async () => {
    const a = tab();
    const b = tab({ beatMs: 20, expireMs: 90 });
    a.s.set('the run is training');
    await settle();
    a.s.close();
    await settle();
    expect(b.last()).toBe(null);

    const c = tab({ beatMs: 60_000, expireMs: 180_000 }); // beats too seldom for b's 90 ms: b forgets it
    c.s.set('the run is training');
    await settle();
    expect(b.last()).toBe('the run is training');
    await settle(200);
    expect(b.last()).toBe(null);
  });
});
