/**
 * The base of every error shardmove throws on purpose, and the one way to read a code off anything
 * thrown. Codes are stable strings (`SHARDMOVE_PLAN_INVALID`, `SHARDMOVE_API_TIMEOUT` ...): modules
 * match on `code`, never on the class, and main.ts maps codes to exit codes (cli/exit-codes.ts).
 * The sandbox keeps its own error classes (it imports nothing of the orchestrator) but carries
 * codes the same way, and `codeOf` reads them alike.
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
