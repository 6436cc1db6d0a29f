// Every mention of a served note in the page's words is a link to its HTML page (src/ui/doc-links.ts).
import { describe, expect, it } from 'vitest';
import { citations } from '../../../src/ui/doc-links.ts';

describe('citations become links', () => {
  it('links docs/credit.md and docs/judges.md, keeping the rest of the sentence as text', () => {
    expect(citations('it unlearned (docs/credit.md, "Its limits").')).toEqual([
      { text: 'it unlearned (' }, { text: 'docs/credit.md', href: 'docs/credit.html' }, { text: ', "Its limits").' },
    ]);
    expect(citations('see docs/judges.md#the-axis and docs/credit.md').filter((p) => p.href).map((p) => p.href)).toEqual(['docs/judges.html#the-axis', 'docs/credit.html']);
    expect(citations('no citation')).toEqual([{ text: 'no citation' }]);
    expect(citations('(models/relay-judge/report.json).')[1]).toEqual({ text: 'models/relay-judge/report.json', href: 'models/relay-judge/report.json' });
    expect(citations('CREDIT.md')).toEqual([{ text: 'CREDIT.md' }]); // a file the site does not serve is never linked
  });
});
