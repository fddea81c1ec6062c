/**
 * The run's logger: pino JSON lines to a file next to the checkpoint. Secrets are redacted here, at
 * the logger, never at call sites: values under secret-looking keys, and every known secret value
 * wherever it appears (messages, errors, URLs). New values (OAuth refreshes) are added while running.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import pino from 'pino';
import type { Logger } from 'pino';

const SECRET_KEYS = /^(token|private[_-]?token|access[_-]?token|refresh[_-]?token|client[_-]?secret|authorization|password|secret|accesstoken|refreshtoken|clientsecret)$/i;
export const REDACTED = '[REDACTED]';

/** Secret values known to the run; shared by the logger and anything else that writes text. */
export class SecretSet {
  readonly #values = new Set<string>();

  add(...values: (string | null | undefined)[]): void {
    // Very short values would redact ordinary words; real tokens are long.
    for (const v of values) if (v && v.length >= 6) this.#values.add(v);
  }

  /** Replaces every known secret (raw or JSON-escaped) in `text`. */
  scrub(text: string): string {
    let out = text;
    for (const v of this.#values) {
      out = out.split(v).join(REDACTED);
      const escaped = JSON.stringify(v).slice(1, -1);
      if (escaped !== v) out = out.split(escaped).join(REDACTED);
    }
    return out;
  }
}

function redactKeys(value: unknown, depth = 0): unknown {
  if (depth > 8 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => redactKeys(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    out[k] = SECRET_KEYS.test(k) && v !== null && v !== undefined ? REDACTED : redactKeys(v, depth + 1);
  }
  return out;
}

/** A logger writing synchronously to `file` (so nothing is lost when the process exits). */
export function createRunLogger(file: string, secrets: SecretSet, level = 'info'): Logger {
  mkdirSync(dirname(file), { recursive: true });
  return pino(
    {
      level,
      base: { pid: process.pid },
      formatters: { log: (obj) => redactKeys(obj) as Record<string, unknown> },
      hooks: { streamWrite: (s) => secrets.scrub(s) },
    },
    pino.destination({ dest: file, sync: true, mkdir: true }),
  );
}
