/**
 * Every file docs/architecture.md and README.md's Layout section name is where they say: a path in
 * backticks (`src/...`, `test/...`, `actors/index.ts` for src/actors/index.ts, a `*` matching at
 * least one file), and each file name in architecture.md's tree, found under the folder whose entry
 * names it. Links are test/docs-links.test.ts's. The map goes stale silently when a file is renamed
 * or moves to another room; this makes the rename fail until the map follows.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');
const SRC = join(ROOT, 'src');
const architecture = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
const start = readme.indexOf('\n## Layout\n');
const layout = readme.slice(start, readme.indexOf('\n## ', start + 1));

/** Names in the tree that are not files of the repository (a library's name). */
const NOT_FILES = new Set(['Chart.js']);
/** Code spans that name a folder as history: what the floor absorbed. */
const FORMER = new Set(['errors/']);
/** src/'s rooms and their sub-folders, where a span like `drain/placement.ts` or `moves/` is read from. */
const BASES = [
  ROOT,
  SRC,
  ...readdirSync(SRC, { withFileTypes: true, recursive: true })
    .filter((e) => e.isDirectory())
    .map((e) => join(e.parentPath, e.name)),
];
const FILE = /(?<![\w/.*-])((?:[\w-]+\/)*[\w-]+(?:\.[\w-]+)*\.(?:ts|js|json|md|png))(?![\w/-])/g;

/** Whether `path` (relative to `base`, `*` for any characters within a name) names at least one file. */
function exists(base: string, path: string): boolean {
  if (!path.includes('*')) return existsSync(join(base, path));
  const dir = join(base, dirname(path));
  const name = new RegExp(
    `^${path
      .slice(path.lastIndexOf('/') + 1)
      .replace(/[.]/g, '\\.')
      .replace(/\*/g, '.*')}$`,
  );
  return existsSync(dir) && readdirSync(dir).some((f) => name.test(f));
}

/** Every file under `dir`, as paths relative to it. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' });
}

/** Whether a file of that name is at the root or in src/ (a top folder's entry names files of the code it describes). */
function inRepository(name: string): boolean {
  return exists(ROOT, name) || filesUnder(SRC).some((f) => f === name || f.endsWith(`/${name}`));
}

/** The backticked paths of `markdown` that do not exist from the root, src/, or a folder of src/. */
function missingSpans(markdown: string): string[] {
  const spans = [...markdown.matchAll(/`([^`\s]+)`/g)].map((m) => m[1]!);
  const paths = spans.filter((s) => /^[\w.-]+\/[\w.*/-]*$/.test(s) && !FORMER.has(s));
  return paths.filter((p) => !BASES.some((base) => exists(base, p)));
}

/**
 * The files architecture.md's tree names that are not under the folder whose entry names them:
 * `src/`'s rooms at indent 2, their sub-folders at 4, the repository's top folders at 0. A name with
 * a folder in it is taken from src/ or the root.
 */
function missingInTree(markdown: string): string[] {
  const tree = /```\n(src\/\n[\s\S]*?)```/.exec(markdown)![1]!;
  const missing: string[] = [];
  let folder = ROOT;
  const rooms: string[] = [];
  for (const line of tree.split('\n')) {
    const entry = /^( *)([\w.-]+\/?)(?: {2,}|$)/.exec(line);
    if (entry && entry[1]!.length <= 4 && entry[2]!.endsWith('/')) {
      const depth = entry[1]!.length / 2;
      rooms.length = depth;
      rooms.push(entry[2]!.slice(0, -1));
      folder = depth === 0 ? join(ROOT, rooms[0]!) : join(SRC, ...rooms.slice(1));
    }
    const names = [...line.matchAll(FILE)].map((m) => m[1]!).filter((n) => !NOT_FILES.has(n));
    for (const name of names) {
      const found = name.includes('/')
        ? exists(SRC, name) || exists(ROOT, name)
        : folder.startsWith(SRC)
          ? filesUnder(folder).some((f) => f === name || f.endsWith(`/${name}`))
          : filesUnder(folder).some((f) => f === name || f.endsWith(`/${name}`)) || inRepository(name);
      if (!found) missing.push(`${relative(ROOT, folder) || '.'}: ${name}`);
    }
  }
  return missing;
}

describe('the paths the architecture pages name', () => {
  it("are files of the repository: docs/architecture.md's code spans", () => {
    expect(missingSpans(architecture)).toEqual([]);
  });

  it("are files of the repository: README's Layout section", () => {
    expect(layout.length).toBeGreaterThan(0);
    expect(missingSpans(layout)).toEqual([]);
  });

  it("are under the folder whose entry in architecture.md's tree names them", () => {
    expect(missingInTree(architecture)).toEqual([]);
  });

  it('are checked: a name that is nowhere, or in another room, is found missing', () => {
    const made =
      '```\nsrc/\n  runtime/    revert-actors.ts; paths.ts\n  actors/     cap.ts\n```\n`src/nowhere.ts` `cli/main.ts`\n';
    expect(missingInTree(made)).toEqual(['src/runtime: revert-actors.ts']);
    expect(missingSpans(made)).toEqual(['src/nowhere.ts']);
    expect(missingInTree('```\nsrc/\n  runtime/    cap.ts\n```\n')).toEqual(['src/runtime: cap.ts']);
  });
});
