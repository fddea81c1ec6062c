/**
 * JSON records of users, jobs and tokens, shaped like GitLab's API entities (reference §6 table).
 * Where GitLab's entity is not described, the record keeps to its documented field names and
 * leaves secrets out: the admin already holds the token it asks about, so echoing it back only
 * spreads it further (a trigger token is shown shortened, as GitLab shows it to non-owners).
 */
import type { CredentialRow, UserRow } from '../http/context.js';
import type { ApplicationRow } from './store.js';
import { credentialExtra, credentialScopes, expiryMs, findUserById, statements } from './store.js';
import type { Db } from '../db.js';

/** GitLab's organisation id for everything on a single-organisation instance. */
const ORGANIZATION_ID = 1;

/** `UserBasic`: what anyone may see of a user. */
export function userBasic(user: UserRow, origin: string): Record<string, unknown> {
  return {
    id: user.id,
    username: user.username,
    public_email: null,
    name: user.name,
    state: user.state,
    // GitLab's locked means locked out after failed sign-ins, which the sandbox never does.
    locked: false,
    avatar_url: null,
    web_url: `${origin}/${user.username}`,
  };
}

/** `User`: the profile, as GET /users/:id shows it. */
export function userEntity(user: UserRow, origin: string): Record<string, unknown> {
  return {
    ...userBasic(user, origin),
    created_at: user.created_at,
    bio: '',
    location: '',
    linkedin: '',
    twitter: '',
    discord: '',
    website_url: '',
    organization: '',
    job_title: '',
    pronouns: null,
    bot: user.bot,
    work_information: null,
    local_time: null,
  };
}

/** `UserPublic`: the user's own view (GET /user), with `is_admin` added for administrators. */
export function userPublic(user: UserRow, origin: string, withAdmin: boolean): Record<string, unknown> {
  return {
    ...userEntity(user, origin),
    last_sign_in_at: null,
    confirmed_at: user.created_at,
    last_activity_on: null,
    email: user.email,
    theme_id: 1,
    color_scheme_id: 1,
    projects_limit: 100000,
    current_sign_in_at: null,
    identities: [],
    can_create_group: !user.bot,
    can_create_project: !user.bot,
    two_factor_enabled: false,
    external: false,
    private_profile: false,
    commit_email: user.email,
    ...(withAdmin ? adminFields(user) : {}),
  };
}

/** `UserWithAdmin`'s additions. */
export function adminFields(user: UserRow): Record<string, unknown> {
  return { is_admin: user.admin, note: null, namespace_id: user.id, created_by: null };
}

function isoDate(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** The spec's token information record: exactly the 15 documented fields. */
export function accessTokenRecord(cred: CredentialRow): Record<string, unknown> {
  return {
    id: cred.id,
    user_id: cred.user_id,
    name: cred.name ?? '',
    revoked: cred.revoked === 1,
    expires_at: cred.expires_at ?? (cred.expires_at_ms === null ? null : isoDate(cred.expires_at_ms)),
    created_at: cred.created_at,
    updated_at: cred.updated_at,
    scopes: credentialScopes(cred),
    impersonation: cred.type === 'impersonation',
    expire_notification_delivered: false,
    last_used_at: cred.last_used_at,
    after_expiry_notification_delivered: false,
    previous_personal_access_token_id: cred.previous_id,
    advanced_scopes: null,
    organization_id: ORGANIZATION_ID,
  };
}

/** `DeployToken`; GitLab's default username is `gitlab+deploy-token-<id>`. */
export function deployTokenRecord(cred: CredentialRow, nowMs: number): Record<string, unknown> {
  const extra = credentialExtra(cred);
  const expires = expiryMs(cred);
  return {
    id: cred.id,
    name: cred.name ?? '',
    username: typeof extra.username === 'string' ? extra.username : `gitlab+deploy-token-${cred.id}`,
    expires_at: cred.expires_at,
    scopes: credentialScopes(cred),
    revoked: cred.revoked === 1,
    expired: expires !== null && nowMs >= expires,
  };
}

/** `Application`, for an OAuth application secret. */
export function applicationRecord(app: ApplicationRow): Record<string, unknown> {
  return {
    id: app.id,
    application_id: app.uid,
    application_name: app.name,
    callback_url: app.redirect_uri,
    confidential: app.confidential === 1,
  };
}

/** `Clusters::AgentToken`. */
export function clusterAgentTokenRecord(cred: CredentialRow): Record<string, unknown> {
  const extra = credentialExtra(cred);
  return {
    id: cred.id,
    name: cred.name ?? '',
    description: typeof extra.description === 'string' ? extra.description : null,
    agent_id: typeof extra.agent_id === 'number' ? extra.agent_id : cred.id,
    status: cred.revoked === 1 ? 'revoked' : 'active',
    created_at: cred.created_at,
    created_by_user_id: cred.user_id,
    last_used_at: cred.last_used_at,
  };
}

/** `Ci::Runner`; a runner token with no project is an instance runner. */
export function runnerRecord(cred: CredentialRow): Record<string, unknown> {
  const instance = cred.project_id === null && cred.group_id === null;
  return {
    id: cred.id,
    description: cred.name ?? '',
    ip_address: null,
    active: true,
    paused: false,
    is_shared: instance,
    runner_type: instance ? 'instance_type' : cred.project_id !== null ? 'project_type' : 'group_type',
    name: cred.name ?? null,
    online: false,
    status: 'never_contacted',
    created_at: cred.created_at,
  };
}

/** `Trigger`, with the token shortened (GitLab's `short_token` for callers who do not own it). */
export function triggerRecord(
  db: Db,
  cred: CredentialRow,
  origin: string,
  nowMs: number,
  prefix: string,
): Record<string, unknown> {
  const owner = cred.user_id === null ? undefined : findUserById(db, cred.user_id);
  const expires = expiryMs(cred);
  return {
    id: cred.id,
    token: cred.value.slice(0, prefix.length + 4),
    description: cred.name ?? '',
    created_at: cred.created_at,
    updated_at: cred.updated_at,
    last_used: cred.last_used_at,
    expires_at: expires === null ? null : new Date(expires).toISOString(),
    expired: expires !== null && nowMs >= expires,
    owner: owner ? userBasic(owner, origin) : null,
  };
}

/** `FeatureFlags::ClientConfigurationEntity`, without the token itself. */
export function featureFlagsClientRecord(cred: CredentialRow): Record<string, unknown> {
  return { id: cred.id, project_id: cred.project_id, instance_id: `ffclient-${cred.id}` };
}

/**
 * A job (GitLab's `Ci::JobBasic`), from its job token. The seed knows little about jobs: id, name
 * and status may come from the credential's `extra`; the rest is derived from the project.
 */
export function jobRecord(db: Db, cred: CredentialRow, origin: string): Record<string, unknown> {
  const extra = credentialExtra(cred);
  const id = typeof extra.job_id === 'number' ? extra.job_id : cred.id;
  const project = cred.project_id === null ? undefined : statements(db).projectById.get(cred.project_id);
  const user = cred.user_id === null ? undefined : findUserById(db, cred.user_id);
  const projectUrl = project ? `${origin}/${project.namespace ? `${project.namespace}/` : ''}${project.path}` : origin;
  const status = typeof extra.status === 'string' ? extra.status : 'running';
  return {
    id,
    status,
    stage: 'test',
    name: typeof extra.name === 'string' ? extra.name : 'build',
    ref: 'main',
    tag: false,
    coverage: null,
    allow_failure: false,
    created_at: cred.created_at,
    started_at: cred.created_at,
    finished_at: null,
    erased_at: null,
    duration: null,
    queued_duration: null,
    user: user ? userBasic(user, origin) : null,
    pipeline: {
      id,
      iid: id,
      project_id: cred.project_id,
      sha: '0'.repeat(40),
      ref: 'main',
      status,
      source: 'push',
      web_url: `${projectUrl}/-/pipelines/${id}`,
    },
    project: { id: cred.project_id, ci_job_token_scope_enabled: false },
    web_url: `${projectUrl}/-/jobs/${id}`,
  };
}
