/**
 * Loading a copy plan (`shardmove copy`): the same YAML reading, ${VAR} expansion, token scan and
 * file:line:col problems as a move plan, with the copy schema. A plan is a copy plan when its
 * top-level mapping has a `copy` key; `isCopyPlanText` says which loader a command should use.
 */
import { createHash } from 'node:crypto';
import { dirname } from 'node:path';
import type { Node } from 'yaml';
import { LineCounter } from 'yaml';
import type { PlanProblem } from './errors.js';
import { PlanError } from './errors.js';
import { PLAN_YAML_LIMITS, readPlanDocument, readPlanFile, readerOf, topLevelKey } from './load.js';
import { readCopyPlanTree } from './copy-schema.js';
import type { CopyPlan } from './copy-types.js';
import { redact } from './secrets.js';
import { parseYaml } from '../shared/yaml-input.js';

export interface LoadedCopyPlan {
  plan: CopyPlan;
  /** sha256 hex over the normalised plan: a checkpoint refuses to resume under another one. */
  hash: string;
  warnings: PlanProblem[];
  file: string;
}

/**
 * Whether the text is a copy plan (a mapping with a top-level `copy`); false for anything unparsable
 * or over the YAML limits (the move loader then reports why).
 */
export function isCopyPlanText(text: string): boolean {
  try {
    const { doc } = parseYaml(text, { lineCounter: new LineCounter(), uniqueKeys: false }, PLAN_YAML_LIMITS);
    return doc !== undefined && topLevelKey(doc, 'copy') !== undefined;
  } catch {
    return false;
  }
}

/** Parses and validates copy plan text; throws PlanError with every problem, nothing else. Pure. */
export function parseCopyPlanText(
  text: string,
  file: string,
  opts: { env: Readonly<Record<string, string | undefined>>; baseDir?: string },
): LoadedCopyPlan {
  // Copy plans hold no secrets: a *_file reader is never needed.
  const r = readerOf(text, file, { ...opts, readFile: () => undefined, resolveSecrets: false });
  let plan: CopyPlan | undefined;
  readPlanDocument(r, (doc) => {
    if (doc.errors.length === 0) plan = readCopyPlanTree(r, (doc.contents ?? null) as Node | null);
  });
  const clean = (p: PlanProblem): PlanProblem => ({ ...p, message: redact(p.message), path: redact(p.path) });
  if (r.errors.length > 0 || !plan) throw new PlanError(file, r.errors.map(clean), r.warnings.map(clean));
  return { plan, hash: hashCopyPlan(plan), warnings: r.warnings.map(clean), file };
}

/** Reads and validates a copy plan file; throws PlanError only. */
export async function loadCopyPlan(
  file: string,
  opts: { env: Readonly<Record<string, string | undefined>>; cwd: string },
): Promise<LoadedCopyPlan> {
  const { abs, text } = await readPlanFile(file, opts.cwd);
  return parseCopyPlanText(text, file, { env: opts.env, baseDir: dirname(abs) });
}

/** Whether the plan file is a copy plan; false when it cannot be read (the move loader then reports why). */
export async function isCopyPlanFile(file: string, cwd: string): Promise<boolean> {
  try {
    return isCopyPlanText((await readPlanFile(file, cwd)).text);
  } catch {
    return false;
  }
}

export function hashCopyPlan(plan: CopyPlan): string {
  return createHash('sha256').update(JSON.stringify(plan)).digest('hex');
}
