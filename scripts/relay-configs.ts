/**
 * `npx tsx scripts/relay-configs.ts`: writes configs/relay-<n>.json for every size of RELAY_CONFIG_SIZES (1..6, 8, 16, 32, 64, 128) from relayConfigFile(n)
 * (src/core/domains/relay/team.ts: the settings and one repeated agent), so the files never drift from the code (a test compares them).
 */
import { writeFileSync } from 'node:fs';
import { RELAY_CONFIG_SIZES } from '../src/core/domains/relay/tasks.ts';
import { relayConfigFile } from '../src/core/domains/relay/team.ts';

for (const n of RELAY_CONFIG_SIZES) {
  writeFileSync(`configs/relay-${n}.json`, JSON.stringify(relayConfigFile(n), null, 2) + '\n');
}
console.log(`configs/relay-{${RELAY_CONFIG_SIZES.join(',')}}.json written`);
