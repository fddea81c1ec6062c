// The import graph of src/, read from the source text: relative `import ... from`, `export ... from`,
// side-effect and dynamic imports, `.js` resolved to the `.ts` file. No module may reach itself
// (a cycle makes load order matter and usually means two ideas share a file), and the walls of
// docs/architecture.md hold: the sandbox imports nothing outside src/sandbox but the shared floor
// (src/shared), the floor imports nothing outside itself, and of the orchestrator only cli/ imports
// the sandbox. ESLint checks the walls too, by path patterns; this checks resolved files.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../src', import.meta.url));

const STATIC = /^\s*(?:import|export)\s+(?:type\s+)?[\w*{}\s,$]*?\s*from\s*['"](\.{1,2}\/[^'"]+)['"]/gm;
const SIDE_EFFECT = /^\s*import\s*['"](\.{1,2}\/[^'"]+)['"]/gm;
const DYNAMIC = /\bimport\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(full);
    return e.name.endsWith('.ts') ? [full] : [];
  });
}

/** Paths relative to src/, e.g. `sandbox/moves/engine.ts`. */
function readGraph(): { graph: Map<string, string[]>; unresolved: string[] } {
  const graph = new Map<string, string[]>();
  const unresolved: string[] = [];
  for (const file of sourceFiles(SRC)) {
    const text = readFileSync(file, 'utf8');
    const targets = new Set<string>();
    for (const re of [STATIC, SIDE_EFFECT, DYNAMIC]) {
      for (const m of text.matchAll(re)) {
        const target = resolve(dirname(file), (m[1] as string).replace(/\.js$/, '.ts'));
        if (existsSync(target)) targets.add(relative(SRC, target));
        else unresolved.push(`${relative(SRC, file)} -> ${m[1]}`);
      }
    }
    graph.set(relative(SRC, file), [...targets].sort());
  }
  return { graph, unresolved };
}

/** Every cycle found by a depth-first walk, each as the path that closes it. */
function findCycles(graph: Map<string, string[]>): string[][] {
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  const visit = (node: string): void => {
    state.set(node, 'open');
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === 'open') cycles.push([...stack.slice(stack.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(node, 'done');
  };
  for (const node of [...graph.keys()].sort()) if (!state.has(node)) visit(node);
  return cycles;
}

const inSandbox = (path: string) => path.startsWith('sandbox/');
const onFloor = (path: string) => path.startsWith('shared/');
/** A test file's own tooling (test/support, e.g. the property seeds): not part of the product's graph. */
const testTooling = (from: string, to: string) => from.endsWith('.test.ts') && to.startsWith('../test/support/');

describe('the import graph of src/', () => {
  const { graph, unresolved } = readGraph();

  it('is read completely (every relative import names an existing file)', () => {
    expect(graph.size).toBeGreaterThan(50);
    expect(unresolved).toEqual([]);
  });

  it('has no cycles', () => {
    expect(findCycles(graph).map((c) => c.join(' -> '))).toEqual([]);
  });

  it('keeps the sandbox to itself and the shared floor', () => {
    const outward = [...graph].flatMap(([from, tos]) =>
      inSandbox(from)
        ? tos.filter((to) => !inSandbox(to) && !onFloor(to) && !testTooling(from, to)).map((to) => `${from} -> ${to}`)
        : [],
    );
    expect(outward).toEqual([]);
  });

  it('keeps the shared floor below both sides (it imports nothing outside itself)', () => {
    const upward = [...graph].flatMap(([from, tos]) =>
      onFloor(from) ? tos.filter((to) => !onFloor(to)).map((to) => `${from} -> ${to}`) : [],
    );
    expect(upward).toEqual([]);
  });

  it('lets only cli/ import the sandbox', () => {
    const inward = [...graph].flatMap(([from, tos]) =>
      !inSandbox(from) && !from.startsWith('cli/') ? tos.filter(inSandbox).map((to) => `${from} -> ${to}`) : [],
    );
    expect(inward).toEqual([]);
  });

  it('finds a cycle when there is one (the walk itself)', () => {
    const g = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts']],
      ['d.ts', ['a.ts']],
    ]);
    expect(findCycles(g)).toEqual([['a.ts', 'b.ts', 'c.ts', 'a.ts']]);
    expect(
      findCycles(
        new Map([
          ['a.ts', ['b.ts']],
          ['b.ts', []],
        ]),
      ),
    ).toEqual([]);
  });
});
