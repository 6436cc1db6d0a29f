/**
 * A run whose credit reads no coach (outcome, counterfactual replays, state groups) calls no coach:
 * one iteration of the relay of 3 with a coach that counts its calls (and fails every one, so a call
 * would show as a failure too); process reward calls it for every agent of every trajectory, in one
 * batch across the team.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/core/engine/backend.ts';
import type { LoadedModel } from '../../../src/core/engine/model/load.ts';
import type { ActionContext } from '../../../src/core/coach/coach-format.ts';
import type { Coach, CoachResult } from '../../../src/core/coach/coach.ts';
import { resolveTrainConfig, teamOf } from '../../../src/core/domains/index.ts';
import { Trainer } from '../../../src/core/loop/train.ts';
import { LocalCompute } from '../../../src/core/compute/local.ts';
import { relayConfig } from '../../../src/core/domains/relay/team.ts';
import { tinyTeamModel } from '../../helpers/tiny-team.ts';

class CountingCoach implements Coach {
  readonly name = 'counting';
  batches: number[] = [];
  async scoreBatch(actions: ActionContext[]): Promise<CoachResult[]> {
    this.batches.push(actions.length);
    return actions.map(() => ({ score: 5, raw: '', ok: false, attempts: 1 }));
  }
}

describe('a coach-free run calls no coach', () => {
  let model: LoadedModel;
  beforeAll(async () => {
    await initBackend({ force: 'cpu' });
    model = await tinyTeamModel(4);
  });
  afterAll(() => model.model.dispose());

  it.each([
    ['outcome', {}],
    ['counterfactual', { fanOut: [2, 1, 1] }],
    ['groups', {}],
    ['process', {}],
  ])('%s', async (mode, extra) => {
    const config = resolveTrainConfig({
      ...relayConfig(3), agentModel: 'tiny', iterations: 1, promptsPerIteration: 2, samplesPerPrompt: 2, rolloutPasses: 1,
      rewards: { mode, ...extra }, lora: { rank: 2, targetModules: ['q_proj', 'v_proj'] },
    });
    const coach = new CountingCoach();
    const tools = {};
    const team = teamOf(config.workflow);
    const trainer = await Trainer.create(config, { team, agentModel: model, coach, tools, compute: LocalCompute.forTeam({ team, agentModel: model, tools }) });
    const m = await trainer.step();
    trainer.dispose();
    if (mode === 'process') {
      expect(coach.batches).toEqual([4 * 3]); // 4 trajectories x 3 agents, one batch
      expect(m.coach).toMatchObject({ calls: 12 });
    } else {
      expect(coach.batches).toEqual([]);
      expect(m.coach).toMatchObject({ calls: 0, failures: 0 });
      expect(m.trajectories).toBeGreaterThan(0);
    }
  }, 300_000);
});
