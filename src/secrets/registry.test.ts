import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { REDACTED, SecretRegistry, resolvedSecrets, scrubServerText } from './registry.js';
import { assertProperty } from '../../test/support/property.js';

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

/** Every token type GitLab prefixes, a custom prefix, and the 20-character tokens from before prefixes. */
const TOKENS = [
  ...['glpat-', 'gloas-', 'gldt-', 'glrt-', 'glrtr-', 'glptt-', 'glft-', 'glimt-', 'glcbt-', 'glagent-', 'glffct-'].map(
    (p) => `${p}q8w2e4r6t1y3u5i7o9p0`,
  ),
  'glsoat-Zq8w2e4r6t1y3u5i7o9p0xx',
  'acme-Zq8w2e4r6t1y3u5i7o9p0kk',
  'x1c2v3b4n5m6q7w8e9r0',
  'A1s2D3f4G5h6J7k8L9z0',
];

/** True when any four characters of `secret` in a row are in `text`. */
const anyPiece = (text: string, secret: string) =>
  Array.from({ length: secret.length - 3 }, (_, i) => secret.slice(i, i + 4)).some((p) => text.includes(p));

describe('pieces of a secret', () => {
  it('replaces a run of 12 characters from anywhere in a secret: its end, its middle', () => {
    const r = new SecretRegistry();
    r.add(TOKEN);
    expect(r.scrub(`...${TOKEN.slice(6)} HTTP/1.1`)).toBe(`...${REDACTED} HTTP/1.1`);
    expect(r.scrub(`[${TOKEN.slice(3, 15)}]`)).toBe(`[${REDACTED}]`);
    expect(r.scrub(`${TOKEN.slice(-12)}`)).toBe(REDACTED);
    // Eleven characters from the middle are not enough to tell a piece of a token from a word.
    expect(r.scrub(`${TOKEN.slice(4, 15)}`)).toBe(TOKEN.slice(4, 15));
  });

  it('at a cut edge, replaces any piece of a secret however short', () => {
    const r = new SecretRegistry();
    r.add(TOKEN);
    expect(r.scrub(`${TOKEN.slice(-3)} rest`, { start: true })).toBe(`${REDACTED} rest`);
    expect(r.scrub(`rest ${TOKEN.slice(0, 2)}`, { end: true })).toBe(`rest ${REDACTED}`);
    expect(r.scrub(`${TOKEN.slice(-3)} rest ${TOKEN.slice(0, 2)}`)).toBe(
      `${TOKEN.slice(-3)} rest ${TOKEN.slice(0, 2)}`,
    );
  });

  it('leaves no four characters of any token in a text cut at any offset, whichever end was cut', () => {
    for (const secret of TOKENS) {
      const r = new SecretRegistry();
      r.add(secret);
      const whole = `a run's output: Authorization: Bearer ${secret} (echoed) ${encodeURIComponent(secret)}; done`;
      assertProperty(
        fc.property(fc.nat(whole.length), fc.nat(whole.length), (a, b) => {
          const [from, to] = a <= b ? [a, b] : [b, a];
          const cut = whole.slice(from, to);
          const out = r.scrub(cut, { start: from > 0, end: to < whole.length });
          expect(anyPiece(out, secret), `${JSON.stringify(cut)} -> ${JSON.stringify(out)}`).toBe(false);
        }),
        { numRuns: 300 },
      );
    }
  });
});
