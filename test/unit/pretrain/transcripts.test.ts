// The synthetic transcript generator (scripts/pretrain/transcripts.ts): deterministic per seed, only
// training problems, prompts rendered from MATH_CHAIN's own templates, loss only on assistant tokens.
import { describe, expect, it } from 'vitest';
import { tokenizerConfig, tokenizerJson, trainBpe } from '../../../scripts/pretrain/bpe.ts';
import { MATH_FLAW_RATES, MATH_TEAM, agentExamples, asTrajectory, balanceByScore, judgeExamples, mathPlan, parseFlawRates, playTeam, type ToolRunner } from '../../../scripts/pretrain/transcripts.ts';
import { parseCoachAnswer } from '../../../src/core/coach/coach-format.ts';
import { placeVars, renderTemplate } from '../../../src/core/loop/workflow.ts';
import { MATH_CHAIN } from '../../../src/core/domains/math/index.ts';
import { generateMathTasks, isMathHeldOut } from '../../../src/core/domains/math/tasks.ts';
import { Rng } from '../../../src/core/stats/rng.ts';
import { TextTokenizer } from '../../../src/core/engine/tokenizer/tokenizer.ts';

// A stand-in for the Python sandbox: runs the straight-line programs the scripted Executor writes
// ("x = a op b", "x = x op b", "print(x)" or "print(n)") and fails like Python on anything else.
const fakePython: ToolRunner = async (code) => {
  let x: number | undefined;
  for (const line of code.split('\n')) {
    let m = /^x = (\d+|x) (\+|-|\*|\/\/) (\d+)$/.exec(line);
    if (m) {
      const a = m[1] === 'x' ? x! : Number(m[1]);
      const b = Number(m[3]);
      x = m[2] === '+' ? a + b : m[2] === '-' ? a - b : m[2] === '*' ? a * b : Math.floor(a / b);
      continue;
    }
    m = /^print\((x|\d+)\)$/.exec(line);
    if (m) return '```output\n' + (m[1] === 'x' ? x : m[1]) + '\n```';
    return '```stderr\nSyntaxError: invalid syntax\n```\nError: SyntaxError: invalid syntax';
  }
  return '```output\n(no output)\n```';
};

const tasks = generateMathTasks({ seed: 'transcripts-test', count: 40 });
const play = async (seed: number) => {
  const rng = new Rng(seed);
  const out = [];
  for (const t of tasks) out.push(await playTeam(MATH_TEAM, t, { rng, runTool: fakePython }));
  return out;
};

describe('playTeam with the math team', () => {
  it('is deterministic per seed and differs across seeds', async () => {
    const [a, b, c] = [await play(1), await play(1), await play(2)];
    expect(JSON.stringify(a)).toBe(JSON.stringify(b));
    expect(JSON.stringify(a)).not.toBe(JSON.stringify(c));
  });

  it('uses training problems only and renders prompts from the workflow templates', async () => {
    const ts = await play(1);
    for (const t of ts) {
      expect(isMathHeldOut(t.task)).toBe(false);
      expect(t.actions.map((a) => `${a.agentId}#${a.turn}`).slice(0, 2)).toEqual(['solver#1', 'executor#1']);
      const solver = t.actions[0];
      expect(solver.messages[0].content).toBe(renderTemplate(MATH_CHAIN.agents[0].system, placeVars(MATH_CHAIN, 0)));
      expect(solver.messages[1].content).toBe(`Problem: ${t.task.problem}`);
      const verifier = t.actions[t.actions.length - 1];
      expect(verifier.agentId).toBe('verifier');
      expect(verifier.messages[1].content).toContain('\n\nCode Executor:\n```python\n');
      expect(verifier.text).toMatch(/^\\boxed\{-?\d+\}$/);
    }
  });

  it('a flawless plan solves the task; flaws appear at roughly their rates', async () => {
    const rates = { opMisread: 0, slip: 0, malformedCode: 0, literalCode: 0, literalShort: 0, verifierCopiesSolver: 0 };
    const clean = { ...MATH_TEAM, plan: (task: (typeof tasks)[number], rng: Rng) => mathPlan(task, rng, rates) };
    for (const t of tasks.slice(0, 10)) {
      const tr = await playTeam(clean, t, { rng: new Rng(0), runTool: fakePython });
      expect(tr.correct).toBe(true);
      expect(tr.actions[0].text.split('\n').at(-1)).toBe(`Answer: ${t.answer}`);
    }
    const ts = await play(3);
    const share = ts.filter((t) => t.correct).length / ts.length;
    expect(share).toBeGreaterThan(0.5);
    expect(share).toBeLessThan(1);
  });
});

describe('training examples', () => {
  it('train only assistant tokens and equal encoding the whole chat at once', async () => {
    const ts = await play(1);
    const corpus = ts.flatMap((t) => t.actions.flatMap((a) => [...a.messages.map((m) => m.content), a.text]));
    const bpe = trainBpe(corpus, { vocabSize: 400 });
    const tok = TextTokenizer.fromJson(tokenizerJson(bpe), tokenizerConfig(bpe, 1024));
    const examples = agentExamples(ts[0], tok);
    expect(examples.map((e) => e.agentId)).toEqual(['solver', 'executor', 'verifier']);
    for (const { example } of examples) {
      const text = tok.decode(example.ids);
      expect(tok.encode(text, { addSpecialTokens: false })).toEqual(example.ids);
      const trained = example.ids.filter((_, i) => example.lossMask[i]);
      expect(tok.decode(trained).endsWith('<|im_end|>')).toBe(true);
      expect(tok.decode(trained)).not.toContain('<|im_start|>');
    }
    const executor = examples[1].example;
    expect(tok.decode(executor.ids.filter((_, i) => executor.lossMask[i]))).toMatch(/^```python\n[\s\S]*```<\|im_end\|>Result: -?\d+<\|im_end\|>$/);
    const judged = judgeExamples(asTrajectory(ts[0]), tok);
    expect(judged.map((j) => j.context.agentId)).toEqual(['solver', 'executor', 'verifier']); // one verdict per agent, as training asks
    for (const j of judged) {
      const answer = tok.decode(j.example.ids.filter((_, i) => j.example.lossMask[i]), { skipSpecialTokens: true });
      expect(parseCoachAnswer(answer, j.context.final)).toMatchObject({ ok: true, score: j.score });
    }
  });
});

describe('the literal-code habit', () => {
  it('applies literalShort to work of 1-2 steps and literalCode to longer work', () => {
    const none = { opMisread: 0, slip: 0, malformedCode: 0, literalCode: 0, literalShort: 0, verifierCopiesSolver: 0 };
    const all = generateMathTasks({ seed: 'habit', count: 60 });
    const short = all.filter((t) => t.chain.steps.length <= 2);
    const long = all.filter((t) => t.chain.steps.length > 2);
    expect(short.length).toBeGreaterThan(5);
    expect(long.length).toBeGreaterThan(5);
    for (const t of short) expect(mathPlan(t, new Rng(1), { ...none, literalShort: 1 }).flaws).toEqual(['executor-literal']);
    for (const t of long) expect(mathPlan(t, new Rng(1), { ...none, literalShort: 1 }).flaws).toEqual([]);
    for (const t of long) expect(mathPlan(t, new Rng(1), { ...none, literalCode: 1 }).flaws).toEqual(['executor-literal']);
  });
});

describe('parseFlawRates (pretrain --flaws)', () => {
  it('overrides named rates and refuses unknown names, rates outside 0..1 and bad JSON', () => {
    expect(parseFlawRates('')).toBe(MATH_FLAW_RATES);
    expect(parseFlawRates('{"literalShort": 0.5}')).toEqual({ ...MATH_FLAW_RATES, literalShort: 0.5 });
    expect(() => parseFlawRates('{"literal": 0.5}')).toThrow(/unknown flaw "literal" \(known: .*literalShort/);
    expect(() => parseFlawRates('{"slip": 2}')).toThrow(/slip must be a rate in 0\.\.1, got 2/);
    expect(() => parseFlawRates('{slip: 1}')).toThrow(/--flaws must be a JSON object/);
  });
});

describe('balanceByScore', () => {
  it('subsamples a dominant score down to about the share asked, keeping every other score', () => {
    const items = [...Array.from({ length: 900 }, () => ({ score: 10 })), ...Array.from({ length: 100 }, (_, i) => ({ score: i % 10 }))];
    const kept = balanceByScore(items, new Rng(3), 0.4);
    const tens = kept.filter((i) => i.score === 10).length;
    expect(kept.filter((i) => i.score !== 10)).toHaveLength(100);
    expect(tens).toBeGreaterThan(45); // 100 * 0.4 / 0.6 = 66.7 expected
    expect(tens).toBeLessThan(90);
  });
});
