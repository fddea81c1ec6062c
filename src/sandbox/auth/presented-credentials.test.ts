import { describe, expect, it } from 'vitest';
import { UNUSABLE, parseCookies, readPresentedCredentials } from './presented-credentials.js';

describe('parseCookies', () => {
  it('splits pairs, trims, unquotes and decodes', () => {
    const c = parseCookies(' a=1;b = "two" ; _service_session=x%3Dy ;flag; =nameless');
    expect([...c]).toEqual([
      ['a', '1'],
      ['b', 'two'],
      ['_service_session', 'x=y'],
    ]);
  });
  it('keeps the first of repeated names and tolerates bad encoding', () => {
    expect(parseCookies('s=first; s=second').get('s')).toBe('first');
    expect(parseCookies('s=%E0%A4%A').get('s')).toBe('%E0%A4%A');
  });
  it('keeps = inside values and accepts several headers', () => {
    expect(parseCookies('s=a=b').get('s')).toBe('a=b');
    expect(parseCookies(['a=1', 'b=2']).get('b')).toBe('2');
    expect(parseCookies(undefined).size).toBe(0);
  });
});

describe('readPresentedCredentials', () => {
  it('reads each method from its header or parameter', () => {
    expect(readPresentedCredentials({ 'private-token': ' t1 ' }, {})).toEqual({ privateToken: 't1' });
    expect(readPresentedCredentials({}, { private_token: 't2' })).toEqual({ privateToken: 't2' });
    expect(readPresentedCredentials({ authorization: 'bearer t3' }, {})).toEqual({ bearer: 't3' });
    expect(readPresentedCredentials({}, { access_token: 't4' })).toEqual({ accessToken: 't4' });
    expect(readPresentedCredentials({ 'job-token': 't5' }, {})).toEqual({ jobToken: 't5' });
    expect(readPresentedCredentials({}, { job_token: 't6' })).toEqual({ jobToken: 't6' });
    expect(readPresentedCredentials({ cookie: '_service_session=t7' }, {})).toEqual({ session: 't7' });
    expect(readPresentedCredentials({ 'deploy-token': 't8' }, {})).toEqual({ deployToken: 't8' });
    expect(readPresentedCredentials({ sudo: 'bob' }, {})).toEqual({ sudo: 'bob' });
    expect(readPresentedCredentials({}, { sudo: 2 })).toEqual({ sudo: '2' });
  });
  it('treats blanks as absent, other schemes as no bearer, and non-strings as unusable', () => {
    expect(readPresentedCredentials({ 'private-token': '  ' }, { private_token: '' })).toEqual({});
    expect(readPresentedCredentials({ authorization: 'Basic abc' }, {})).toEqual({});
    expect(readPresentedCredentials({ authorization: 'Bearer a b' }, {})).toEqual({ bearer: UNUSABLE });
    expect(readPresentedCredentials({}, { private_token: ['a'] })).toEqual({ privateToken: UNUSABLE });
    expect(readPresentedCredentials({}, { sudo: { id: 1 } })).toEqual({ sudo: UNUSABLE });
  });
  it('prefers the parameter over the header, as GitLab does', () => {
    expect(readPresentedCredentials({ 'private-token': 'h' }, { private_token: 'p' })).toEqual({ privateToken: 'p' });
    expect(readPresentedCredentials({ 'job-token': 'h' }, { job_token: 'p' })).toEqual({ jobToken: 'p' });
    expect(readPresentedCredentials({ sudo: 'h' }, { sudo: 'p' })).toEqual({ sudo: 'p' });
  });
});
