/**
 * Citations as links: the notes the page cites (docs/credit.md, the lesson's prediction; docs/judges.md,
 * the coaches) are served by the built site itself (vite.config.ts CITED_DOCS, kept offline by the
 * service worker), each also as a readable HTML page (docs/<name>.html, scripts/doc-page.ts), so every
 * mention of one in the page's words becomes a link to that page, at the section it names.
 *
 * For: components that show sentences from the core (the lesson's words, the coach line). Not for:
 * links to anything the site does not serve (test/e2e/truth.test.ts fetches every path the page cites).
 *
 * Example: citations('as predicted (docs/credit.md)')
 *   -> [{ text: 'as predicted (' }, { text: 'docs/credit.md', href: 'docs/credit.html' }, { text: ')' }]
 */

/**
 * The served files the page cites: the notes (linked as their HTML pages, an anchor after the name kept)
 * and a judge's report (its measured ranking).
 */
export const CITED_DOC = /docs\/(?:credit|judges)\.md(?:#[\w-]+)?|\b(?:models|fixtures)\/[\w.-]+\/report\.json/g;

/** `text` in plain parts and citations (each with its link, relative to the page). */
export function citations(text: string): { text: string; href?: string }[] {
  const parts: { text: string; href?: string }[] = [];
  let at = 0;
  for (const m of text.matchAll(CITED_DOC)) {
    if (m.index > at) parts.push({ text: text.slice(at, m.index) });
    parts.push({ text: m[0], href: m[0].startsWith('docs/') ? m[0].replace(/\.md(?=#|$)/, '.html') : m[0] });
    at = m.index + m[0].length;
  }
  if (at < text.length || !parts.length) parts.push({ text: text.slice(at) });
  return parts;
}
