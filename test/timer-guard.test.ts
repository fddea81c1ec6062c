/**
 * The lint guard that keeps every timer on the injected clock (eslint.config.js): a real timer in
 * src/ is refused outside src/shared/clock.ts, whatever the way it is reached; tests and a turn of
 * the event loop are free.
 */
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const eslint = new ESLint({ cwd: new URL('..', import.meta.url).pathname });

async function rulesHit(code: string, filePath: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return (result?.messages ?? []).map((m) => m.ruleId ?? m.message);
}

describe('every timer of src/ goes through the injected clock', () => {
  it.each([
    ['setTimeout(() => undefined, 1);', 'src/runtime/probe.ts', 'no-restricted-globals'],
    ['export const t = setInterval(() => undefined, 1);', 'src/sandbox/probe.ts', 'no-restricted-globals'],
    ['clearTimeout(undefined);', 'src/notify/probe.ts', 'no-restricted-globals'],
    ['globalThis.setTimeout(() => undefined, 1);', 'src/api/probe.ts', 'no-restricted-properties'],
    ['export const s = AbortSignal.timeout(1);', 'src/cli/probe.ts', 'no-restricted-properties'],
    [
      "import { setTimeout } from 'node:timers/promises';\nvoid setTimeout;",
      'src/cli/probe.ts',
      'no-restricted-imports',
    ],
    ["import { setInterval } from 'node:timers';\nvoid setInterval;", 'src/sandbox/probe.ts', 'no-restricted-imports'],
    ['export const t = setTimeout(() => undefined, 1);', 'src/machine/probe.ts', 'no-restricted-globals'],
    [
      'export const t = globalThis.setInterval(() => undefined, 1);',
      'src/machine/probe.ts',
      'no-restricted-properties',
    ],
  ])('refuses %j in %s (%s)', async (code, file, rule) => {
    expect(await rulesHit(code, file)).toContain(rule);
  });

  it.each([
    ['export const t = globalThis.setTimeout(() => undefined, 1);', 'src/shared/clock.ts'],
    ['setTimeout(() => undefined, 1);', 'src/runtime/probe.test.ts'],
    ['setImmediate(() => undefined);', 'src/sandbox/probe.ts'],
    [
      "import { systemClock } from '../shared/clock.js';\nsystemClock.setTimeout(() => undefined, 1);",
      'src/notify/probe.ts',
    ],
  ])('lets %j in %s be', async (code, file) => {
    expect(await rulesHit(code, file)).toEqual([]);
  });
});
