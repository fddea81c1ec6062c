/**
 * Errors of the pre-flight, storages, weights and Geo steps. Each has a stable `code`; the machine
 * records it with the step in the checkpoint and the CLI maps a failed run to exit code 1.
 */

/** A check that makes running the plan unsafe or impossible (not retried: the operator must act). */
export class StepError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = 'StepError';
    this.code = code;
  }
}

/** The token's user is not an administrator: `repository_storage` filters would be ignored silently. */
export const NOT_ADMIN = 'SHARDMOVE_PREFLIGHT_NOT_ADMIN';
/**
 * The token's user is an administrator, but admin endpoints refuse the token: the instance has Admin
 * Mode on and the token lacks the `admin_mode` scope (GitLab's `GET /user` still says `is_admin`).
 */
export const ADMIN_MODE = 'SHARDMOVE_PREFLIGHT_ADMIN_MODE';
/** The run's token cannot write (missing `api` scope) or is revoked. */
export const TOKEN_UNUSABLE = 'SHARDMOVE_PREFLIGHT_TOKEN';
/** A storage named in the plan is not configured on the instance. */
export const STORAGE_UNKNOWN = 'SHARDMOVE_STORAGE_UNKNOWN';
/** `/-/readiness` answered 404: this host is not on the instance's monitoring IP allowlist. */
export const READINESS_REFUSED = 'SHARDMOVE_STORAGE_READINESS_REFUSED';
/** A storage named in the plan fails its Gitaly health check. */
export const STORAGE_UNHEALTHY = 'SHARDMOVE_STORAGE_UNHEALTHY';
/** The merged weights break a plan rule (new repositories would keep landing on a source). */
export const WEIGHTS_INVALID = 'SHARDMOVE_WEIGHTS_INVALID';
/** The weights read back differ from the weights written. */
export const WEIGHTS_MISMATCH = 'SHARDMOVE_WEIGHTS_MISMATCH';
