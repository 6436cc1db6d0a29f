/**
 * The files a page cites, and whether the site serves them: every same-origin link (a[href], not an
 * anchor on the page itself) and every path written in the page's text that names a file
 * ("docs/credit.md", "models/relay-judge/report.json", "CREDIT.md"). Each is fetched from the site;
 * a file the site does not serve is a 404 there (`npm start` answers real 404s), never index.html; a cited
 * .html file (a note's page) must be that page, not the app's.
 * For: test/e2e/truth.test.ts and lesson.test.ts. Example: expect(await unserved(page, site.url)).toEqual([]);
 */
import type { Page } from 'playwright-core';

/** A path written in text that names a file: folders and a name with an extension, or a bare NAME.md. */
const FILE_IN_TEXT = /(?:^|[\s("'])((?:[\w.-]+\/)*[\w.-]+\.(?:md|json|safetensors|svg|ts|js|jsonl|csv))\b/g;

/** Every file the page's text and links cite (relative to the site root), sorted, each once. */
export async function citedFiles(page: Page): Promise<string[]> {
  const { text, links, origin } = await page.evaluate(() => {
    // Folded text counts too: every <details> is opened to read it, then folded again as it was.
    const closed = [...document.querySelectorAll('details')].filter((d) => !d.open);
    for (const d of closed) d.open = true;
    const read = {
      text: document.body.innerText,
      links: [...document.querySelectorAll('a[href]')].map((a) => (a as HTMLAnchorElement).href),
      origin: location.origin,
    };
    for (const d of closed) d.open = false;
    return read;
  });
  const found = new Set<string>();
  for (const m of text.matchAll(FILE_IN_TEXT)) {
    if (/^\d/.test(m[1]) || /\.(ts|js)$/.test(m[1]) && !m[1].includes('/')) continue; // "1.5e-4", a bare "x.ts" in a code sample
    found.add(m[1].replace(/^\.\//, ''));
  }
  for (const href of links) {
    const u = new URL(href);
    if (u.origin !== origin || (u.pathname === '/' && u.hash)) continue; // other sites (arXiv), anchors on this page
    found.add(u.pathname.replace(/^\//, ''));
  }
  return [...found].filter(Boolean).sort();
}

/** The cited files the site at `base` does not serve (status and content type, for the message). */
export async function unserved(page: Page, base: string): Promise<string[]> {
  const bad: string[] = [];
  for (const file of await citedFiles(page)) {
    const res = await fetch(new URL(file, base));
    const type = res.headers.get('content-type') ?? '';
    const body = await res.text();
    // HTML only for a page (a cited note's, docs/credit.html), and never the app's own page answered for it.
    const html = type.includes('text/html');
    if (!res.ok || (html && (!/\.html$/.test(file) || body.includes('<title>mappa-sandbox</title>')))) bad.push(`${file}: HTTP ${res.status} ${type}`);
  }
  return bad;
}
