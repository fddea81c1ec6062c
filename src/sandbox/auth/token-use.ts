/**
 * Places where tokens that cannot call the general API are used, so a revoke or reset through
 * /admin/token can be tried for real: runners verify their token (`POST /runners/verify`) and
 * pipeline trigger tokens start pipelines (`POST /projects/:id/trigger/pipeline`).
 *
 * Choices: an unknown, revoked or reset runner token answers 403 {"message":"403 Forbidden"} as
 * GitLab's runner API does; an unknown, expired or foreign trigger token answers 404
 * {"message":"404 Not Found"} (GitLab's `not_found!` when the trigger service finds nothing).
 * A triggered pipeline is recorded nowhere: the sandbox has no CI.
 */
import type { RequestContext, Reply } from '../http/context.js';
import { SandboxHttpError, forbidden, invalidParam } from '../http/errors.js';
import type { Router } from '../http/router.js';
import { expiryMs, statements } from './store.js';

/** Pipeline ids per database: nothing stores pipelines, they only need to differ. */
const pipelineIds = new WeakMap<object, number>();

/** Adds the runner verify and pipeline trigger routes. */
export function registerTokenUse(router: Router): void {
  router.post('/api/v4/runners/verify', { level: 'none' }, verifyRunner);
  router.post('/api/v4/projects/:id/trigger/pipeline', { level: 'none' }, triggerPipeline);
}

function requiredString(ctx: RequestContext, name: string): string {
  const v = ctx.input[name];
  if (v === undefined || v === null || v === '') throw invalidParam(`${name} is missing`);
  if (typeof v !== 'string') throw invalidParam(`${name} is invalid`);
  return v;
}

function verifyRunner(ctx: RequestContext): Reply {
  const token = requiredString(ctx, 'token');
  const cred = statements(ctx.state.db).credentialByValue.get(token);
  if (!cred || cred.type !== 'runner' || cred.revoked) throw forbidden();
  return { status: 200, body: { id: cred.id, token, token_expires_at: null } };
}

function triggerPipeline(ctx: RequestContext): Reply {
  const token = requiredString(ctx, 'token');
  const ref = requiredString(ctx, 'ref');
  const projectId = Number(ctx.params.id);
  const cred = statements(ctx.state.db).credentialByValue.get(token);
  const expires = cred ? expiryMs(cred) : null;
  const now = ctx.state.clock.now();
  if (
    !cred ||
    cred.type !== 'pipeline_trigger' ||
    cred.revoked ||
    cred.project_id !== projectId ||
    (expires !== null && now >= expires)
  ) {
    throw new SandboxHttpError(404, { message: '404 Not Found' });
  }
  const at = new Date(now).toISOString();
  const id = (pipelineIds.get(ctx.state.db) ?? 0) + 1;
  pipelineIds.set(ctx.state.db, id);
  return {
    status: 201,
    body: {
      id,
      iid: id,
      project_id: projectId,
      sha: '0'.repeat(40),
      ref,
      status: 'created',
      source: 'trigger',
      created_at: at,
      updated_at: at,
    },
  };
}
