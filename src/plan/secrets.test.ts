import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GITLAB_TOKEN_PREFIXES, findTokenLike, hasTokenLike, redact, showValue } from './secrets.js';
import { assertProperty } from '../../test/support/property.js';

describe('token detection', () => {
  it.each(GITLAB_TOKEN_PREFIXES)('finds %s tokens', (prefix) => {
    expect(hasTokenLike(`${prefix}AbCdEfGhIjKlMnOpQrSt`)).toBe(true);
    expect(hasTokenLike(`https://oauth2:${prefix}AbCdEfGhIjKlMnOpQrSt@gitlab.example.com`)).toBe(true);
  });

  it('finds the sandbox tokens and custom-prefix tokens with a random-looking body', () => {
    expect(hasTokenLike('glpat-sandbox-root-api-sudo-0001')).toBe(true);
    expect(hasTokenLike('gloas-sandbox-application-secret-0001')).toBe(true);
    expect(hasTokenLike('acme-x8Kd2mQpL0vZ7rT4yWnB')).toBe(true);
  });

  it('leaves ordinary plan text alone', () => {
    for (const s of [
      'nfs-1',
      'cluster',
      'retire-nfs',
      'gitaly-cluster-praefect-east-01',
      'https://gitlab.example.com',
      'glpat-short',
      '${GITLAB_TOKEN}',
      'projects',
    ]) {
      expect(hasTokenLike(s), s).toBe(false);
    }
  });

  it('reports spans', () => {
    const text = 'a: glpat-abcdefghijklmnopqrst # x';
    expect(findTokenLike(text)).toEqual([{ start: 3, end: 29 }]);
  });
});

describe('redaction', () => {
  it('removes known secrets and token-looking text', () => {
    expect(redact('x sekret-value y glpat-abcdefghijklmnopqrst z', ['sekret-value'])).toBe('x *** y *** z');
  });

  it('showValue never shows a token', () => {
    assertProperty(
      fc.property(
        fc.constantFrom(...GITLAB_TOKEN_PREFIXES),
        fc.stringMatching(/^[A-Za-z0-9_-]{20,40}$/),
        (prefix, body) => {
          expect(showValue(`${prefix}${body}`)).not.toContain(body);
          expect(redact(`before ${prefix}${body} after`)).not.toContain(body);
        },
      ),
    );
  });
});
