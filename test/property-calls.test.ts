// Every property test runs through assertProperty (test/support/property.ts), so every property runs
// from the fixed seeds and one reported random seed: a direct call of fast-check's assert or check would
// run from one seed fast-check draws, unreported, and make CI red or green by the draw.
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** The helper is the one place that calls fast-check's runner; this file only holds examples of calls. */
const ALLOWED = new Set([join('test', 'support', 'property.ts'), relative(ROOT, fileURLToPath(import.meta.url))]);

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = join(dir, e.name);
    if (e.isDirectory()) return tsFiles(full);
    return e.name.endsWith('.ts') ? [full] : [];
  });
}

/** `line: text` of every direct run of a property in the text: fc.assert / fc.check, or them imported by name. */
function directRuns(text: string): string[] {
  const call = /\bfc\s*\.\s*(?:assert|check)\s*\(/;
  const named = /import\s*\{[^}]*\b(?:assert|check)\b[^}]*\}\s*from\s*['"]fast-check['"]/;
  const out: string[] = [];
  text.split('\n').forEach((line, i) => {
    if (call.test(line)) out.push(`${i + 1}: ${line.trim()}`);
  });
  const imported = named.exec(text);
  if (imported) out.push(`${text.slice(0, imported.index).split('\n').length}: ${imported[0].replace(/\s+/g, ' ')}`);
  return out;
}

describe('the property tests', () => {
  it('run every property through assertProperty, never fast-check’s assert or check directly', () => {
    const found = ['src', 'test', 'bench', 'scripts']
      .flatMap((d) => {
        try {
          return tsFiles(join(ROOT, d));
        } catch {
          return [];
        }
      })
      .filter((f) => !ALLOWED.has(relative(ROOT, f)))
      .flatMap((f) => directRuns(readFileSync(f, 'utf8')).map((hit) => `${relative(ROOT, f)}:${hit}`));
    expect(found, 'use assertProperty(property, params) from test/support/property.ts').toEqual([]);
  });

  it('the check finds a direct call and a named import', () => {
    expect(directRuns('await fc.assert(\n  fc.property(fc.nat(), () => true),\n);')).toEqual(['1: await fc.assert(']);
    expect(directRuns('const d = fc .check(p);')).toHaveLength(1);
    expect(directRuns("import { assert, property } from 'fast-check';\nassert(property());")).toEqual([
      "1: import { assert, property } from 'fast-check'",
    ]);
    expect(directRuns('await assertProperty(fc.property(fc.nat(), () => true));')).toEqual([]);
  });
});
