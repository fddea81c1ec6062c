/**
 * The plan module's errors. Every problem carries the file, the 1-based line and column of the
 * offending YAML node and the field's dotted path, so an operator can fix all of them in one pass.
 */
import { ShardmoveError, defineErrorCodes } from '../shared/errors.js';

/** Errors stop the plan from loading; warnings are reported and the plan still loads. */
export type ProblemSeverity = 'error' | 'warning';

/** One finding about a plan, located at the YAML node it is about. */
export interface PlanProblem {
  file: string;
  /** 1-based. */
  line: number;
  /** 1-based. */
  col: number;
  /** Dotted field path (`move.to`, `move.from[1]`, `weights.cluster`); empty for the whole file. */
  path: string;
  message: string;
  severity: ProblemSeverity;
  /** The named rule that produced the problem (rules.ts), when one did. */
  rule?: string;
}

/** `file:line:col: path: message`, the one line format used on stderr and in PlanError messages. */
export function formatProblem(p: PlanProblem): string {
  const where = `${p.file}:${p.line}:${p.col}`;
  const prefix = p.severity === 'warning' ? 'warning: ' : '';
  const rule = p.rule ? ` [${p.rule}]` : '';
  return p.path ? `${where}: ${prefix}${p.path}: ${p.message}${rule}` : `${where}: ${prefix}${p.message}${rule}`;
}

/** Orders problems by position so the output reads top to bottom like the file (stable: ties keep field order). */
export function sortProblems(problems: readonly PlanProblem[]): PlanProblem[] {
  return [...problems].sort((a, b) => a.line - b.line || a.col - b.col);
}

/** The plan module's error codes, with their meanings for operators (docs/errors.md). */
export const PLAN_CODES = defineErrorCodes('plan', {
  SHARDMOVE_PLAN_INVALID:
    'The plan cannot be used: every problem is printed with file:line:col (a window that does not parse is one of them). Nothing was contacted or written.',
});

/** Code of PlanError. */
export const PLAN_INVALID = PLAN_CODES.SHARDMOVE_PLAN_INVALID;

/**
 * The plan cannot be used. `problems` holds every error (and, kept apart, the warnings found on the
 * way); the message lists them all, one per line, errors first. Secret values never appear in it.
 */
export class PlanError extends ShardmoveError<typeof PLAN_INVALID> {
  readonly problems: PlanProblem[];
  readonly warnings: PlanProblem[];

  constructor(file: string, problems: PlanProblem[], warnings: PlanProblem[] = []) {
    const errors = sortProblems(problems);
    const sortedWarnings = sortProblems(warnings);
    const count = errors.length === 1 ? '1 problem' : `${errors.length} problems`;
    const lines = [...errors, ...sortedWarnings].map(formatProblem);
    super(PLAN_INVALID, [`invalid plan ${file} (${count}):`, ...lines].join('\n'));
    this.problems = errors;
    this.warnings = sortedWarnings;
  }
}

/**
 * A file the plan names (the plan itself, a `*_file` secret) is refused before it is read: a directory
 * or a device (`ENOTFILE`), or a plan over the size limit (`EFBIG`). Caught inside this module and
 * reported as a PlanProblem the way a failed read is, naming its code (`cannot read it (ENOTFILE)`),
 * which is why the codes have the form of Node's errno codes.
 */
export class PlanFileError extends ShardmoveError<'ENOTFILE' | 'EFBIG'> {
  constructor(
    code: 'ENOTFILE' | 'EFBIG',
    readonly file: string,
  ) {
    super(code, code === 'ENOTFILE' ? `${file}: not a file` : `${file}: too large`);
  }
}
