/**
 * `checkpoint:` where the plan's checkpoint lives, relative to the plan file's folder (default
 * `state/<name>.db` there). Its dry run's, revert's and log files take their names from it:
 * `runs/x.db` -> `runs/x.dry-run.db`, `runs/x.revert.db`, `runs/x.log`.
 *
 * A literal path: `${VAR}` is not expanded here, so that every shell, whatever its environment,
 * finds the same checkpoint (a second run must never start because a variable was unset).
 */
import type { Node } from 'yaml';
import { isScalar } from 'yaml';
import type { FieldDoc, JsonSchema } from './field-table.js';
import type { Reader } from './reader.js';

/** Names shardmove gives the other files of a plan: a checkpoint named so would collide with one. */
const DERIVED = /\.(dry-run|revert|copy)\.db$/;

export const CHECKPOINT_DOC: FieldDoc = {
  type: 'path',
  default: '`state/<name>.db` beside the plan file',
  allowed: 'a file name ending in `.db`, relative to the plan file or absolute; no `${VAR}`, no `~`',
  more: 'See [where the checkpoint is](operations.md#where-the-checkpoint-is).',
};

export const CHECKPOINT_SCHEMA: JsonSchema = {
  type: 'string',
  maxLength: 4096,
  allOf: [
    { pattern: '^[^\\u0000-\\u001f\\u007f]*$' },
    { pattern: '[^/]\\.db$' },
    { not: { pattern: '\\$\\{' } },
    { not: { pattern: '^~' } },
    { not: { pattern: DERIVED.source } },
  ],
};

/** Why a checkpoint path cannot be used, or undefined when it can (pure; the fallback reader uses it too). */
export function checkpointProblem(value: unknown): string | undefined {
  if (typeof value !== 'string') return 'expected a path (a string)';
  if (value.includes('${'))
    return 'a literal path: ${VAR} is not expanded here, so that every shell finds the same checkpoint';
  if (value.startsWith('~')) return '~ is not expanded here; write the full path, or one relative to the plan file';
  if ([...value].some((c) => c < ' ' || c === '\u007f')) return 'a path without control characters';
  if (value.length > 4096) return 'at most 4096 characters';
  if (!/[^/]\.db$/.test(value))
    return 'a file name ending in .db (its log, dry run and revert take their names from it)';
  if (DERIVED.test(value))
    return 'ends like the name shardmove gives a dry run, revert or copy checkpoint (.dry-run.db, .revert.db, .copy.db); choose another';
  return undefined;
}

export function readCheckpoint(r: Reader, node: Node, path: string): string | undefined {
  const at = r.posOf(node);
  r.mark(path, at);
  // Judged as written: a ${VAR} here is refused, not looked up.
  const raw: unknown = isScalar(node) ? node.value : undefined;
  if (typeof raw === 'string' && raw.includes('${')) {
    r.error(path, at, checkpointProblem(raw)!);
    return undefined;
  }
  const s = r.string(node, path);
  if (!s) return undefined;
  const problem = checkpointProblem(s.value);
  if (problem) {
    r.error(path, at, problem);
    return undefined;
  }
  return s.value;
}
