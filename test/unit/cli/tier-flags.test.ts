/** `mappa train`'s tier flags become coach.tiers, and a flag that shapes tiers without --tiers is refused by name (src/cli/tier-flags.ts). */
import { describe, expect, it } from 'vitest';
import { tiersFlags } from '../../../src/cli/tier-flags.ts';

describe('tiersFlags', () => {
  it('builds coach.tiers from the flags given, leaving the others to the config\'s defaults', () => {
    expect(tiersFlags({})).toBeUndefined();
    expect(tiersFlags({ tiers: '0.2' })).toEqual({ budget: 0.2 });
    expect(tiersFlags({ tiers: '0.1', 'tier-pick': 'first-wrong', 'teach-every': '0' })).toEqual({ budget: 0.1, pick: 'first-wrong', teachEvery: 0 });
    expect(tiersFlags({ tiers: '0.5', 'tier-threshold': '3' })).toEqual({ budget: 0.5, threshold: 3 });
  });

  it('refuses a tier flag without --tiers, naming it', () => {
    expect(() => tiersFlags({ 'teach-every': '8' })).toThrow(/--teach-every: needs --tiers SHARE/);
    expect(() => tiersFlags({ 'tier-pick': 'random' })).toThrow(/--tier-pick: needs --tiers SHARE/);
  });
});
