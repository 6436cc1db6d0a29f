/**
 * Teaching a judge from corrections, on the real weak relay judge (test/fixtures/relay-judge-weak, 61.7 %)
 * and real relay steps (models/relay plays them; the relay rubric gives the corrections as the simulated
 * person). Teaching moves the judge's scores on the corrected actions toward the corrections, and on
 * actions it was not taught (two folds, each taught on the other) its agreement with the rater is
 * compared against the untaught judge's, with Wilson intervals.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { coachPrompt, DEFAULT_COACH_TEMPLATE } from '../../../src/core/coach/coach-format.ts';
import { folds, rankAgainst } from '../../../src/core/coach/corrections.ts';
import { disposeJudge, sha256Hex, teachingAnswer, teachJudge, tokenizeExample, trainableJudge } from '../../../src/core/coach/teach.ts';
import { readJudge } from '../../../src/core/coach/uncertainty.ts';
import { relayRatedSteps, type RatedStep } from '../../../src/core/domains/relay/judge.ts';
import { relayTasks } from '../../../src/core/domains/relay/tasks.ts';
import { initBackend } from '../../../src/core/engine/backend.ts';
import { loadModel, type LoadedModel } from '../../../src/core/engine/model/load.ts';
import { folderSource } from '../../../src/core/engine/model/sources.ts';
import { EngineAgents } from '../../../src/core/loop/agents.ts';
import { decodeSafetensors } from '../../../src/core/engine/model/safetensors.ts';
import { CausalLM } from '../../../src/core/engine/model/llama.ts';
import * as tf from '@tensorflow/tfjs-core';
import { Rng } from '../../../src/core/stats/rng.ts';
import { wilson } from '../../../src/core/stats/intervals.ts';
import { repoRoot } from '../../helpers/webgpu.ts';

const JUDGE = `${repoRoot}/test/fixtures/relay-judge-weak`;

describe('teachingAnswer', () => {
  it('keeps the judge\'s scratchpad and puts the verdict in', () => {
    expect(teachingAnswer({ score: 0 }, '7\nPROCESS_SCORE: 10')).toBe('7\nPROCESS_SCORE: 0');
    expect(teachingAnswer({ score: 10, correct: true }, '3\nPROCESS_SCORE: 0\nANSWER_CORRECT: 0')).toBe('3\nPROCESS_SCORE: 10\nANSWER_CORRECT: 1');
    expect(teachingAnswer({ score: 10, correct: false }, '3\nPROCESS_SCORE: 0')).toBe('3\nPROCESS_SCORE: 10\nANSWER_CORRECT: 0');
    expect(teachingAnswer({ score: 4 }, 'no idea')).toBe('PROCESS_SCORE: 4');
    expect(teachingAnswer({ score: 4, answer: '2 2\nPROCESS_SCORE: 10' }, 'anything')).toBe('2 2\nPROCESS_SCORE: 10');
  });
});

describe('teaching the weak relay judge', () => {
  let judge: LoadedModel;
  let steps: RatedStep[];
  let prompts: string[];
  const scoresOf = async (j: LoadedModel) => (await readJudge(j, prompts)).map((r) => r.score ?? 5);
  /** Teaches the fixture on the steps at `idx` (the rubric's verdicts in the judge's own answers) and loads the result. */
  const taughtOn = async (idx: number[], own: string[]) => {
    const t = await trainableJudge(folderSource(JUDGE));
    const examples = idx.map((i) => ({ prompt: prompts[i], answer: teachingAnswer(steps[i].rating, own[i]) }));
    const r = await teachJudge(t, examples, [], { epochs: 6, lr: 2e-3, seed: 1 });
    disposeJudge(t);
    const { tensors } = await decodeSafetensors(r.safetensors);
    const weights = new Map([...tensors].map(([name, x]) => [name, tf.tensor(x.data, x.shape)]));
    return { result: r, judge: { ...judge, model: new CausalLM(judge.config, weights) } };
  };

  beforeAll(async () => {
    await initBackend({ force: 'wasm' });
    const relay = await loadModel(folderSource(`${repoRoot}/models/relay`), { tokenizer: 'required' });
    steps = await relayRatedSteps(new EngineAgents(relay, new Map(), 64), 4, relayTasks(4, 'teach-test', 10), { seed: 5 });
    relay.model.dispose();
    prompts = steps.map((s) => coachPrompt(s.context, DEFAULT_COACH_TEMPLATE));
    judge = await loadModel(folderSource(JUDGE), { tokenizer: 'required' });
  }, 300_000);

  it('encodes an example as the judge reads its prompt, with the answer as the only targets', () => {
    const tok = judge.tokenizer!;
    const e = tokenizeExample(tok, { prompt: prompts[0], answer: '5\nPROCESS_SCORE: 10' });
    const whole = tok.encodeChat([{ role: 'user', content: prompts[0] }, { role: 'assistant', content: '5\nPROCESS_SCORE: 10' }]);
    expect(e.ids).toEqual(whole.slice(0, e.ids.length));
    expect(tok.decode(e.ids.filter((_, t) => e.target[t]))).toBe('5\nPROCESS_SCORE: 10<|im_end|>');
  });

  it('moves the taught actions\' scores toward the corrections; held-out agreement by two folds against the untaught judge', async () => {
    const rater = steps.map((s) => s.rating.score);
    const groups = steps.map((s) => s.group);
    const own = (await readJudge(judge, prompts)).map((r) => r.answer);
    const before = await scoresOf(judge);
    const parts = folds(steps.length, 2, new Rng('teach-test-folds').shuffle(steps.map((_, i) => i)));
    const after = [...before];
    const mae = (s: number[], idx: number[]) => idx.reduce((a, i) => a + Math.abs(s[i] - rater[i]), 0) / idx.length;
    for (const [k, held] of parts.entries()) {
      const { result, judge: taught } = await taughtOn(parts[1 - k], own);
      const s = await scoresOf(taught);
      taught.model.dispose();
      // On the actions it was taught, its scores moved toward the corrections.
      console.log(`fold ${k}: taught on ${parts[1 - k].length} in ${result.seconds.toFixed(1)} s (${result.steps} steps): `
        + `MAE on them ${mae(before, parts[1 - k]).toFixed(2)} -> ${mae(s, parts[1 - k]).toFixed(2)}`);
      expect(mae(s, parts[1 - k])).toBeLessThan(mae(before, parts[1 - k]) - 1);
      expect(result.hash).toBe(await sha256Hex(result.safetensors));
      for (const i of held) after[i] = s[i];
    }
    const agree = (s: number[]) => wilson(s.filter((x, i) => (x >= 5) === (rater[i] >= 5)).length, s.length);
    const [a0, a1] = [agree(before), agree(after)];
    const [r0, r1] = [rankAgainst(rater, before, groups), rankAgainst(rater, after, groups)];
    const pct = (x: { p: number; low: number; high: number }) => `${(x.p * 100).toFixed(1)} % [${(x.low * 100).toFixed(1)}, ${(x.high * 100).toFixed(1)}]`;
    console.log(`${steps.length} held-out actions by 2 folds: agreement ${pct(a0)} -> ${pct(a1)}; ranking ${pct(r0.interval)} -> ${pct(r1.interval)}`);
    expect(a1.p).toBeGreaterThanOrEqual(a0.p);
  }, 400_000);
});
