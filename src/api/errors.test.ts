import { describe, expect, it } from 'vitest';
import { ApiUnauthorizedError } from './errors.js';

const REF = { method: 'GET', path: '/api/v4/user' };

describe('ApiUnauthorizedError', () => {
  it('names the token problem and the next step', () => {
    const revoked = new ApiUnauthorizedError(REF, 'invalid_token: Token was revoked.', null, {
      invalidToken: true,
      description: 'Token was revoked.',
    });
    expect(revoked.tokenProblem).toBe('revoked');
    expect(revoked.message).toMatch(
      /^GET \/api\/v4\/user: HTTP 401: invalid_token: Token was revoked\. \(the token was revoked: give the run a new token/,
    );
    const expired = new ApiUnauthorizedError(REF, null, null, { invalidToken: true, description: 'Token is expired.' });
    expect(expired.message).toContain('the token has expired');
    const unknown = new ApiUnauthorizedError(REF, '401 Unauthorized', null, { invalidToken: false, description: null });
    expect(unknown.tokenProblem).toBeNull();
    expect(unknown.message).toContain('the token was not accepted');
  });

  it("keeps a failed OAuth refresh's own advice", () => {
    const err = new ApiUnauthorizedError(
      REF,
      'OAuth token refresh failed: refresh answered HTTP 400 invalid_grant',
      null,
      { invalidToken: true, description: 'x', refreshFailed: true },
    );
    expect(err.message).toBe(
      'GET /api/v4/user: HTTP 401: OAuth token refresh failed: refresh answered HTTP 400 invalid_grant',
    );
  });
});
