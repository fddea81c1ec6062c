import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { REDACTED, SecretSet, createRunLogger } from './logger.js';

const TOKEN = 'glpat-LoggerTestK7v2Qx9Zr4Tn';
const OAUTH = 'Oa+Lg/Test=Refresh7Yb3Wc';
let dir: string | undefined;

function logger() {
  dir = mkdtempSync(join(tmpdir(), 'shardmove-logger-'));
  const file = join(dir, 'run.log');
  const secrets = new SecretSet();
  secrets.add(TOKEN);
  const log = createRunLogger(file, secrets, 'debug');
  const lines = () => {
    log.flush();
    return readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  };
  return { log, secrets, lines, text: () => readFileSync(file, 'utf8') };
}

afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

describe('run logger redaction', () => {
  it('redacts values under secret-named keys at any depth', () => {
    const { log, lines } = logger();
    log.info(
      {
        headers: { 'PRIVATE-TOKEN': 'x-value-1', authorization: 'Bearer y-value-2' },
        oauth: { refresh_token: 'z-value-3' },
        token: null,
      },
      'm',
    );
    const [line] = lines();
    expect(line).toMatchObject({
      headers: { 'PRIVATE-TOKEN': REDACTED, authorization: REDACTED },
      oauth: { refresh_token: REDACTED },
      token: null,
    });
  });

  it('scrubs known values raw, JSON-escaped and URL-encoded, including values added later', () => {
    const { log, secrets, text } = logger();
    log.info({ url: `/x?t=${TOKEN}` }, `message ${TOKEN}`);
    secrets.add(OAUTH);
    log.info({ form: `refresh_token=${encodeURIComponent(OAUTH)}`, quoted: JSON.stringify({ v: OAUTH }) }, 'refreshed');
    const out = text();
    expect(out).not.toContain(TOKEN);
    expect(out).not.toContain(OAUTH);
    expect(out).not.toContain(encodeURIComponent(OAUTH));
    expect(out.split(REDACTED).length - 1).toBeGreaterThanOrEqual(4);
  });

  it("keeps an error's type, message, stack and cause, scrubbed", () => {
    const { log, lines } = logger();
    class StepFailed extends Error {
      readonly code = 'SHARDMOVE_TEST';
    }
    const err = new StepFailed(`refused ${TOKEN}`, { cause: new Error('ECONNRESET') });
    err.name = 'StepFailed';
    log.error({ err }, 'step failed');
    const [line] = lines();
    const logged = line!['err'] as Record<string, unknown>;
    expect(logged['type']).toBe('StepFailed');
    expect(logged['code']).toBe('SHARDMOVE_TEST');
    expect(logged['message']).toBe(`refused ${REDACTED}`);
    expect(String(logged['stack'])).toContain('logger.test.ts');
    expect(logged['cause']).toMatchObject({ type: 'Error', message: 'ECONNRESET' });
  });
});
