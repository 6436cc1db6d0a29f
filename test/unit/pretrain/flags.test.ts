/** The build scripts' one flag parser (scripts/pretrain/flags.ts), on hand-made argument lists. */
import { describe, expect, it } from 'vitest';
import { parseScriptFlags } from '../../../scripts/pretrain/flags.ts';

describe('parseScriptFlags', () => {
  const defaults = { seed: 0, out: 'models/x', lr: 1e-3, 'skip-eval': 0 };
  it('reads --name value and --name=value, typed by the default', () => {
    expect(parseScriptFlags('s', defaults, ['--seed', '3', '--out=/tmp/y', '--lr', '2e-3'])).toEqual({ seed: 3, out: '/tmp/y', lr: 2e-3, 'skip-eval': 0 });
    expect(parseScriptFlags('s', defaults, ['--skip-eval', '--seed', '1'], ['skip-eval'])).toEqual({ ...defaults, seed: 1, 'skip-eval': 1 });
  });
  it('refuses unknown flags, non-numbers and a missing value, naming the script', () => {
    expect(() => parseScriptFlags('s', defaults, ['--nope', '1'])).toThrow(/^s: unknown argument "--nope" \(flags: --seed --out --lr --skip-eval\)/);
    expect(() => parseScriptFlags('s', defaults, ['--lr=abc'])).toThrow('s: --lr needs a number, got "abc"');
    expect(() => parseScriptFlags('s', defaults, ['--out'])).toThrow('s: --out needs a value');
  });
});
