import { describe, expect, it } from 'vitest';
import { createFakeApi, createManualClock, silentLogger, testPlan } from '../../test/support/fake-runtime-deps.js';
import type { ActorDeps } from './types.js';
import { expiryWarning, runPreflight } from './preflight.js';
import { runStorageCheck } from './storages.js';
import { applyWeights, readWeights } from './weights.js';
import { registryClassesFor, runGeoResync } from './geo.js';
import type { Plan } from '../plan/types.js';
import type { MoveRecord } from '../api/types.js';
import { ApiForbiddenError, ApiNotFoundError } from '../api/errors.js';
import { openCheckpoint } from '../store/checkpoint.js';

const ROOM_NOT_CHECKED =
  'the room on cluster was not checked: the plan has no capacity section (see docs/operations.md, "Rules and room from Prometheus")';

function deps(api = createFakeApi(), plan: Plan = testPlan(), dryRun = false): ActorDeps {
  return {
    api,
    plan,
    clock: createManualClock(),
    log: silentLogger,
    signal: new AbortController().signal,
    dryRun,
    store: undefined as never,
  };
}

function move(id: number, itemId: number, state: MoveRecord['state'], source = 'nfs-1'): MoveRecord {
  return {
    id,
    kind: 'projects',
    itemId,
    state,
    sourceStorage: source,
    destinationStorage: 'cluster',
    errorMessage: null,
    createdAt: '',
  };
}

describe('preflight', () => {
  it('passes for an admin with an api token and reports the version and edition', async () => {
    const out = await runPreflight(deps());
    // The plan has no capacity section: pre-flight says once that the room was not checked.
    expect(out).toEqual({
      version: '17.11.0',
      enterprise: true,
      username: 'root',
      warnings: [ROOM_NOT_CHECKED],
      notes: [],
      tokenExpiresAt: '2099-01-01',
      access: { projects: 'listing', snippets: 'listing', groups: 'listing' },
    });
  });

  it('refuses a non-admin token', async () => {
    await expect(
      runPreflight(deps(createFakeApi({ user: { id: 2, username: 'alice', isAdmin: false } }))),
    ).rejects.toMatchObject({ code: 'SHARDMOVE_PREFLIGHT_NOT_ADMIN', message: expect.stringContaining('alice') });
  });

  it('catches Admin Mode without the admin_mode scope (is_admin true, admin API 403) before any write, naming the scope', async () => {
    const forbidden = new ApiForbiddenError(
      { method: 'GET', path: '/api/v4/application/settings' },
      '403 Forbidden',
      { message: '403 Forbidden' },
      null,
    );
    const api = createFakeApi({ adminError: forbidden });
    const err = await runPreflight(deps(api)).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'SHARDMOVE_PREFLIGHT_ADMIN_MODE' });
    expect((err as Error).message).toMatch(
      /"root" is an administrator.*Admin Mode on and the token lacks the "admin_mode" scope\. Add the admin_mode scope/,
    );
    expect(api.state.calls).toEqual(['version', 'currentUser', 'getWeights']);
    expect(api.state.mutating).toBe(0);
  });

  it('names the scope GitLab asks for on an insufficient_scope 403 from the admin API', async () => {
    const forbidden = new ApiForbiddenError(
      { method: 'GET', path: '/api/v4/application/settings' },
      'insufficient_scope',
      { error: 'insufficient_scope', scope: 'api' },
      'api',
    );
    await expect(runPreflight(deps(createFakeApi({ adminError: forbidden })))).rejects.toMatchObject({
      code: 'SHARDMOVE_PREFLIGHT_TOKEN',
      message: expect.stringContaining('lacks the "api" scope'),
    });
  });

  it('still refuses a plain non-admin as NOT_ADMIN, without probing the admin API', async () => {
    const forbidden = new ApiForbiddenError(
      { method: 'GET', path: '/api/v4/application/settings' },
      '403 Forbidden',
      null,
      null,
    );
    const api = createFakeApi({ user: { id: 2, username: 'alice', isAdmin: false }, adminError: forbidden });
    await expect(runPreflight(deps(api))).rejects.toMatchObject({ code: 'SHARDMOVE_PREFLIGHT_NOT_ADMIN' });
    expect(api.state.calls).not.toContain('getWeights');
  });

  it('refuses a token without the api scope, and a revoked one', async () => {
    const readOnly = createFakeApi({
      token: { id: 2, userId: 1, name: 'ro', scopes: ['read_api'], revoked: false, expiresAt: null },
    });
    await expect(runPreflight(deps(readOnly))).rejects.toMatchObject({ code: 'SHARDMOVE_PREFLIGHT_TOKEN' });
    const revoked = createFakeApi({
      token: { id: 2, userId: 1, name: 'r', scopes: ['api'], revoked: true, expiresAt: null },
    });
    await expect(runPreflight(deps(revoked))).rejects.toMatchObject({ code: 'SHARDMOVE_PREFLIGHT_TOKEN' });
  });

  it('warns, without failing, when the token endpoint is absent', async () => {
    const out = await runPreflight(deps(createFakeApi({ token: null })));
    expect(out.warnings).toEqual([
      expect.stringContaining('token scopes and expiry were not checked'),
      ROOM_NOT_CHECKED,
    ]);
  });

  it('does not inspect OAuth credentials as a personal token', async () => {
    const api = createFakeApi();
    const plan = testPlan();
    plan.instance.credentials = {
      type: 'oauth',
      accessToken: 'a',
      refreshToken: 'r',
      clientId: 'c',
      clientSecret: 's',
      redirectUri: 'http://x',
    };
    await runPreflight(deps(api, plan));
    expect(api.state.calls).not.toContain('inspectToken');
  });

  it('warns about a token expiring within 7 days', () => {
    const now = Date.parse('2026-11-22T12:00:00Z');
    expect(expiryWarning('2026-11-25', now)).toMatch(/within 7 days/);
    expect(expiryWarning('2026-12-25', now)).toBeNull();
    expect(expiryWarning('2026-11-01', now)).toMatch(/expired/);
    expect(expiryWarning(null, now)).toBeNull();
  });

  it('reports items with a move in flight off the sources as read-only, and refuses those it did not schedule', async () => {
    const moves = [
      move(9, 3, 'started'),
      move(8, 4, 'finished'),
      move(7, 5, 'scheduled', 'default'),
      { ...move(6, 6, 'initial', 'nfs-2'), createdAt: '2026-12-01T23:41:02.000Z' },
    ];
    const store = openCheckpoint(':memory:');
    await expect(runPreflight({ ...deps(createFakeApi({ moves })), store })).rejects.toMatchObject({
      code: 'SHARDMOVE_PREFLIGHT_FOREIGN_MOVES',
      message: expect.stringMatching(
        /^refusing: 2 move\(s\) this checkpoint did not schedule are in flight on the sources: 2 projects move\(s\) \(1 on nfs-1, 1 on nfs-2\), the oldest created 2026-12-01T23:41:02.000Z; e\.g\. projects 3 \(move 9, started, to cluster\), projects 6 \(move 6, initial, to cluster\)\. .*--accept-foreign-moves.*Nothing was written$/,
      ),
    });
    // Told to go on beside them: a warning, and the same read-only report.
    const out = await runPreflight({ ...deps(createFakeApi({ moves })), store, acceptForeignMoves: true });
    expect(out.warnings).toHaveLength(3);
    expect(out.warnings[0]).toMatch(/^2 projects .*read-only: 3 \(move 9, started\), 6 \(move 6, initial\)$/);
    expect(out.warnings[1]).toMatch(
      /^--accept-foreign-moves: going on beside them: 2 move\(s\) this checkpoint did not schedule/,
    );
    expect(out.warnings[2]).toBe(ROOM_NOT_CHECKED);
    expect(out.wouldRefuse).toBeUndefined();
    // A dry run lists the refusal instead of failing.
    const dry = await runPreflight({ ...deps(createFakeApi({ moves }), testPlan(), true), store });
    expect(dry.wouldRefuse).toEqual([expect.stringMatching(/^2 move\(s\) this checkpoint did not schedule/)]);
  });

  it("takes the checkpoint's own moves for its own on a restart from pre-flight", async () => {
    const store = openCheckpoint(':memory:');
    const rec = (id: number) => ({ kind: 'projects' as const, id, storage: 'nfs-1', name: `p${id}`, sizeBytes: 1 });
    store.startRound('projects', 'nfs-1', 1);
    store.recordPage('projects', 'nfs-1', 1, [rec(3), rec(4), rec(5)], 0);
    // Item 3's move 9 is recorded; item 4's intent is, its POST's answer not (its move is reconciled).
    for (const id of [3, 4]) store.markIntent('projects', id, 0, 'cluster');
    store.markInFlight('projects', 3, 9, 'started', 1);
    const moves = [move(9, 3, 'started'), move(10, 4, 'scheduled')];
    const out = await runPreflight({ ...deps(createFakeApi({ moves })), store });
    expect(out.warnings.join('\n')).not.toMatch(/did not schedule/);
    // An older move of item 3 that is not the recorded one, still in flight: not ours.
    const older = [...moves, move(2, 3, 'replicated')];
    await expect(runPreflight({ ...deps(createFakeApi({ moves: older })), store })).rejects.toMatchObject({
      message: expect.stringMatching(/^refusing: 1 move\(s\) .*projects 3 \(move 2, replicated, to cluster\)/),
    });
    // A POST taken for unapplied (its attempt given back) that made a move after all: one created
    // since the item's intent is its own, an older one is not.
    const intent = Date.parse('2026-12-01T10:00:00.000Z');
    store.markIntent('projects', 5, intent, 'cluster');
    store.markPending('projects', 5, intent, 'answer lost', true);
    const after = { ...move(11, 5, 'scheduled'), createdAt: '2026-12-01T10:00:01.000Z' };
    const own = await runPreflight({ ...deps(createFakeApi({ moves: [after] })), store });
    expect(own.warnings.join('\n')).not.toMatch(/did not schedule/);
    const before = { ...move(11, 5, 'scheduled'), createdAt: '2026-12-01T09:00:00.000Z' };
    await expect(runPreflight({ ...deps(createFakeApi({ moves: [before] })), store })).rejects.toMatchObject({
      code: 'SHARDMOVE_PREFLIGHT_FOREIGN_MOVES',
    });
    // After a bulk POST of this checkpoint, the moves its job made on that source are its own.
    store.setBulk({ kind: 'projects', source: 'nfs-1', state: 'posted', intentAt: 0, seenMaxMoveId: 1 });
    const bulk = await runPreflight({ ...deps(createFakeApi({ moves: [move(5, 5, 'started')] })), store });
    expect(bulk.warnings.join('\n')).not.toMatch(/did not schedule/);
  });
});

describe('storage check', () => {
  it('passes when every planned storage is present and ok, ignoring the top-level status', async () => {
    const api = createFakeApi();
    api.state.readiness.status = 'failed';
    const out = await runStorageCheck(deps(api));
    expect(out.warnings).toEqual([expect.stringContaining('"failed"')]);
  });

  it('fails on an unhealthy source even when the top-level status is ok', async () => {
    const api = createFakeApi();
    api.state.readiness.gitaly[1] = { storage: 'nfs-1', ok: false, message: 'connection refused' };
    await expect(runStorageCheck(deps(api))).rejects.toMatchObject({
      code: 'SHARDMOVE_STORAGE_UNHEALTHY',
      message: expect.stringContaining('"nfs-1" (connection refused)'),
    });
  });

  it('fails naming every unknown storage and listing the configured ones', async () => {
    const plan = testPlan();
    plan.move = { ...plan.move, from: ['nfs-9', 'nfs-1'], to: ['clustr'] };
    await expect(runStorageCheck(deps(createFakeApi(), plan))).rejects.toMatchObject({
      code: 'SHARDMOVE_STORAGE_UNKNOWN',
      message: 'storages "nfs-9", "clustr" not configured on the instance (configured: default, nfs-1, nfs-2, cluster)',
    });
  });

  it('explains a readiness 404: the monitoring IP allowlist, what to do, and what the step checks', async () => {
    const api = createFakeApi({
      readinessError: new ApiNotFoundError(
        { method: 'GET', path: '/-/readiness' },
        '<html>not found</html>',
        '<html>not found</html>',
      ),
    });
    const err = await runStorageCheck(deps(api)).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'SHARDMOVE_STORAGE_READINESS_REFUSED' });
    const message = (err as Error).message;
    expect(message).toContain('monitoring IP allowlist');
    expect(message).toContain("gitlab_rails['monitoring_whitelist']");
    expect(message).toContain("add this host's address to the allowlist");
    expect(message).toContain('every source and the destination is configured and its Gitaly is healthy');
    expect(message).not.toContain('<html>');
  });

  it('warns about unhealthy storages outside the plan', async () => {
    const api = createFakeApi();
    api.state.readiness.gitaly[0] = { storage: 'default', ok: false, message: null };
    expect((await runStorageCheck(deps(api))).warnings).toEqual([expect.stringContaining('default')]);
  });
});

describe('weights', () => {
  it('reads, merges, writes and reads back', async () => {
    const api = createFakeApi();
    const d = deps(api);
    expect(await readWeights(d)).toEqual({ default: 100 });
    const out = await applyWeights(d, { previous: { default: 100 } });
    expect(out).toEqual({ current: { default: 0, cluster: 100, 'nfs-1': 0, 'nfs-2': 0 }, written: true, warnings: [] });
    expect(api.state.weights).toEqual(out.current);
  });

  it('sends no PUT when a stop or Ctrl-C comes while the weights are read, and ends with the abort', async () => {
    for (const how of ['signal', 'stop'] as const) {
      const api = createFakeApi();
      const abort = new AbortController();
      let asked = false;
      let looks = 0;
      // The run's stop watcher ends a run that has nothing in flight: the signal, at its next look.
      const stopAsked = () => {
        if (asked && ++looks > 1) abort.abort(new Error('stopped on request'));
        return asked;
      };
      const d: ActorDeps = { ...deps(api), signal: abort.signal, stopAsked };
      const read = api.getWeights.bind(api);
      api.getWeights = async () => {
        const w = await read();
        if (how === 'signal') abort.abort(new Error('received SIGINT'));
        else asked = true;
        return w;
      };
      await expect(applyWeights(d, { previous: { default: 100 } })).rejects.toMatchObject({
        code: 'SHARDMOVE_ABORTED',
      });
      expect(api.state.calls, how).not.toContain('setWeights');
      expect(api.state.weights).toEqual({ default: 100 });
    }
  });

  it('writes nothing in a dry run and reports what it would write', async () => {
    const api = createFakeApi();
    const out = await applyWeights(deps(api, testPlan(), true), { previous: {} });
    expect(out.written).toBe(false);
    expect(out.current.cluster).toBe(100);
    expect(api.state.calls).not.toContain('setWeights');
    expect(api.state.weights).toEqual({ default: 100 });
  });

  it('does not write again when the weights are already merged (a repeat after restore)', async () => {
    const api = createFakeApi({ weights: { default: 0, cluster: 100, 'nfs-1': 0, 'nfs-2': 0 } });
    expect((await applyWeights(deps(api), { previous: {} })).written).toBe(false);
    expect(api.state.mutating).toBe(0);
  });

  it('refuses merged weights that leave a source taking new repositories', async () => {
    const plan = testPlan({ weights: { cluster: 100 } });
    const api = createFakeApi({ weights: { default: 100, 'nfs-1': 50 } });
    await expect(applyWeights(deps(api, plan), { previous: {} })).rejects.toMatchObject({
      code: 'SHARDMOVE_WEIGHTS_INVALID',
      message: expect.stringContaining('"nfs-1"'),
    });
    expect(api.state.mutating).toBe(0);
  });

  it('fails when the read-back differs', async () => {
    const api = createFakeApi({ brokenWeights: { default: 100 } });
    await expect(applyWeights(deps(api), { previous: {} })).rejects.toMatchObject({
      code: 'SHARDMOVE_WEIGHTS_MISMATCH',
    });
  });
});

describe('geo', () => {
  it('maps kinds to registry classes', () => {
    expect(registryClassesFor(['snippets', 'groups'])).toEqual([
      'SNIPPET_REPOSITORY_REGISTRY',
      'GROUP_WIKI_REPOSITORY_REGISTRY',
    ]);
    expect(registryClassesFor(['projects'])).toHaveLength(3);
  });

  it('resyncs each secondary through the node proxy, not the primary, and reports per site', async () => {
    const api = createFakeApi({
      geoSites: [
        { id: 1, name: 'primary', url: 'https://p.test', primary: true, enabled: true },
        { id: 2, name: 'eu', url: 'https://eu.test', primary: false, enabled: true },
        { id: 5, name: 'us', url: 'https://us.test', primary: false, enabled: true },
      ],
      geoErrors: { SNIPPET_REPOSITORY_REGISTRY: ['resource not available'] },
    });
    const out = await runGeoResync(deps(api));
    expect(api.state.calls.filter((c) => c.startsWith('geo'))).toEqual(['geoSites', 'geoResync:2', 'geoResync:5']);
    expect(out.warnings).toEqual([]);
    expect(out.sites.map((s) => [s.siteId, s.name, s.error, s.results.length])).toEqual([
      [2, 'eu', null, 5],
      [5, 'us', null, 5],
    ]);
    expect(out.sites[0]?.results.find((r) => r.registryClass === 'SNIPPET_REPOSITORY_REGISTRY')?.errors).toEqual([
      'resource not available',
    ]);
  });

  it('reports a secondary the primary cannot reach (node proxy 200 {}) as failed, never as requested', async () => {
    const api = createFakeApi({
      geoSites: [
        { id: 1, name: 'primary', url: 'https://p.test', primary: true, enabled: true },
        { id: 2, name: 'eu', url: 'https://eu.test', primary: false, enabled: true },
        { id: 3, name: 'offline', url: 'https://off.test', primary: false, enabled: true },
      ],
      geoUnreachable: [3],
    });
    const out = await runGeoResync(deps(api));
    expect(out.sites.map((s) => [s.name, s.error === null, s.results.length])).toEqual([
      ['eu', true, 5],
      ['offline', false, 0],
    ]);
    expect(out.sites[1]?.error).toMatch(/could not reach this secondary: its node proxy answered 200 \{\}/);
  });

  it('says plainly that there is no secondary (only a primary, or no Geo at all) instead of reporting success', async () => {
    const onlyPrimary = createFakeApi({
      geoSites: [{ id: 1, name: 'primary', url: 'https://p.test', primary: true, enabled: true }],
    });
    const a = await runGeoResync(deps(onlyPrimary));
    expect(a).toEqual({ sites: [], warnings: [expect.stringMatching(/^no Geo secondary: nothing to resync/)] });
    expect(onlyPrimary.state.calls.some((c) => c.startsWith('geoResync'))).toBe(false);
    const noGeo = createFakeApi({ geoSites: null });
    const b = await runGeoResync(deps(noGeo));
    expect(b).toEqual({
      sites: [],
      warnings: [
        expect.stringMatching(
          /^no Geo secondary: nothing to resync \(GET \/geo_sites and GET \/geo_nodes answered 404/,
        ),
      ],
    });
  });

  it('names the API that listed the secondaries, and reports a release without the bulk mutation as failed with the way by hand', async () => {
    const api = createFakeApi({
      geoSites: [
        { id: 1, name: 'primary', url: 'https://p.test', primary: true, enabled: true, listedBy: 'geo_nodes' },
        { id: 2, name: 'eu', url: 'https://eu.test', primary: false, enabled: true, listedBy: 'geo_nodes' },
      ],
      geoUnsupported: [2],
    });
    const out = await runGeoResync(deps(api));
    expect(api.state.calls.filter((c) => c.startsWith('geo'))).toEqual(['geoSites', 'geoResync:2']);
    expect(out.warnings).toEqual([]);
    expect(out.sites).toEqual([{ siteId: 2, name: 'eu', results: [], error: expect.any(String) }]);
    const error = out.sites[0]?.error ?? '';
    expect(error).toMatch(/no API to resync Geo registries \(geoRegistriesBulkUpdate is GitLab 16\.4 and later/);
    expect(error).toContain('nothing was resynced for PROJECT_REPOSITORY_REGISTRY');
    expect(error).toContain('Resync all');
    expect(error).toContain('Geo::ProjectRegistry');
  });

  it('records a failing site and goes on with the others; skips a disabled one with a warning', async () => {
    const api = createFakeApi({
      geoSites: [
        { id: 1, name: 'primary', url: 'https://p.test', primary: true, enabled: true },
        { id: 2, name: 'gone', url: 'https://gone.test', primary: false, enabled: true },
        { id: 3, name: 'off', url: 'https://off.test', primary: false, enabled: false },
        { id: 4, name: 'ok', url: 'https://ok.test', primary: false, enabled: true },
      ],
      geoSiteErrors: {
        2: new ApiNotFoundError(
          { method: 'POST', path: '/api/v4/geo/node_proxy/2/graphql' },
          '404 GeoNode Not Found',
          null,
        ),
      },
    });
    const out = await runGeoResync(deps(api));
    expect(out.sites.map((s) => [s.siteId, s.error])).toEqual([
      [2, expect.stringContaining('404 GeoNode Not Found')],
      [4, null],
    ]);
    expect(out.warnings).toEqual([expect.stringContaining('"off" (id 3) is disabled')]);
  });

  it('still stops on a rejected token', async () => {
    const unauthorized = Object.assign(new Error('401'), { code: 'SHARDMOVE_API_UNAUTHORIZED' });
    await expect(runGeoResync(deps(createFakeApi({ geoSiteErrors: { 2: unauthorized } })))).rejects.toBe(unauthorized);
  });
});
