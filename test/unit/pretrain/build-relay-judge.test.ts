import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { relayJudgeStages } from '../../../scripts/build-relay-judge.ts';

describe('the relay judge build in one command', () => {
  it('chains the three stages the shipped judge records in its lineage, each from the last', () => {
    const stages = relayJudgeStages('/w');
    const lineage = (JSON.parse(readFileSync('models/relay-judge/report.json', 'utf8')) as { lineage: { sizes: string; command: string }[] }).lineage;
    expect(stages.map((s) => s.sizes)).toEqual(lineage.map((l) => l.sizes));
    expect(stages[0].args).not.toContain('--init');
    expect(stages[1].args.join(' ')).toContain('--init /w/stage-1');
    expect(stages[2].args.join(' ')).toContain('--init /w/stage-2');
    // the recipe's flags of each recorded command, less its folders
    for (const [i, l] of lineage.entries()) {
      const recorded = l.command.replace(/--init \S+/, '').split(' ').filter((x) => x.startsWith('--') && x !== '--init');
      for (const flag of recorded) expect(stages[i].args).toContain(flag);
      for (const v of ['4000', '1800', '1500', '780', '0.001', '400', '1-6,7-128:11']) {
        if (l.command.split(' ').includes(v)) expect(stages[i].args).toContain(v);
      }
    }
    expect(stages.map((s) => s.args.at(-1))).toEqual(['/w/stage-1', '/w/stage-2', '/w/stage-3']);
  });
});
