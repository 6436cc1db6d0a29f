/**
 * `npx tsx scripts/relay-configs.ts`: writes configs/relay-<n>.json for n = 1..6 from relayConfig(n)
 * (src/core/domains/relay/team.ts), so the files never drift from the code (a test compares them).
 */
import { writeFileSync } from 'node:fs';
import { RELAY_MAX_AGENTS, RELAY_MIN_AGENTS } from '../src/core/domains/relay/tasks.ts';
import { relayConfig } from '../src/core/domains/relay/team.ts';

for (let n = RELAY_MIN_AGENTS; n <= RELAY_MAX_AGENTS; n++) {
  writeFileSync(`configs/relay-${n}.json`, JSON.stringify(relayConfig(n), null, 2) + '\n');
}
console.log(`configs/relay-${RELAY_MIN_AGENTS}.json .. relay-${RELAY_MAX_AGENTS}.json written`);
