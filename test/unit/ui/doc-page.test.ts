// A cited note as the site's HTML page (scripts/doc-page.ts): headings with GitHub's anchors, links to the other
// served notes' pages, the plot embedded byte for byte, the words of a link to a file the site does not serve.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { docPage, docPageOf, slugOf } from '../../../scripts/doc-page.ts';

const root = path.resolve(__dirname, '../../..');
const SERVED = ['credit.md', 'judges.md'];

describe('a cited note as an HTML page', () => {
  it('renders headings with anchors, links served notes to their pages, keeps the words of the rest', () => {
    const html = docPage('# Credit, in a chain\n\n## The set-up\n\n## The set-up\n\nSee [the axis](judges.md#the-axis), '
      + '[results](results.md) and [arXiv](https://arxiv.org/abs/1).\n\n    P = 1/10 + 9/10 x lambda^N\n', { name: 'credit.md', dir: path.join(root, 'docs'), served: SERVED });
    expect(html).toContain('<title>Credit, in a chain</title>');
    expect(html).toContain('<h1 id="credit-in-a-chain">Credit, in a chain</h1>');
    expect(html).toContain('<h2 id="the-set-up">The set-up</h2>');
    expect(html).toContain('<h2 id="the-set-up-1">The set-up</h2>'); // a repeated heading, as GitHub numbers it
    expect(html).toContain('<a href="judges.html#the-axis">the axis</a>');
    expect(html).toContain('results <span class="src">(docs/results.md in the project)</span>');
    expect(html).not.toContain('href="results.md"');
    expect(html).toContain('<a href="https://arxiv.org/abs/1">arXiv</a>');
    expect(html).toContain('<pre><code>P = 1/10 + 9/10 x lambda^N\n</code></pre>'); // formulas stay as text
    expect(html).toContain('<a href="../">');
  });

  it('GitHub\'s anchors', () => {
    expect(slugOf("Why outcome reward fails: the gradient's signal")).toBe('why-outcome-reward-fails-the-gradients-signal');
    expect(slugOf('The <code>snr</code> run')).toBe('the-snr-run');
  });

  it('embeds docs/credit.md\'s plot, the luck floor, byte for byte', () => {
    const html = docPageOf(path.join(root, 'docs'), 'credit.md', SERVED);
    const data = /<img src="data:image\/svg\+xml;base64,([^"]+)" alt="The luck floor/.exec(html)?.[1];
    expect(data).toBeTruthy();
    expect(Buffer.from(data!, 'base64').equals(fs.readFileSync(path.join(root, 'bench/results/luck-floor.svg')))).toBe(true);
    expect(html).toContain('(bench/results/luck-floor.svg)</span></figcaption>');
    expect(html).toContain('<h2 id="the-prediction">The prediction</h2>');
  });

  it('refuses a note whose image is missing, naming the note and the path', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'doc-page-'));
    expect(() => docPage('![a plot](gone.svg)', { name: 'x.md', dir, served: [] })).toThrow(/docs\/x\.md: its image gone\.svg is not an SVG file/);
  });
});
