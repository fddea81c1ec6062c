/**
 * The base of every error shardmove throws on purpose, the one way to read a code off anything
 * thrown, and the one way to declare codes. Codes are stable strings (`SHARDMOVE_PLAN_INVALID`,
 * `SHARDMOVE_API_TIMEOUT` ...): modules match on `code`, never on the class, and main.ts maps codes
 * to exit codes (cli/exit-codes.ts). Each module declares its codes in one table in its errors.ts,
 * with `defineErrorCodes`, each code with what it means to an operator; `npm run docs` writes the
 * catalogue (docs/errors.md) from those tables. On the shared floor, so that the sandbox's errors
 * are built and declared the same way.
 */

/** An error with a stable code; `name` is the concrete class's. */
export class ShardmoveError<C extends string = string> extends Error {
  readonly code: C;

  constructor(code: C, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/**
 * The code of anything thrown: a shardmove error's, the sandbox's, or a Node system error's
 * (`ENOENT`, `EACCES`); null when it carries none (a bug, or a foreign error).
 */
export function codeOf(err: unknown): string | null {
  if (typeof err !== 'object' || err === null || !('code' in err)) return null;
  const { code } = err as { code: unknown };
  return typeof code === 'string' ? code : null;
}

/** A module's codes, each mapped to itself: `PLAN_CODES.SHARDMOVE_PLAN_INVALID` is that code, typed as itself. */
export type ErrorCodes<C extends string> = { readonly [K in C]: K };

/** One code of the catalogue: the module that declares it and what it means to an operator. */
export interface ErrorCodeEntry {
  code: string;
  module: string;
  meaning: string;
}

/** Where a table keeps its entries; a registered symbol, so the catalogue's reader finds them in any copy of this module. */
const ENTRIES = Symbol.for('shardmove.errorCodes');

const CODE = /^SHARDMOVE_[A-Z0-9]+(?:_[A-Z0-9]+)*$/;

/**
 * Declares a module's error codes, each with its meaning for operators in one line (a sentence that
 * says what happened and, where there is one, what to do). Returns the codes, each mapped to itself,
 * for the module's classes and constants to use. Throws at load for a code that is not
 * `SHARDMOVE_` and capitals, or a meaning that is empty or more than one line.
 */
export function defineErrorCodes<const T extends Record<string, string>>(
  module: string,
  meanings: T & { [K in keyof T]: K extends `SHARDMOVE_${string}` ? string : never },
): ErrorCodes<keyof T & string> {
  const entries: ErrorCodeEntry[] = Object.entries(meanings as Record<string, string>).map(([code, meaning]) => {
    if (!CODE.test(code)) throw new Error(`error code ${code} (${module}): codes are SHARDMOVE_ and capitals`);
    if (!meaning.trim() || meaning.includes('\n')) throw new Error(`error code ${code}: its meaning is one line`);
    return { code, module, meaning };
  });
  const codes = Object.fromEntries(entries.map(({ code }) => [code, code]));
  Object.defineProperty(codes, ENTRIES, { value: Object.freeze(entries) });
  return Object.freeze(codes) as ErrorCodes<keyof T & string>;
}

/** The entries of a table `defineErrorCodes` made, in declaration order; undefined for anything else. */
export function errorCodeEntries(value: unknown): readonly ErrorCodeEntry[] | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  return (value as { [ENTRIES]?: readonly ErrorCodeEntry[] })[ENTRIES];
}
