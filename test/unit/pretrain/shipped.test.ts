// The shipped tiny models (models/agent, models/judge, built by `npm run pretrain`): they load through
// loadModel(folderSource(...)) like the parity fixtures and real checkpoints, stay within the size
// limits, and answer on-format: the agent in each math and data-team role, the judge in the coach format.
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { DATA_TEAM } from '../../../src/core/domains/data/index.ts';
import { ModelCoach } from '../../../src/core/coach/coach.ts';
import { agentContext } from '../../../src/core/loop/rewards.ts';
import { initBackend } from '../../../src/core/engine/backend.ts';
import { EngineAgents } from '../../../src/core/loop/agents.ts';
import { runRollouts } from '../../../src/core/loop/rollout.ts';
import { MATH_CHAIN, MATH_TEAM, mathOutcome } from '../../../src/core/domains/math/index.ts';
import { DATA_CHAIN, dataHeldOut } from '../../../src/core/domains/data/team.ts';
import { dataOutcome } from '../../../src/core/domains/data/outcome.ts';
import { createSqlTool } from '../../../src/core/tools/sql.ts';
import { FIT_PREDICT } from '../../../src/core/domains/data/fit.ts';
import { parameterCount } from '../../../src/core/engine/model/config.ts';
import { loadModel, type LoadedModel } from '../../../src/core/engine/model/load.ts';
import { folderSource } from '../../../src/core/engine/model/sources.ts';
import { mathHeldOut } from '../../../src/core/domains/math/tasks.ts';
import type { Sandbox } from '../../../src/core/tools/sandbox.ts';
import type { ToolRunners } from '../../../src/core/tools/runners.ts';

/** Each agent's format check, as its team states it. */
const ROLE_FORMAT = { ...MATH_TEAM.formats!, ...DATA_TEAM.formats! };

const repoRoot = path.resolve(import.meta.dirname, '../../..');
const FILES = ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json', 'generation_config.json', 'README.md'];
const MAX_BYTES = 16 * 2 ** 20;
const present = (name: string) => FILES.every((f) => existsSync(path.join(repoRoot, 'models', name, f)));
const shipped = present('agent') && present('judge');
if (!shipped) console.warn('shipped.test.ts: models/agent or models/judge is incomplete; run `npm run pretrain -- --seed 0`. Skipping.');

// The Executor's code is not run here (Pyodide takes seconds to start): every program "prints" 12.
const stubSandbox: Sandbox = {
  run: async () => ({ ok: true, stdout: '12\n', stderr: '', durationMs: 0 }),
  dispose: async () => {},
};
const stubTools: ToolRunners = { python: stubSandbox, javascript: stubSandbox };

describe.skipIf(!shipped)('shipped models', () => {
  const loaded: Record<string, LoadedModel> = {};
  beforeAll(async () => {
    await initBackend({ force: 'wasm' });
    for (const name of ['agent', 'judge']) loaded[name] = await loadModel(folderSource(path.join(repoRoot, 'models', name)), { tokenizer: 'required' });
  }, 300_000);

  it('have every Hugging Face file, each at most 16 MB, and a small Llama config', () => {
    for (const name of ['agent', 'judge']) {
      for (const f of FILES) expect(statSync(path.join(repoRoot, 'models', name, f)).size).toBeLessThanOrEqual(MAX_BYTES);
      const c = loaded[name].config;
      expect(c.modelType).toBe('llama');
      expect(c.tieWordEmbeddings).toBe(true);
      expect(parameterCount(c)).toBeLessThan(5_000_000);
      expect(c.vocabSize).toBe(loaded[name].tokenizer!.vocabSize);
      expect(loaded[name].tokenizer!.eosTokenIds).toContain(loaded[name].tokenizer!.tokenToId('<|im_end|>'));
    }
  });

  it('tokenizer round-trips any text and keeps digits apart', () => {
    const tok = loaded.agent.tokenizer!;
    for (const text of ['Problem: Maya has 128 stickers.\n```python\nx = 128 // 4\nprint(x)\n```', '\\boxed{-7}  tabs\tand ünïcödé 🎉']) {
      expect(tok.decode(tok.encode(text))).toBe(text);
    }
    expect(tok.encode('1234').map((i) => tok.idToToken(i))).toEqual(['1', '2', '3', '4']);
  });

  it('agent answers on-format in every math role (greedy, held-out problem)', async () => {
    const task = mathHeldOut(1)[0];
    const [traj] = await runRollouts(MATH_CHAIN, [task], { agents: new EngineAgents(loaded.agent, new Map()), tools: stubTools, samplesPerTask: 1, temperature: 0, seed: 0, outcome: mathOutcome });
    const roles = traj.actions.map((a) => `${a.agentId}#${a.turn}`);
    expect(roles).toEqual(['solver#1', 'executor#1', 'executor#2', 'verifier#1']);
    for (const a of traj.actions) expect(ROLE_FORMAT[a.agentId](a.text, a.turn), `${a.agentId} turn ${a.turn}: ${JSON.stringify(a.text)}`).toBe(true);
    expect(traj.finalAnswer).not.toBeNull();
  }, 300_000);

  it('agent answers on-format in every data-team role (greedy, held-out table, SQL on DuckDB)', async () => {
    const sql = createSqlTool({ functions: [FIT_PREDICT] });
    try {
      const task = dataHeldOut(['classification'])[0];
      // A generous tool time limit: this checks what each role writes, and on busy cores the SQL fit can pass the
      // default limit, which changes the observation the next agent reads (and so its greedy answer).
      const [traj] = await runRollouts(DATA_CHAIN, [task], { agents: new EngineAgents(loaded.agent, new Map()), tools: { ...stubTools, sql }, samplesPerTask: 1, temperature: 0, seed: 0, outcome: dataOutcome, toolTimeoutMs: 30_000 });
      for (const id of ['data_engineer', 'modeler', 'analyst']) {
        const first = traj.actions.find((a) => a.agentId === id && a.turn === 1);
        expect(first, `${id} acted`).toBeDefined();
        expect(ROLE_FORMAT[id](first!.text, 1), `${id} turn 1: ${JSON.stringify(first!.text)}`).toBe(true);
      }
    } finally {
      await sql.dispose();
    }
  }, 240_000);

  it('judge answers in the coach format on a real team trajectory (with the one format-repair retry)', async () => {
    const task = mathHeldOut(2)[0];
    const [traj] = await runRollouts(MATH_CHAIN, [task], { agents: new EngineAgents(loaded.agent, new Map()), tools: stubTools, samplesPerTask: 1, temperature: 0, seed: 0, outcome: mathOutcome });
    const coach = new ModelCoach(loaded.judge);
    const results = await coach.scoreBatch(MATH_CHAIN.agents.map((a) => agentContext(MATH_CHAIN, traj, a.id)!));
    for (const r of results) expect(r.ok, r.raw).toBe(true);
    expect(results[2].correct).toBeTypeOf('boolean'); // the final agent also answers ANSWER_CORRECT
  }, 300_000);
});
