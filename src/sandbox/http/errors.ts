/**
 * Replies and errors of the reference service. Handlers return a Reply or throw an ApiError; the
 * server turns both into a response. Bodies follow GitLab's shapes (see gitlab-api.md).
 */

export type HeaderValue = string | string[];

export interface Reply {
  status?: number;
  /** Serialised as JSON unless `text` is set. `undefined` with status 204 sends no body. */
  body?: unknown;
  /** Plain-text body (health, rate limit). */
  text?: string;
  headers?: Record<string, HeaderValue>;
}

/** An error answer with a status and a GitLab-shaped JSON body. */
export class ApiError extends Error {
  readonly status: number;
  readonly body: unknown;
  readonly headers: Record<string, HeaderValue>;

  constructor(status: number, body: unknown, headers: Record<string, HeaderValue> = {}) {
    super(typeof body === 'object' && body !== null ? JSON.stringify(body) : String(body));
    this.name = 'ApiError';
    this.status = status;
    this.body = body;
    this.headers = headers;
  }
}

export const badRequest = (message: unknown) => new ApiError(400, { message });
/** Grape's parameter validation shape: `{"error":"<param> is missing"}`. */
export const invalidParam = (error: string) => new ApiError(400, { error });
export const unauthorized = () => new ApiError(401, { message: '401 Unauthorized' });
export const forbidden = (detail?: string) => new ApiError(403, { message: detail ? `403 Forbidden - ${detail}` : '403 Forbidden' });
/** `notFound('Project')` gives GitLab's `{"message":"404 Project Not Found"}`. */
export const notFound = (what?: string) => new ApiError(404, { message: what ? `404 ${what} Not Found` : '404 Not found' });
export const unprocessable = (message: unknown) => new ApiError(422, { message });

export const invalidToken = (description: string) =>
  new ApiError(401, { error: 'invalid_token', error_description: description }, {
    'www-authenticate': `Bearer realm="Protected by OAuth 2.0", error="invalid_token", error_description="${description}"`,
  });

export const insufficientScope = (scopes: string[]) =>
  new ApiError(403, {
    error: 'insufficient_scope',
    error_description: 'The request requires higher privileges than provided by the access token.',
    scope: scopes.join(' '),
  });

/** Message shown for writes to a repository that is read-only during a move. */
export const READ_ONLY_MESSAGE = 'The repository is temporarily read-only. Please try again later.';
