/**
 * GET and PUT /application/settings (admin), reference §3.
 *
 * `repository_storages_weighted` and `admin_mode` are stored in meta `settings` (InstanceSettings);
 * every other field is GitLab's default and static. PUT **replaces** the weights hash (the
 * reference marks merge-or-replace as unconfirmed; GitLab stores it as one column): storages left
 * out weigh 0. Every value goes through Ruby's `to_i`, as Grape's `HashOfIntegerValues` coercer
 * (and the model's `coerce_repository_storages_weighted`) does: `"abc"` is 0, `"50.7"` and 50.7
 * are 50, `"1_0"` is 10, null is 0. A value without `to_i` (true, an array, an object) makes the
 * coercer raise, which Grape reports as 400 `repository_storages_weighted is invalid`. Then the
 * model's checks, all reported together: 400
 * `{"message":{"repository_storages_weighted":["can't include: a, b", ...]}}`. Its "must be an
 * integer" check cannot fire after `to_i`.
 */
import type { RequestContext, Reply } from '../http/context.js';
import type { Db } from '../db.js';
import { getMeta, setMeta } from '../db.js';
import { SandboxHttpError, invalidParam } from '../http/errors.js';
import { rubyToI } from '../http/coerce.js';
import type { Router } from '../http/router.js';
import { renderRateLimitSettings } from './rate-limits.js';
import type { InstanceConfig, InstanceSettings } from '../seed-schema.js';

/** Adds GET and PUT /application/settings (admin). */
export function register(router: Router): void {
  router.get('/api/v4/application/settings', { level: 'admin' }, show);
  router.put('/api/v4/application/settings', { level: 'admin' }, update);
}

/** The stored settings, with GitLab's defaults when the seed left them out. */
export function readSettings(db: Db, config: InstanceConfig): InstanceSettings {
  const stored = getMeta<Partial<InstanceSettings>>(db, 'settings') ?? {};
  const fallback = config.storages.includes('default') ? 'default' : (config.storages[0] ?? 'default');
  return {
    repository_storages_weighted: stored.repository_storages_weighted ?? { [fallback]: 100 },
    admin_mode: stored.admin_mode ?? false,
  };
}

/**
 * Coerces and validates weights against the configured storages. Returns GitLab's error strings
 * (empty when valid) and the coerced hash; throws Grape's 400 when the hash cannot be coerced.
 */
export function validateWeights(
  raw: unknown,
  storages: readonly string[],
): { errors: string[]; weights: Record<string, number> } {
  const invalid = () => invalidParam('repository_storages_weighted is invalid');
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw invalid();
  const weights: Record<string, number> = {};
  for (const [key, value] of Object.entries(raw as Record<string, unknown>)) {
    const n = rubyToI(value);
    if (n === undefined) throw invalid();
    weights[key] = n;
  }
  const errors: string[] = [];
  const unknown = Object.keys(weights).filter((k) => !storages.includes(k));
  if (unknown.length > 0) errors.push(`can't include: ${unknown.join(', ')}`);
  for (const [key, n] of Object.entries(weights)) {
    if (n < 0 || n > 100) errors.push(`value for '${key}' must be between 0 and 100`);
  }
  return { errors, weights };
}

/** Grape's Boolean coercion. */
function coerceBoolean(name: string, v: unknown): boolean {
  if (v === true || v === 'true' || v === '1' || v === 1 || v === 't' || v === 'yes') return true;
  if (v === false || v === 'false' || v === '0' || v === 0 || v === 'f' || v === 'no') return false;
  throw invalidParam(`${name} is invalid`);
}

function show(ctx: RequestContext): Reply {
  return { body: { ...renderSettings(readSettings(ctx.state.db, ctx.state.config)), ...limitsOf(ctx) } };
}

function update(ctx: RequestContext): Reply {
  const { db, config } = ctx.state;
  const current = readSettings(db, config);
  const next: InstanceSettings = { ...current };
  if (ctx.input.admin_mode !== undefined) next.admin_mode = coerceBoolean('admin_mode', ctx.input.admin_mode);
  if (ctx.input.repository_storages_weighted !== undefined) {
    const { errors, weights } = validateWeights(ctx.input.repository_storages_weighted, config.storages);
    if (errors.length > 0) throw new SandboxHttpError(400, { message: { repository_storages_weighted: errors } });
    next.repository_storages_weighted = weights;
  }
  const stored = getMeta<Record<string, unknown>>(db, 'settings') ?? {};
  setMeta(db, 'settings', { ...stored, ...next });
  ctx.state.log.info(
    { weights: next.repository_storages_weighted, admin_mode: next.admin_mode },
    'application settings updated',
  );
  return { body: { ...renderSettings(next), ...limitsOf(ctx) } };
}

/** The application rate limits this release shows among its settings. */
function limitsOf(ctx: RequestContext): Record<string, number> {
  return renderRateLimitSettings(ctx.state.config.version, ctx.state.config.rate_limits);
}

/** The settings JSON: GitLab's field names, with the stored ones filled in. */
export function renderSettings(s: InstanceSettings): Record<string, unknown> {
  return {
    id: 1,
    default_projects_limit: 100000,
    signup_enabled: true,
    password_authentication_enabled_for_web: true,
    gravatar_enabled: true,
    sign_in_text: null,
    created_at: '2024-01-01T00:00:00.000Z',
    updated_at: '2024-01-01T00:00:00.000Z',
    home_page_url: null,
    default_branch_protection: 2,
    restricted_visibility_levels: [],
    max_attachment_size: 100,
    session_expire_delay: 10080,
    default_project_visibility: 'private',
    default_snippet_visibility: 'private',
    default_group_visibility: 'private',
    import_sources: [],
    repository_storages_weighted: s.repository_storages_weighted,
    admin_mode: s.admin_mode,
    gitaly_timeout_default: 55,
    gitaly_timeout_medium: 30,
    gitaly_timeout_fast: 10,
    offset_pagination_limit: 50000,
    throttle_authenticated_api_enabled: false,
    throttle_unauthenticated_api_enabled: false,
    require_admin_approval_after_user_signup: true,
    personal_access_token_prefix: null,
    deactivate_dormant_users: false,
  };
}
