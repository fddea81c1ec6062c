/**
 * The run's logger: pino JSON lines to a file next to the checkpoint. Secrets are redacted here, at
 * the logger, never at call sites: values under secret-looking keys, and every known secret value
 * wherever it appears (messages, errors, URLs). New values (OAuth refreshes) are added while running.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import pino from 'pino';
import type { Logger } from 'pino';
import { openForAppend } from '../../files/append.js';
import { outputTargetOf } from '../../files/atomic.js';
import { OUTPUT_NOT_A_FILE, OutputError } from '../../files/errors.js';
import { REDACTED, SecretRegistry } from '../../secrets/registry.js';
import type { Plan } from '../../plan/types.js';
import type { SecretRegistry as SecretSet } from '../../secrets/registry.js';

const SECRET_KEYS =
  /^(token|private[_-]?token|access[_-]?token|refresh[_-]?token|client[_-]?secret|authorization|password|secret|accesstoken|refreshtoken|clientsecret)$/i;
/**
 * Secret values known to the run; shared by the logger and anything else that writes text. The same
 * scrub as the clients' (../secrets/registry.ts), so a value is redacted in the same forms everywhere.
 */
export { REDACTED, SecretRegistry as SecretSet } from '../../secrets/registry.js';

function redactKeys(value: unknown, depth = 0): unknown {
  if (depth > 8 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => redactKeys(v, depth + 1));
  const out: Record<string, unknown> = {};
  // An error's message, stack and cause are not enumerable: keep them, or the log loses the cause of a failure.
  if (value instanceof Error) {
    out['type'] = value.name;
    out['message'] = value.message;
    out['stack'] = value.stack;
    if (value.cause !== undefined) out['cause'] = redactKeys(value.cause, depth + 1);
  }
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    out[k] = SECRET_KEYS.test(k) && v !== null && v !== undefined ? REDACTED : redactKeys(v, depth + 1);
  }
  return out;
}

function notAFile(file: string, what: string): OutputError {
  return new OutputError(
    OUTPUT_NOT_A_FILE,
    `the run's log ${file} is ${what}; shardmove appends only to a regular file: move it away and run again`,
  );
}

/** Throws SHARDMOVE_OUTPUT_NOT_A_FILE when something other than a regular file is at the log's name (before any work). */
export function refuseLogName(file: string): void {
  const at = outputTargetOf(file);
  if (at.kind === 'other') throw notAFile(file, at.what);
}

/**
 * A logger appending synchronously to `file` (so nothing is lost when the process exits). Only a regular
 * file is appended to (src/files/append.ts): a symlink, FIFO or device at the log's name beside the
 * checkpoint throws SHARDMOVE_OUTPUT_NOT_A_FILE and nothing is written through it.
 */
export function createRunLogger(file: string, secrets: SecretSet, level = 'info'): Logger {
  mkdirSync(dirname(file), { recursive: true });
  const opened = openForAppend(file, 0o600);
  if ('error' in opened) throw opened.error;
  if ('refused' in opened) throw notAFile(file, opened.refused);
  return pino(
    {
      level,
      base: { pid: process.pid },
      // Errors are serialized by redactKeys (under any key); pino's own err serializer would run after it.
      serializers: { err: (e: unknown) => e },
      formatters: { log: (obj) => redactKeys(obj) as Record<string, unknown> },
      hooks: { streamWrite: (s) => secrets.scrub(s) },
    },
    pino.destination({ dest: opened.fd, sync: true }),
  );
}

/** Every secret of the plan, for the log, the reports and the errors to scrub (run and revert alike). */
export function secretsOf(plan: Plan): SecretSet {
  const secrets = new SecretRegistry();
  const creds = plan.instance.credentials;
  if (creds.type === 'token') secrets.add(creds.token);
  else secrets.add(creds.accessToken, creds.refreshToken, creds.clientSecret);
  if (plan.prometheus?.token) secrets.add(plan.prometheus.token);
  return secrets;
}
