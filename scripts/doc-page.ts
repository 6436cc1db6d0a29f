/**
 * A note the page cites (docs/credit.md, docs/judges.md) as a readable HTML page, rendered when the site
 * is built (vite.config.ts writes docs/<name>.html beside docs/<name>.md, so the service worker keeps it
 * for offline use) and on request by `vite` and `vite preview`. Markdown by `marked`; formulas stay as
 * text (the notes write them as code); a plot the note shows (![caption](../bench/results/x.svg)) is
 * embedded in the page as a data URL, so the page is one file; a link to another cited note goes to its
 * HTML page; a link to a file the site does not serve (results.md) keeps its words and names the file.
 *
 * For: the site's build and servers. Not for: the page's own words (src/ui/doc-links.ts links them here).
 * Example: docPage('# Credit\n\nSee [judges](judges.md#the-axis).', { name: 'credit.md', dir: 'docs', served: ['credit.md', 'judges.md'] })
 *   -> '<!doctype html>...<h1 id="credit">Credit</h1>\n<p>See <a href="judges.html#the-axis">judges</a>.</p>...'
 */
import fs from 'node:fs';
import path from 'node:path';
import { Marked } from 'marked';

export interface DocPageOptions {
  /** The note's file name, e.g. 'credit.md'. */
  name: string;
  /** The folder the note lives in: its images' paths are relative to it. */
  dir: string;
  /** The notes the site serves (their links go to their HTML pages). */
  served: string[];
}

/** A heading's anchor as GitHub writes it: lower case, punctuation dropped, spaces to dashes. */
export function slugOf(text: string): string {
  return text.toLowerCase().trim().replace(/<[^>]+>/g, '').replace(/[^\w\s-]/g, '').replace(/\s/g, '-');
}

const esc = (t: string) => t.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** The HTML page of a note's Markdown `md` (a whole document, its styles inline). */
export function docPage(md: string, opts: DocPageOptions): string {
  const seen = new Map<string, number>();
  const marked = new Marked({
    gfm: true,
    renderer: {
      heading({ tokens, depth }) {
        const inner = this.parser.parseInline(tokens);
        let id = slugOf(inner);
        const n = seen.get(id) ?? 0;
        seen.set(id, n + 1);
        if (n) id = `${id}-${n}`;
        return `<h${depth} id="${id}">${inner}</h${depth}>\n`;
      },
      image({ href, text }) {
        const file = path.resolve(opts.dir, href);
        if (!/\.svg$/i.test(file) || !fs.existsSync(file)) {
          throw new Error(`docs/${opts.name}: its image ${href} is not an SVG file at ${file}; fix the path in the note`);
        }
        const data = Buffer.from(fs.readFileSync(file)).toString('base64');
        return `<figure><img src="data:image/svg+xml;base64,${data}" alt="${esc(text)}"><figcaption>${esc(text)} `
          + `<span class="src">(${esc(path.relative(path.resolve(opts.dir, '..'), file))})</span></figcaption></figure>`;
      },
      link({ href, title, tokens }) {
        const inner = this.parser.parseInline(tokens);
        const t = title ? ` title="${esc(title)}"` : '';
        if (/^[a-z]+:/i.test(href) || href.startsWith('#')) return `<a href="${esc(href)}"${t}>${inner}</a>`;
        const [file, anchor] = href.split('#');
        if (opts.served.includes(file)) return `<a href="${esc(file.replace(/\.md$/, '.html'))}${anchor ? `#${esc(anchor)}` : ''}"${t}>${inner}</a>`;
        // Not served by the site: the words stay, with the file's place in the project.
        const rel = path.relative(path.resolve(opts.dir, '..'), path.resolve(opts.dir, file));
        return `${inner} <span class="src">(${esc(rel)} in the project)</span>`;
      },
    },
  });
  const body = marked.parse(md, { async: false });
  const title = (md.match(/^#\s+(.+)$/m)?.[1] ?? opts.name).trim();
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)}</title>
<style>
  body { margin: 0; background: #f6f7f9; color: #1d2430; font: 16px/1.55 system-ui, sans-serif; }
  main { max-width: 50rem; margin: 0 auto; padding: 1rem 1.5rem 3rem; background: #fff; min-height: 100vh; box-sizing: border-box; }
  nav { font-size: 0.9rem; margin-bottom: 0.5rem; }
  nav a, main a { color: #1d4ed8; }
  h1 { font-size: 1.6rem; line-height: 1.25; margin: 0.5rem 0 1rem; }
  h2 { font-size: 1.25rem; margin-top: 2rem; border-bottom: 1px solid #e5e7eb; padding-bottom: 0.2rem; }
  h3 { font-size: 1.05rem; }
  pre { background: #f3f4f6; padding: 0.6rem 0.8rem; overflow-x: auto; border-radius: 4px; font-size: 0.9rem; }
  code { font-family: ui-monospace, monospace; font-size: 0.92em; }
  p code, li code { background: #f3f4f6; padding: 0 0.2em; border-radius: 3px; }
  figure { margin: 1.2rem 0; text-align: center; }
  figure img { max-width: 100%; height: auto; border: 1px solid #e5e7eb; }
  figcaption { font-size: 0.9rem; color: #4b5563; }
  .src { color: #6b7280; font-size: 0.85em; }
  table { border-collapse: collapse; margin: 1rem 0; font-size: 0.92rem; }
  th, td { border: 1px solid #e5e7eb; padding: 0.25rem 0.5rem; text-align: left; }
</style>
</head>
<body>
<main data-note="${esc(opts.name)}">
<nav><a href="../">← back to the sandbox</a> · <a href="${esc(opts.name)}">the note as Markdown (docs/${esc(opts.name)})</a></nav>
${body}</main>
</body>
</html>
`;
}

/** The HTML page of the note `name` in `dir` (docPage over the file). */
export function docPageOf(dir: string, name: string, served: string[]): string {
  return docPage(fs.readFileSync(path.join(dir, name), 'utf8'), { name, dir, served });
}
