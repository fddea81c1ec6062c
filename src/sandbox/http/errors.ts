/**
 * The errors a route handler throws: SandboxHttpError, an answer with a status and GitLab's JSON
 * body (see gitlab-api.md), and the constructors of GitLab's common ones. The server turns them
 * into responses. Named apart from the orchestrator's client errors (src/api/errors.ts), which
 * describe the other end of the same HTTP exchanges.
 */
/** A response header's value (set-cookie style headers take a list). */
export type HeaderValue = string | string[];

/** An error answer with a status and a GitLab-shaped JSON body. */
export class SandboxHttpError extends Error {
  readonly status: number;
  readonly body: unknown;
  readonly headers: Record<string, HeaderValue>;

  constructor(status: number, body: unknown, headers: Record<string, HeaderValue> = {}) {
    super(typeof body === 'object' && body !== null ? JSON.stringify(body) : String(body));
    this.name = 'SandboxHttpError';
    this.status = status;
    this.body = body;
    this.headers = headers;
  }
}

export const badRequest = (message: unknown) => new SandboxHttpError(400, { message });
/** Grape's parameter validation shape: `{"error":"<param> is missing"}`. */
export const invalidParam = (error: string) => new SandboxHttpError(400, { error });
export const unauthorized = () => new SandboxHttpError(401, { message: '401 Unauthorized' });
export const forbidden = (detail?: string) =>
  new SandboxHttpError(403, { message: detail ? `403 Forbidden - ${detail}` : '403 Forbidden' });
/** `notFound('Project')` gives GitLab's `{"message":"404 Project Not Found"}`. */
export const notFound = (what?: string) =>
  new SandboxHttpError(404, { message: what ? `404 ${what} Not Found` : '404 Not found' });

export const invalidToken = (description: string) =>
  new SandboxHttpError(
    401,
    { error: 'invalid_token', error_description: description },
    {
      'www-authenticate': `Bearer realm="Protected by OAuth 2.0", error="invalid_token", error_description="${description}"`,
    },
  );

export const insufficientScope = (scopes: string[]) =>
  new SandboxHttpError(403, {
    error: 'insufficient_scope',
    error_description: 'The request requires higher privileges than provided by the access token.',
    scope: scopes.join(' '),
  });

/** Message shown for writes to a repository that is read-only during a move. */
export const READ_ONLY_MESSAGE = 'The repository is temporarily read-only. Please try again later.';
