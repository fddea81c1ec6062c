/**
 * Verification after every method: for every repository on the source, the target has a repository
 * at the same relative path whose refs point at the same objects (`git for-each-ref` on both sides).
 * Differences are data, reported one per line; the command maps "any difference" to exit 1.
 */
import { join, posix } from 'node:path';
import type { RefMap } from './refs.js';
import { readRefs } from './refs.js';

export type Difference =
  | { repo: string; kind: 'missing-repository' }
  | { repo: string; kind: 'unreadable-source' }
  | { repo: string; kind: 'missing-ref'; ref: string; source: string }
  | { repo: string; kind: 'extra-ref'; ref: string; target: string }
  | { repo: string; kind: 'different-ref'; ref: string; source: string; target: string };

export interface VerifyResult {
  checked: number;
  differences: Difference[];
}

/** Compares two ref maps of one repository. Pure. */
export function compareRefs(repo: string, source: RefMap, target: RefMap): Difference[] {
  const out: Difference[] = [];
  for (const [ref, oid] of Object.entries(source).sort()) {
    const t = target[ref];
    if (t === undefined) out.push({ repo, kind: 'missing-ref', ref, source: oid });
    else if (t !== oid) out.push({ repo, kind: 'different-ref', ref, source: oid, target: t });
  }
  for (const [ref, oid] of Object.entries(target).sort())
    if (!(ref in source)) out.push({ repo, kind: 'extra-ref', ref, target: oid });
  return out;
}

/** Verifies every listed repository; `onRepo` is called after each, for the progress line. */
export async function verifyCopy(opts: {
  sourceRoot: string;
  target: { host: string | null; path: string };
  repos: readonly string[];
  signal?: AbortSignal;
  onRepo?: (checked: number) => void;
}): Promise<VerifyResult> {
  const differences: Difference[] = [];
  let checked = 0;
  for (const rel of opts.repos) {
    const source = await readRefs(null, join(opts.sourceRoot, rel), opts.signal);
    const target = await readRefs(opts.target.host, posix.join(opts.target.path, rel), opts.signal);
    if (source === null) differences.push({ repo: rel, kind: 'unreadable-source' });
    else if (target === null) differences.push({ repo: rel, kind: 'missing-repository' });
    else differences.push(...compareRefs(rel, source, target));
    checked += 1;
    opts.onRepo?.(checked);
  }
  return { checked, differences };
}

/** One line per difference, for the report. */
export function formatDifference(d: Difference): string {
  switch (d.kind) {
    case 'missing-repository':
      return `${d.repo}: missing on the target`;
    case 'unreadable-source':
      return `${d.repo}: could not read its refs on the source`;
    case 'missing-ref':
      return `${d.repo}: ${d.ref} missing on the target (source ${d.source})`;
    case 'extra-ref':
      return `${d.repo}: ${d.ref} only on the target (${d.target})`;
    case 'different-ref':
      return `${d.repo}: ${d.ref} is ${d.target} on the target, ${d.source} on the source`;
  }
}
