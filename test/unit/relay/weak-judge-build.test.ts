/**
 * scripts/build-weak-relay-judge.ts: the checkpoint it keeps (nearest the target ranking, the earlier on a
 * tie) and the build it runs (the relay judge's recipe at its defaults, checkpoints through the drop).
 */
import { describe, expect, it } from 'vitest';
import { buildArgs, nearest } from '../../../scripts/build-weak-relay-judge.ts';

describe('build-weak-relay-judge', () => {
  it('keeps the checkpoint nearest the target, the earlier step on a tie', () => {
    const ranked = [{ step: 3300, p: 0.577 }, { step: 3400, p: 0.673 }, { step: 3500, p: 0.809 }];
    expect(nearest(ranked, 0.6).step).toBe(3300);
    expect(nearest(ranked, 0.8).step).toBe(3500);
    expect(nearest([{ step: 2, p: 0.65 }, { step: 1, p: 0.55 }], 0.6).step).toBe(1);
  });
  it('runs the recipe at its defaults with checkpoints through the drop', () => {
    const args = buildArgs('/tmp/w');
    expect(args[0]).toBe('scripts/pretrain-relay-judge.ts');
    expect(args.join(' ')).toBe('scripts/pretrain-relay-judge.ts --seed 0 --checkpoints 3000-6400:100 --checkpoint-dir /tmp/w/ckpt --out /tmp/w/final');
  });
});
