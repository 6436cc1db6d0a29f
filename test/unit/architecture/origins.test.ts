/**
 * One origin per value: a value the code uses in several places is written once, where it is decided, and
 * every other place imports it (as nanoGPT's config flows from one place to its use). Each row names a
 * value, the one file allowed to write it as a literal, and the pattern its literal has; the test reads every
 * source file of src/ and fails naming each other file that writes it, so a copy cannot come back unseen.
 *
 * Example row: the tool timeout, written `DEFAULT_TIMEOUT_MS = 2000` in src/core/tools/sandbox.ts; a file
 * that writes `timeoutMs: 2000` or `toolTimeoutMs ?? 2000` is a second origin and fails the test.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../..');

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(path.join(dir, e.name)) : /\.(ts|mjs|svelte)$/.test(e.name) ? [path.join(dir, e.name)] : []);
}
/** Code without its comments (a comment may quote a value: it is not an origin). */
const code = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');
const FILES = sources(path.join(root, 'src')).map((f) => ({ file: path.relative(root, f), text: code(fs.readFileSync(f, 'utf8')) }));

interface Origin {
  value: string;
  /** The files allowed to write it; more than one only where each writes a different setting (named in `why`). */
  origins: string[];
  literal: RegExp;
  why?: string;
}

const ORIGINS: Origin[] = [
  { value: 'the tool timeout (2000 ms)', origins: ['src/core/tools/sandbox.ts'], literal: /\b\w*timeout\w*\s*(:|=|\?\?)\s*2_?000\b/i },
  { value: 'the weight decay', origins: ['src/core/loop/config.ts'], literal: /\bweightDecay\s*:\s*[\d.]/ },
  {
    value: 'the list of reward modes', origins: ['src/core/loop/rewards.ts'],
    literal: /'(process|outcome|mixed|counterfactual|groups)'\s*,\s*'(process|outcome|mixed|counterfactual|groups)'\s*,\s*'(process|outcome|mixed|counterfactual|groups)'/,
  },
  { value: 'process vs outcome, the pair the experiments train', origins: ['src/core/lab/experiments/run-maths.ts'], literal: /=\s*\[\s*'process'\s*,\s*'outcome'\s*\]/ },
  { value: 'MAX_TRAIN_ATTENTION_CELLS', origins: ['src/core/engine/model/memory-plan.ts'], literal: /\bconst\s+\w*ATTENTION_CELLS\w*\s*=/ },
  { value: 'the largest tied-head copy (256 MiB)', origins: ['src/core/engine/model/memory-plan.ts'], literal: /256\s*<<\s*20/ },
  {
    value: 'the learning rate',
    origins: ['src/core/loop/config.ts', 'src/core/domains/relay/team.ts', 'src/core/domains/data/team.ts', 'src/core/lab/experiments/scale/scale-maths.ts', 'src/core/coach/teach.ts'],
    literal: /\blr\s*:\s*[\d.]+(e-?\d+)?\b/,
    why: 'each file writes a different setting, once: the default (the math team\'s), the relay team\'s, the data team\'s, '
      + 'the scale plan\'s raised one, and teaching a judge\'s',
  },
];

describe('one origin per value', () => {
  it.each(ORIGINS)('$value is written only in its origin', ({ origins, literal }) => {
    const writers = FILES.filter((f) => literal.test(f.text)).map((f) => f.file);
    expect(writers.filter((f) => !origins.includes(f)), 'a second origin: import the value from its origin instead').toEqual([]);
    for (const origin of origins) {
      const text = FILES.find((f) => f.file === origin)?.text ?? '';
      expect(text.match(new RegExp(literal.source, `${literal.flags}g`))?.length ?? 0, `${origin} writes it once`).toBe(1);
    }
  });

  it('finds a second origin (a worked example on made-up files)', () => {
    const [timeout] = ORIGINS;
    expect(timeout.literal.test(code('const run = sb.run(c, { timeoutMs: 2000 });'))).toBe(true);
    expect(timeout.literal.test(code('timeoutMs: opts.toolTimeoutMs ?? 2000,'))).toBe(true);
    expect(timeout.literal.test(code('timeoutMs: opts.toolTimeoutMs ?? DEFAULT_TIMEOUT_MS, // was 2000'))).toBe(false);
    expect(timeout.literal.test(code('setInterval(follow, 2000);'))).toBe(false);
  });
});
