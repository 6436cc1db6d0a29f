/**
 * bench/judge-axis.ts reads each judge with the coach template it was built on: the shipped relay judge the
 * team's own, the older weak one (no template in its build flags) the generic one, and a taught version its
 * parent's (taught.json), so that a taught weak judge coaches as its parent was built to read.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { builtTemplate } from '../../../bench/judge-axis.ts';
import { repoRoot } from '../../helpers/webgpu.ts';

describe('builtTemplate', () => {
  it('reads the build flags, and a taught version its parent\'s', () => {
    expect(builtTemplate(path.join(repoRoot, 'models/relay-judge'))).toBe('team');
    expect(builtTemplate(path.join(repoRoot, 'test/fixtures/relay-judge-weak'))).toBe('generic');
    const taught = mkdtempSync(path.join(os.tmpdir(), 'taught-'));
    writeFileSync(path.join(taught, 'taught.json'), JSON.stringify({ parent: path.join(repoRoot, 'test/fixtures/relay-judge-weak') }));
    expect(builtTemplate(taught)).toBe('generic');
    expect(builtTemplate(mkdtempSync(path.join(os.tmpdir(), 'none-')))).toBe('team');
  });
});
