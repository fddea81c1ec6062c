/**
 * The package `npm pack` makes (package.json `files`) carries everything the compiled code reads at
 * run time, and needs nothing a clone alone has. Read from the source text, so a new asset that is
 * not shipped, a runtime import of a dev dependency, or a new way of reading a file beside the code
 * turns this red before anyone installs the package. `.ci/run` installs the real package and runs it.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { sourceAssets } from '../scripts/build.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SRC = join(ROOT, 'src');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  files: string[];
  bin: Record<string, string>;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

/** The code that ships: src/ without its tests, as tsconfig.build.json compiles it. */
function shippedSources(): string[] {
  return readdirSync(SRC, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.test.ts'))
    .map((e) => join(e.parentPath, e.name))
    .sort();
}

/** npm always packs these, whatever `files` says. */
const ALWAYS_PACKED = ['package.json', 'README.md'];

/** Whether a path relative to the root is in the package: named in `files`, or under a folder that is. */
function isShipped(rel: string): boolean {
  const path = rel.split(sep).join('/');
  if (ALWAYS_PACKED.includes(path)) return true;
  return pkg.files.some((f) => (f.endsWith('/') ? path.startsWith(f) : path === f));
}

/** Where a path read beside a source file is in the package: under src/ it is copied to dist/ by the build. */
function packedPath(target: string): string {
  const rel = relative(ROOT, target);
  return rel.startsWith(`src${sep}`) ? join('dist', relative(SRC, target)) : rel;
}

type Use = { where: string; kind: 'file' | 'package'; target: string };

// Every form in which the code reads something beside itself; any other use of import.meta fails.
const FORMS = [
  { re: /new URL\(\s*'([^']+)',\s*import\.meta\.url\s*\)/g, kind: 'file' },
  { re: /createRequire\(import\.meta\.url\)\(\s*'(\.[^']+)'\s*\)/g, kind: 'file' },
  { re: /createRequire\(import\.meta\.url\)\.resolve\(\s*'([^.'][^']*)'\s*\)/g, kind: 'package' },
] as const;

function readUses(): { uses: Use[]; unknown: string[] } {
  const uses: Use[] = [];
  const unknown: string[] = [];
  for (const file of shippedSources()) {
    const text = readFileSync(file, 'utf8');
    const known = FORMS.flatMap(({ re, kind }) =>
      [...text.matchAll(re)].map((m) => ({ from: m.index, to: m.index + m[0].length, kind, arg: m[1] as string })),
    );
    for (const m of text.matchAll(/import\.meta/g)) {
      const where = `${relative(ROOT, file)}:${text.slice(0, m.index).split('\n').length}`;
      const form = known.find((k) => k.from <= m.index && m.index < k.to);
      if (!form) unknown.push(where);
      else
        uses.push({
          where,
          kind: form.kind,
          target: form.kind === 'file' ? resolve(dirname(file), form.arg) : form.arg,
        });
    }
  }
  return { uses, unknown };
}

describe('the package npm pack makes', () => {
  const { uses, unknown } = readUses();

  it('knows every way the code reads a file beside itself', () => {
    // A new form (import.meta.dirname, a template literal) needs this test taught to follow it.
    expect(unknown).toEqual([]);
    expect(uses.filter((u) => u.kind === 'file').length).toBeGreaterThanOrEqual(4);
  });

  it('ships every file the code reads beside itself, at the place the compiled code looks', () => {
    const missing: string[] = [];
    for (const use of uses.filter((u) => u.kind === 'file')) {
      const rel = relative(ROOT, use.target);
      // A compiled module of ours (a worker thread's): tsc makes it from its TypeScript beside it.
      const compiled =
        rel.startsWith(`src${sep}`) && rel.endsWith('.js') && existsSync(use.target.replace(/\.js$/, '.ts'));
      if (!compiled && !existsSync(use.target)) missing.push(`${use.where}: ${rel} does not exist`);
      if (rel.startsWith(`src${sep}`) && !compiled) {
        // The build copies src/'s non-TypeScript files to the same place under dist/.
        if (!sourceAssets().includes(relative(SRC, use.target))) {
          missing.push(`${use.where}: ${rel} is not copied to dist/ by the build`);
        }
      }
      if (!isShipped(packedPath(use.target))) missing.push(`${use.where}: ${packedPath(use.target)} is not in files`);
    }
    expect(missing).toEqual([]);
  });

  it('ships what the shipped plans point at (the JSON Schema of their modeline)', () => {
    const missing: string[] = [];
    for (const plan of pkg.files.filter((f) => f.endsWith('.yaml'))) {
      for (const m of readFileSync(join(ROOT, plan), 'utf8').matchAll(/\$schema=(\S+)/g)) {
        const target = relative(ROOT, resolve(ROOT, dirname(plan), m[1] as string));
        if (!existsSync(join(ROOT, target)) || !isShipped(target)) missing.push(`${plan}: ${target}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('resolves every package the code loads at run time from its dependencies, not dev dependencies', () => {
    const builtins = new Set(builtinModules);
    const wrong: string[] = [];
    const bare = /^\s*(?:import|export)\s+(?!type\b)[^'"]*?from\s*'([^.'][^']*)'|\bimport\(\s*'([^.'][^']*)'\s*\)/gm;
    for (const file of shippedSources()) {
      for (const m of readFileSync(file, 'utf8').matchAll(bare)) {
        const spec = (m[1] ?? m[2]) as string;
        if (spec.startsWith('node:') || builtins.has(spec)) continue;
        const name = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : (spec.split('/')[0] as string);
        if (!(name in pkg.dependencies)) wrong.push(`${relative(ROOT, file)}: ${name}`);
      }
    }
    for (const use of uses.filter((u) => u.kind === 'package')) {
      if (!(use.target in pkg.dependencies)) wrong.push(`${use.where}: ${use.target}`);
    }
    expect(wrong).toEqual([]);
  });

  it('carries no TypeScript runner or compiler among its dependencies', () => {
    const runners = ['tsx', 'esbuild', 'typescript', 'ts-node'];
    expect(Object.keys(pkg.dependencies).filter((d) => runners.includes(d))).toEqual([]);
    expect(pkg.devDependencies).toHaveProperty('tsx');
  });

  it('ships its bin, the compiled code, and no sources, tests or state', () => {
    for (const bin of Object.values(pkg.bin)) expect(isShipped(bin), bin).toBe(true);
    expect(isShipped(join('dist', 'cli', 'main.js'))).toBe(true);
    for (const f of pkg.files) {
      expect(f, `files entry ${f}`).not.toMatch(/^(src|test|state|bench|scripts|docs)(\/|$)|\.test\./);
      expect(existsSync(join(ROOT, f)) || f === 'dist/', `files entry ${f} exists`).toBe(true);
    }
  });
});
