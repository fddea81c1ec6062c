import { describe, expect, it } from 'vitest';
import { REDACTED, SecretRegistry, resolvedSecrets, scrubServerText } from './registry.js';

const TOKEN = 'glpat-Kq4Zr8Xm2Vv6Jd9Nc3Bt';
const OAUTH = 'Aq7+Lk4/Hw9Rt2Ge6Uy=';

describe('the secret registry', () => {
  it('replaces a secret raw, JSON-escaped, URL-encoded and form-encoded', () => {
    const r = new SecretRegistry();
    r.add(TOKEN, OAUTH);
    expect(r.scrub(`Authorization: Bearer ${TOKEN}; again ${TOKEN}.`)).toBe(
      `Authorization: Bearer ${REDACTED}; again ${REDACTED}.`,
    );
    expect(r.scrub(`q=${encodeURIComponent(OAUTH)}&b`)).toBe(`q=${REDACTED}&b`);
    expect(r.scrub(`body ${new URLSearchParams({ t: OAUTH }).toString()}`)).toBe(`body t=${REDACTED}`);
    expect(r.scrub(JSON.stringify({ echo: `a "${OAUTH}" b` }))).not.toContain('Lk4');
  });

  it('replaces a secret cut short, down to its first 12 characters, and nothing shorter', () => {
    const r = new SecretRegistry();
    r.add(TOKEN);
    expect(r.scrub(`Bearer ${TOKEN.slice(0, 16)}...`)).toBe(`Bearer ${REDACTED}...`);
    expect(r.scrub(`Bearer ${TOKEN.slice(0, 12)}`)).toBe(`Bearer ${REDACTED}`);
    // Eleven characters of a token's head is how every token of its type starts.
    expect(r.scrub(`Bearer ${TOKEN.slice(0, 11)}`)).toBe(`Bearer ${TOKEN.slice(0, 11)}`);
    // The whole value followed by more text: only the value goes.
    expect(r.scrub(`${TOKEN}xyz`)).toBe(`${REDACTED}xyz`);
  });

  it('leaves values too short to be tokens alone, and takes a value that contains another whole', () => {
    const r = new SecretRegistry();
    r.add('abc', '', null, undefined, 'tok-Zx81', 'tok-Zx81-and-more-Q2');
    expect(r.scrub('abc tok-Zx81-and-more-Q2 tok-Zx81')).toBe(`abc ${REDACTED} ${REDACTED}`);
  });

  it('is fed once for the process, and scrubServerText adds what a client holds on its own', () => {
    const planSecret = 'prom-Nw8Zp3Hc6Jb1Tk7Rq2Vx9';
    resolvedSecrets.add(planSecret);
    expect(scrubServerText(`echo ${planSecret} and typed-Yy5Uu7Ii9Oo1`, ['typed-Yy5Uu7Ii9Oo1'])).toBe(
      `echo ${REDACTED} and ${REDACTED}`,
    );
  });
});
