import { describe, expect, it } from 'vitest';
import {
  ApiAmbiguousError,
  ApiForbiddenError,
  ApiHttpError,
  ApiInvalidResponseError,
  ApiNetworkError,
  ApiNotFoundError,
  ApiRateLimitedError,
  ApiTimeoutError,
  ApiUnauthorizedError,
  DryRunBlockedError,
} from '../api/errors.js';
import { DrainError, StepError, WEIGHTS_INVALID, abortError, classifyPostError } from './errors.js';

const ref = { method: 'POST', path: '/api/v4/projects/1/repository_storage_moves' };

describe('classifyPostError', () => {
  it.each([
    ['a timeout', new ApiTimeoutError(ref, 'headers'), { kind: 'ambiguous' }],
    ['a network error', new ApiNetworkError(ref, 'ECONNRESET'), { kind: 'ambiguous' }],
    ['an unknown outcome', new ApiAmbiguousError(ref, 502, 'HTTP 502'), { kind: 'ambiguous' }],
    ['an invalid response', new ApiInvalidResponseError(ref, 'not JSON'), { kind: 'ambiguous' }],
    ['a 5xx', new ApiHttpError(ref, 503, null, null), { kind: 'ambiguous' }],
    ['a 408', new ApiHttpError(ref, 408, null, null), { kind: 'ambiguous' }],
    ["an error that is not the client's", new Error('bug'), { kind: 'ambiguous' }],
    [
      'a 401',
      new ApiUnauthorizedError(ref, null, null, { invalidToken: true, description: 'Token was revoked.' }),
      { kind: 'fatal' },
    ],
    ['a 403', new ApiForbiddenError(ref, null, null, 'api'), { kind: 'fatal' }],
    ['a dry-run block', new DryRunBlockedError(ref), { kind: 'fatal' }],
    ['a 429', new ApiRateLimitedError(ref, null, null, 7000), { kind: 'throttled', retryAfterMs: 7000 }],
    ['a 404', new ApiNotFoundError(ref, '404 Project Not Found', null), { kind: 'gone' }],
    [
      "a 400 with GitLab's message",
      new ApiHttpError(ref, 400, 'is read-only', null),
      { kind: 'rejected', message: 'is read-only' },
    ],
    [
      'a 422 without one',
      new ApiHttpError(ref, 422, null, null),
      { kind: 'rejected', message: `POST ${ref.path}: HTTP 422` },
    ],
  ])('classifies %s', (_what, err, want) => {
    expect(classifyPostError(err)).toEqual(want);
  });
});

describe('actor errors', () => {
  it('carry their code and their class name', () => {
    expect(new StepError(WEIGHTS_INVALID, 'x')).toMatchObject({
      name: 'StepError',
      code: 'SHARDMOVE_WEIGHTS_INVALID',
      message: 'x',
    });
    const aborted = new AbortController();
    aborted.abort(new Error('received SIGINT'));
    const err = abortError(aborted.signal);
    expect(err).toBeInstanceOf(DrainError);
    expect(err).toMatchObject({
      name: 'DrainError',
      code: 'SHARDMOVE_ABORTED',
      message: 'drain interrupted: received SIGINT',
    });
  });
});
