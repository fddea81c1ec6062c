/**
 * A real browser for the HTML report's tests: Debian's `chromium` through playwright-core (no
 * browser download). `.ci/run` installs chromium on CI; elsewhere a machine without it skips the
 * browser tests with a message saying so, but under CI=true a missing browser is a failure.
 */
import { existsSync } from 'node:fs';

const CANDIDATES = [
  '/usr/bin/chromium',
  '/usr/bin/chromium-browser',
  '/usr/bin/google-chrome',
  '/usr/bin/google-chrome-stable',
];

/** The browser binary: $CHROMIUM_PATH, else the first of the usual places that exists; null when none. */
export function findChromium(env: Readonly<Record<string, string | undefined>> = process.env): string | null {
  if (env.CHROMIUM_PATH) return existsSync(env.CHROMIUM_PATH) ? env.CHROMIUM_PATH : null;
  return CANDIDATES.find((p) => existsSync(p)) ?? null;
}

/** Why the browser tests cannot run here, or null when they can (CI without a browser throws). */
export function browserSkipReason(env: Readonly<Record<string, string | undefined>> = process.env): string | null {
  if (findChromium(env)) return null;
  const why = `no chromium binary found (looked at ${env.CHROMIUM_PATH ?? CANDIDATES.join(', ')}; set CHROMIUM_PATH or apt-get install chromium)`;
  if (env.CI === 'true') throw new Error(`CI=true: the HTML report's browser tests must run, but ${why}`);
  return why;
}
