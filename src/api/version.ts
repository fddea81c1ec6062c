/**
 * shardmove's own version, read once from package.json: the CLI prints it (`--version`) and the
 * client sends it in its User-Agent, so an instance's logs show which release sent a request.
 */
import { createRequire } from 'node:module';

function readVersion(): string {
  try {
    const pkg = createRequire(import.meta.url)('../../package.json') as { version?: unknown };
    return typeof pkg.version === 'string' ? pkg.version : 'unknown';
  } catch {
    return 'unknown';
  }
}

/** The version in package.json, or `unknown` when it cannot be read. */
export const SHARDMOVE_VERSION = readVersion();
