import { describe, expect, it } from 'vitest';
import type { Release } from './token-types.js';
import { TOKEN_TYPES, atLeast, identifyToken, isDeletable, parseRelease } from './token-types.js';

const config = { personal_access_token_prefix: 'glpat-' };
const NEWEST: Release = [17, 11];

describe('parseRelease / atLeast', () => {
  it('reads major.minor and ignores the rest', () => {
    expect(parseRelease('17.11.0')).toEqual([17, 11]);
    expect(parseRelease('17.9.3-ee')).toEqual([17, 9]);
    expect(parseRelease('18.0')).toEqual([18, 0]);
    expect(parseRelease('garbage')).toEqual([99, 0]);
  });
  it('compares numerically, not as text', () => {
    expect(atLeast([17, 10], [17, 9])).toBe(true);
    expect(atLeast([17, 9], [17, 10])).toBe(false);
    expect(atLeast([18, 0], [17, 11])).toBe(true);
    expect(atLeast([16, 11], [17, 5])).toBe(false);
  });
});

describe('identifyToken', () => {
  it.each([
    ['glpat-abc', 'access'],
    ['gldt-abc', 'deploy'],
    ['glft-abc', 'feed'],
    ['gloas-abc', 'oauth_secret'],
    ['glagent-abc', 'cluster_agent'],
    ['glrt-abc', 'runner'],
    ['glrtr-abc', 'runner'],
    ['glptt-abc', 'pipeline_trigger'],
    ['glcbt-abc', 'job'],
    ['glffct-abc', 'feature_flags_client'],
    ['_service_session=abc', 'session'],
    ['glimt-abc', 'incoming_email'],
  ])('%s is a %s token', (token, kind) => {
    expect(identifyToken(token, config, NEWEST)?.def.kind).toBe(kind);
  });

  it('knows nothing else', () => {
    expect(identifyToken('glsoat-abc', config, NEWEST)).toBeNull();
    expect(identifyToken('_gitlab_session=abc', config, NEWEST)).toBeNull();
    expect(identifyToken('', config, NEWEST)).toBeNull();
  });

  it('accepts the current custom prefix and the default, not older ones', () => {
    const custom = { personal_access_token_prefix: 'corp-' };
    expect(identifyToken('corp-x', custom, NEWEST)?.prefix).toBe('corp-');
    expect(identifyToken('glpat-x', custom, NEWEST)?.prefix).toBe('glpat-');
    expect(identifyToken('acme-x', custom, NEWEST)).toBeNull();
  });

  it('tries types in GitLab order, so deploy and feed win over a custom prefix that shadows them', () => {
    expect(identifyToken('gldt-x', { personal_access_token_prefix: 'gl' }, NEWEST)?.def.kind).toBe('deploy');
    expect(identifyToken('glft-x', { personal_access_token_prefix: 'gl' }, NEWEST)?.def.kind).toBe('feed');
    expect(TOKEN_TYPES.map((t) => t.kind).slice(0, 3)).toEqual(['deploy', 'feed', 'access']);
  });

  it('prefers the longer of two matching access prefixes', () => {
    expect(identifyToken('glpat-corp-x', { personal_access_token_prefix: 'glpat-corp-' }, NEWEST)?.prefix).toBe(
      'glpat-corp-',
    );
  });

  it('knows only the types of the release', () => {
    expect(identifyToken('glft-x', config, [17, 5])).toBeNull();
    expect(identifyToken('glft-x', config, [17, 6])?.def.kind).toBe('feed');
    expect(identifyToken('glrt-x', config, [17, 6])).toBeNull();
    expect(identifyToken('glcbt-x', config, [17, 8])).toBeNull();
    expect(identifyToken('glcbt-x', config, [17, 9])?.def.kind).toBe('job');
  });
});

describe('isDeletable', () => {
  const def = (kind: string) => TOKEN_TYPES.find((t) => t.kind === kind)!;
  const off = () => false;
  const on = () => true;
  it('follows the DELETE history', () => {
    expect(isDeletable(def('access'), [17, 7], off)).toBe(true);
    expect(isDeletable(def('runner'), [17, 8], off)).toBe(false);
    expect(isDeletable(def('runner'), [17, 9], off)).toBe(true);
    expect(isDeletable(def('session'), [17, 10], off)).toBe(false);
    expect(isDeletable(def('session'), [17, 11], off)).toBe(true);
  });
  it('never deletes job tokens; triggers need their flag from 17.10', () => {
    expect(isDeletable(def('job'), [18, 0], on)).toBe(false);
    expect(isDeletable(def('pipeline_trigger'), [17, 11], off)).toBe(false);
    expect(isDeletable(def('pipeline_trigger'), [17, 9], on)).toBe(false);
    expect(isDeletable(def('pipeline_trigger'), [17, 10], on)).toBe(true);
  });
});
