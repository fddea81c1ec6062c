/**
 * Every relative link in README.md and docs/*.md leads somewhere: the file exists and a `#anchor`
 * names a heading of the page it points at, slugged as GitHub does. The README was split into
 * docs/; this keeps the pages' references to each other honest as sections move.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');
const PAGES = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`),
];

/** The page without fenced code blocks and code spans, where `[x](y)` is not a link. */
function prose(markdown: string): string {
  return markdown
    .replace(/^ *(`{3,}|~{3,})[^\n]*\n[\s\S]*?^ *\1[^\n]*$/gm, '')
    .replace(/(`+)[\s\S]*?(?<!`)\1(?!`)/g, '');
}

/**
 * The anchors GitHub gives a page's headings: the heading's text (without markup) in lower case,
 * everything but letters, digits, spaces, `-` and `_` removed, each space a `-`; a repeated slug
 * gets `-1`, `-2` ...
 */
function headingAnchors(markdown: string): Set<string> {
  const withoutFences = markdown.replace(/^ *(`{3,}|~{3,})[^\n]*\n[\s\S]*?^ *\1[^\n]*$/gm, '');
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const [, heading] of withoutFences.matchAll(/^#{1,6}[ \t]+(.*?)[ \t]*#*[ \t]*$/gm)) {
    const text = heading!
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/<[^>]*>/g, '')
      .replace(/[`*]/g, '');
    const slug = text
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    anchors.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return anchors;
}

/** Why a link from `page` does not resolve, or null when it does. Links with a scheme (https:, mailto:) are not followed. */
function brokenBecause(page: string, target: string): string | null {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return null;
  const hash = target.indexOf('#');
  const path = hash < 0 ? target : target.slice(0, hash);
  const anchor = hash < 0 ? '' : decodeURIComponent(target.slice(hash + 1));
  const file = path === '' ? join(ROOT, page) : resolve(dirname(join(ROOT, page)), decodeURI(path));
  if (!existsSync(file)) return `${relative(ROOT, file)} does not exist`;
  if (!anchor) return null;
  if (!file.endsWith('.md')) return `#${anchor} points into ${relative(ROOT, file)}, which is not a markdown page`;
  return headingAnchors(readFileSync(file, 'utf8')).has(anchor)
    ? null
    : `${relative(ROOT, file)} has no heading #${anchor}`;
}

describe('links in README.md and docs/', () => {
  it('slugs headings as GitHub does', () => {
    const anchors = headingAnchors(
      [
        "## The plan's hash and resume",
        '### `${VAR}`: values from the environment',
        '## Automation: events, weights restore and the run lock',
        '### 1.1 `GET /snippets/all` (question 1)',
        '## Fields',
        '## Fields',
        '```sh',
        '# not a heading',
        '```',
      ].join('\n'),
    );
    expect([...anchors]).toEqual([
      'the-plans-hash-and-resume',
      'var-values-from-the-environment',
      'automation-events-weights-restore-and-the-run-lock',
      '11-get-snippetsall-question-1',
      'fields',
      'fields-1',
    ]);
  });

  it.each(PAGES)('every relative link in %s resolves, anchors included', (page) => {
    const text = prose(readFileSync(join(ROOT, page), 'utf8'));
    const links = [...text.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!);
    const broken = links.flatMap((target) => {
      const why = brokenBecause(page, target);
      return why ? [`${page}: (${target}): ${why}`] : [];
    });
    expect(broken).toEqual([]);
  });

  it('finds the links it checks (the README links to every page in docs/)', () => {
    const readme = prose(readFileSync(join(ROOT, 'README.md'), 'utf8'));
    expect(PAGES.filter((p) => p.startsWith('docs/') && !readme.includes(`](${p})`))).toEqual([]);
  });
});
