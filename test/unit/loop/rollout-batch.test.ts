/**
 * rolloutBatch (rows an agent decodes together) is a speed setting: greedy, a pass of the relay team
 * plays the same trajectories (texts, tokens, log-probs to float rounding) whether its agents decode
 * 4 rows at a time or all of them at once; and a config sets it, 16 when it says nothing.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/core/engine/backend.ts';
import { setUpTeam } from '../../../src/cli/run-setup.ts';
import { resolveTrainConfig } from '../../../src/core/domains/index.ts';
import { relayConfig } from '../../../src/core/domains/relay/team.ts';
import { playPass, type TeamParts } from '../../../src/core/loop/rollout.ts';
import { playedTeam } from '../../../src/core/loop/team.ts';
import type { TrainConfig } from '../../../src/core/loop/config.ts';
import { EngineAgents } from '../../../src/core/loop/agents.ts';

let config: TrainConfig;
let parts: TeamParts;
beforeAll(async () => {
  await initBackend({ force: 'wasm' });
  config = resolveTrainConfig(relayConfig(6));
  parts = await setUpTeam(config);
});

describe('rolloutBatch', () => {
  it('plays the same greedy trajectories in any batch', async () => {
    const tasks = parts.team.heldOut(10);
    const play = (rolloutBatch: number) => playPass(parts, {
      ...playedTeam({ ...config, rolloutBatch }), adapters: new Map(), tasks, samplesPerTask: 2, temperature: 0, seed: 5,
    });
    const narrow = await play(4);
    const wide = await play(64);
    expect(wide.length).toBe(20);
    wide.forEach((t, i) => {
      expect(t.actions.map((a) => a.text)).toEqual(narrow[i].actions.map((a) => a.text));
      expect(t.actions.map((a) => a.tokens)).toEqual(narrow[i].actions.map((a) => a.tokens));
      t.actions.forEach((a, k) => a.logprobs.forEach((lp, j) => expect(Math.abs(lp - narrow[i].actions[k].logprobs[j])).toBeLessThan(1e-4)));
    });
  }, 120_000);

  // A greedy prompt asked twice in one call is decoded once; the copy is the reply a call of its own gives, and a
  // sampled row beside it is drawn as it is without the copy (its batch and seed do not move).
  it('answers a repeated greedy prompt from the first, as a call of its own answers it', async () => {
    const agents = new EngineAgents(parts.agentModel, new Map());
    const msg = (user: string) => [{ role: 'system' as const, content: 'Relay agent 2 of 6: reply with the last digit of the sum.' }, { role: 'user' as const, content: user }];
    const req = (user: string, temperature: number) => ({ messages: msg(user), maxTokens: 4, temperature });
    const both = await agents.generate('agent2', [req('3 + 4', 0), req('9 + 9', 0), req('3 + 4', 0), req('3 + 4', 1)], 11);
    const alone = await agents.generate('agent2', [req('3 + 4', 0)], 0);
    const sampledAlone = await agents.generate('agent2', [req('3 + 4', 0), req('9 + 9', 0), req('5 + 1', 0), req('3 + 4', 1)], 11);
    expect(both[2].tokens).toEqual(alone[0].tokens);
    expect(both[2].text).toBe(alone[0].text);
    expect(both[0].tokens).toEqual(alone[0].tokens);
    expect(both[2].tokens).not.toBe(both[0].tokens); // a copy, not the same array
    expect(both[3].tokens).toEqual(sampledAlone[3].tokens);
  }, 120_000);

  it('is a setting of the config, 16 by default', () => {
    expect(config.rolloutBatch).toBe(16);
    expect(playedTeam(config).rolloutBatch).toBe(16);
    expect(resolveTrainConfig({ ...relayConfig(6), rolloutBatch: 128 }).rolloutBatch).toBe(128);
    expect(() => resolveTrainConfig({ ...relayConfig(6), rolloutBatch: 0 })).toThrow(/rolloutBatch/);
  });
});
