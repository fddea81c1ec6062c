import { describe, expect, it } from 'vitest';
import { createActor, fromPromise, toPromise, waitFor } from 'xstate';
import type { AnyActorLogic, Snapshot } from 'xstate';
import { CodedError } from '../../test/support/coded-error.js';
import { MACHINE_VERSION, runMachine } from './machine.js';
import type { DrainInput, DrainOutput, PreflightOutput, RunInput } from './types.js';

const input: RunInput = {
  sources: ['nfs-1', 'nfs-2'],
  destination: 'cluster',
  kinds: ['projects', 'snippets', 'groups'],
  verify: true,
  geoResync: true,
  dryRun: false,
};

interface Fakes {
  calls: string[];
  access?: PreflightOutput['access'];
  drainInputs?: DrainInput[];
  verifyInputs?: unknown[];
  drain?: (i: DrainInput) => Promise<DrainOutput>;
  verifyOk?: boolean;
  fail?: string;
}

function fakeActors(f: Fakes): Record<string, AnyActorLogic> {
  const step = <T>(name: string, out: () => T) =>
    fromPromise(async ({ input: i }: { input: unknown }) => {
      if (name === 'verify') f.verifyInputs?.push(i);
      f.calls.push(
        i && typeof i === 'object' && 'source' in i
          ? `${name}:${(i as DrainInput).source}/${(i as DrainInput).kind}`
          : name,
      );
      if (f.fail === name) throw new CodedError('SHARDMOVE_TEST', `${name} broke`);
      return out();
    });
  return {
    preflight: step('preflight', () => ({
      version: '17.11.0',
      username: 'root',
      warnings: ['token expires soon'],
      ...(f.access ? { access: f.access } : {}),
    })),
    storages: step('storages', () => ({ warnings: [] })),
    readWeights: step('readWeights', () => ({ default: 100 })),
    weights: step('weights', () => ({
      current: { default: 100, cluster: 100, 'nfs-1': 0 },
      written: true,
      warnings: [],
    })),
    drain: fromPromise(async ({ input: i }: { input: DrainInput }) => {
      f.calls.push(`drain:${i.source}/${i.kind}`);
      f.drainInputs?.push(i);
      if (f.fail === 'drain') throw new Error('drain broke');
      return f.drain ? f.drain(i) : { moved: 2, quarantined: 0, remaining: 0 };
    }),
    verify: step('verify', () => ({
      ok: f.verifyOk ?? true,
      perKindAndSource: {},
      problems: f.verifyOk === false ? ['3 projects left on nfs-1'] : [],
    })),
    geo: step('geo', () => ({
      sites: [
        {
          siteId: 2,
          name: 'eu',
          results: [{ registryClass: 'PROJECT_REPOSITORY_REGISTRY', errors: ['geo is off'] }],
          error: null,
        },
        { siteId: 3, name: 'us', results: [], error: 'POST /api/v4/geo/node_proxy/3/graphql: HTTP 404' },
      ],
      warnings: ['a disabled site'],
    })),
  };
}

async function runToEnd(f: Fakes, runInput: RunInput = input) {
  const actor = createActor(runMachine.provide({ actors: fakeActors(f) }), { input: runInput });
  const values: string[] = [];
  actor.subscribe((s) => values.push(JSON.stringify(s.value)));
  actor.start();
  await toPromise(actor).catch(() => undefined);
  return { snapshot: actor.getSnapshot(), values };
}

describe('run machine', () => {
  it('walks every step, draining each source and each kind in plan order', async () => {
    const f: Fakes = { calls: [] };
    const { snapshot } = await runToEnd(f);
    expect(f.calls).toEqual([
      'preflight',
      'storages',
      'readWeights',
      'weights',
      'drain:nfs-1/projects',
      'drain:nfs-1/snippets',
      'drain:nfs-1/groups',
      'drain:nfs-2/projects',
      'drain:nfs-2/snippets',
      'drain:nfs-2/groups',
      'verify',
      'geo',
    ]);
    expect(snapshot.value).toBe('done');
    expect(snapshot.context.previousWeights).toEqual({ default: 100 });
    expect(snapshot.context.newWeights).toEqual({ default: 100, cluster: 100, 'nfs-1': 0 });
    expect(Object.keys(snapshot.context.drains)).toHaveLength(6);
    expect(snapshot.context.warnings).toEqual([
      'token expires soon',
      'a disabled site',
      'Geo resync of PROJECT_REPOSITORY_REGISTRY on site "eu" (id 2): geo is off',
      'Geo resync on site "us" (id 3) failed: POST /api/v4/geo/node_proxy/3/graphql: HTTP 404',
    ]);
    expect(snapshot.context.error).toBeNull();
  });

  it('ends in doneWithQuarantine when a drain quarantined items', async () => {
    const f: Fakes = {
      calls: [],
      drain: async (i) => ({
        moved: 1,
        quarantined: i.source === 'nfs-2' && i.kind === 'groups' ? 1 : 0,
        remaining: 0,
      }),
    };
    const { snapshot } = await runToEnd(f);
    expect(snapshot.value).toBe('doneWithQuarantine');
    expect(snapshot.context.drains['nfs-2/groups']).toEqual({
      source: 'nfs-2',
      kind: 'groups',
      moved: 1,
      quarantined: 1,
      remaining: 0,
    });
  });

  it.each(['preflight', 'storages', 'readWeights', 'weights', 'drain', 'verify', 'geo'])(
    'fails with the step and the cause when %s throws',
    async (name) => {
      const f: Fakes = { calls: [], fail: name };
      const { snapshot } = await runToEnd(f);
      expect(snapshot.value).toBe('failed');
      const step = name === 'readWeights' ? 'weights' : name;
      expect(snapshot.context.error?.step).toBe(step);
      expect(snapshot.context.error?.message).toMatch(/broke/);
      if (name !== 'drain') expect(snapshot.context.error?.code).toBe('SHARDMOVE_TEST');
      else expect(snapshot.context.error?.code).toBe('SHARDMOVE_INTERNAL');
      expect(f.calls.at(-1)).toMatch(new RegExp(`^${name}`));
    },
  );

  it('records a failure as plain data in the context, the shape the checkpoint stores', async () => {
    const { snapshot } = await runToEnd({ calls: [], fail: 'storages' });
    expect(snapshot.context.error).toEqual({ step: 'storages', code: 'SHARDMOVE_TEST', message: 'storages broke' });
  });

  it('fails with SHARDMOVE_INTERNAL when an actor was not provided', async () => {
    const actor = createActor(runMachine, { input });
    actor.start();
    await toPromise(actor).catch(() => undefined);
    expect(actor.getSnapshot().value).toBe('failed');
    expect(actor.getSnapshot().context.error).toEqual({
      step: 'preflight',
      code: 'SHARDMOVE_INTERNAL',
      message: 'actor "preflight" was not provided',
    });
  });

  it('fails at verify when verification is not ok, keeping the problems', async () => {
    const f: Fakes = { calls: [], verifyOk: false };
    const { snapshot } = await runToEnd(f);
    expect(snapshot.value).toBe('failed');
    expect(snapshot.context.error).toEqual({
      step: 'verify',
      code: 'SHARDMOVE_VERIFY_FAILED',
      message: '3 projects left on nfs-1',
    });
    expect(f.calls).not.toContain('geo');
  });

  it('skips verify and geo in a dry run', async () => {
    const f: Fakes = { calls: [] };
    const { snapshot } = await runToEnd(f, { ...input, dryRun: true });
    expect(snapshot.value).toBe('done');
    expect(f.calls).not.toContain('verify');
    expect(f.calls).not.toContain('geo');
    expect(f.calls.filter((c) => c.startsWith('drain'))).toHaveLength(6);
  });

  it('skips verify when the plan says so and geo when resync is off', async () => {
    const f: Fakes = { calls: [] };
    await runToEnd(f, { ...input, verify: false, geoResync: false, sources: ['nfs-1'], kinds: ['snippets'] });
    expect(f.calls).toEqual(['preflight', 'storages', 'readWeights', 'weights', 'drain:nfs-1/snippets']);
  });

  it('goes through the expected state values, one snapshot per step (what the runtime checkpoints)', async () => {
    const { values } = await runToEnd(
      { calls: [] },
      { ...input, sources: ['nfs-1'], kinds: ['projects', 'groups'], geoResync: false },
    );
    expect([...new Set(values)]).toEqual([
      '"preflight"',
      '"storages"',
      '{"weights":"reading"}',
      '{"weights":"writing"}',
      '"drain"',
      '"verify"',
      '"done"',
    ]);
    // The drain state is entered once per (source, kind): two snapshots with different indices.
    expect(values.filter((v) => v === '"drain"')).toHaveLength(2);
  });

  it('with no sources or kinds, skips the drain step', async () => {
    const f: Fakes = { calls: [] };
    const { snapshot } = await runToEnd(f, { ...input, sources: [], geoResync: false });
    expect(snapshot.value).toBe('done');
    expect(f.calls.some((c) => c.startsWith('drain'))).toBe(false);
  });

  it('keeps carried-over previous weights instead of reading them again', async () => {
    const f: Fakes = { calls: [] };
    const { snapshot } = await runToEnd(f, { ...input, previousWeights: { default: 100, 'nfs-1': 50 } });
    expect(f.calls).not.toContain('readWeights');
    expect(snapshot.context.previousWeights).toEqual({ default: 100, 'nfs-1': 50 });
  });

  it('restored from a snapshot taken mid-drain, re-invokes the same (source, kind) and nothing before it', async () => {
    const first: Fakes = { calls: [] };
    let release: (() => void) | undefined;
    first.drain = (i) => {
      if (i.source === 'nfs-2' && i.kind === 'snippets')
        return new Promise(() => {
          release = () => undefined;
        });
      return Promise.resolve({ moved: 1, quarantined: 0, remaining: 0 });
    };
    const actor = createActor(runMachine.provide({ actors: fakeActors(first) }), { input });
    actor.start();
    await waitFor(actor, (s) => s.matches('drain') && s.context.sourceIndex === 1 && s.context.kindIndex === 1);
    expect(first.calls.at(-1)).toBe('drain:nfs-2/snippets');
    const persisted: Snapshot<unknown> = JSON.parse(JSON.stringify(actor.getPersistedSnapshot()));
    actor.stop();
    void release;

    const second: Fakes = { calls: [] };
    const restored = createActor(runMachine.provide({ actors: fakeActors(second) }), { snapshot: persisted, input });
    restored.start();
    await toPromise(restored);
    expect(second.calls).toEqual(['drain:nfs-2/snippets', 'drain:nfs-2/groups', 'verify', 'geo']);
    const end = restored.getSnapshot();
    expect(end.value).toBe('done');
    expect(Object.keys(end.context.drains)).toHaveLength(6);
    expect(end.context.previousWeights).toEqual({ default: 100 });
  });

  it('drains every source and kind in one invocation with the one schedule, recording each pair', async () => {
    const f: Fakes = {
      calls: [],
      drainInputs: [],
      access: { groups: 'records' },
      drain: async (i) => ({
        moved: 12,
        quarantined: 1,
        remaining: 0,
        perPair: (i.pairs ?? []).map((p) => ({
          source: p.source,
          kind: p.kind,
          moved: 2,
          quarantined: p.kind === 'groups' ? 1 : 0,
          remaining: 0,
        })),
      }),
    };
    const { snapshot } = await runToEnd(f, { ...input, order: 'together' });
    expect(f.calls).toEqual([
      'preflight',
      'storages',
      'readWeights',
      'weights',
      'drain:nfs-1/projects',
      'verify',
      'geo',
    ]);
    expect(f.drainInputs?.[0]?.pairs).toEqual([
      { source: 'nfs-1', kind: 'projects', access: 'listing' },
      { source: 'nfs-1', kind: 'snippets', access: 'listing' },
      { source: 'nfs-1', kind: 'groups', access: 'records' },
      { source: 'nfs-2', kind: 'projects', access: 'listing' },
      { source: 'nfs-2', kind: 'snippets', access: 'listing' },
      { source: 'nfs-2', kind: 'groups', access: 'records' },
    ]);
    expect(snapshot.value).toBe('doneWithQuarantine');
    expect(Object.keys(snapshot.context.drains)).toHaveLength(6);
    expect(snapshot.context.drains['nfs-2/groups']).toEqual({
      source: 'nfs-2',
      kind: 'groups',
      moved: 2,
      quarantined: 1,
      remaining: 0,
    });
  });

  it('restored from a snapshot taken mid-drain before the one schedule, goes on pair by pair', async () => {
    const first: Fakes = { calls: [] };
    first.drain = (i) =>
      i.source === 'nfs-1' && i.kind === 'groups'
        ? new Promise(() => undefined)
        : Promise.resolve({ moved: 1, quarantined: 0, remaining: 0 });
    // An older build's input: no order (its snapshots have none either).
    const actor = createActor(runMachine.provide({ actors: fakeActors(first) }), { input });
    actor.start();
    await waitFor(actor, (s) => s.matches('drain') && s.context.kindIndex === 2);
    const persisted: Snapshot<unknown> = JSON.parse(JSON.stringify(actor.getPersistedSnapshot()));
    actor.stop();

    // This build restores it under a plan whose order is the one schedule.
    const second: Fakes = { calls: [] };
    const restored = createActor(runMachine.provide({ actors: fakeActors(second) }), {
      snapshot: persisted,
      input: { ...input, order: 'together' },
    });
    restored.start();
    await toPromise(restored);
    expect(second.calls).toEqual([
      'drain:nfs-1/groups',
      'drain:nfs-2/projects',
      'drain:nfs-2/snippets',
      'drain:nfs-2/groups',
      'verify',
      'geo',
    ]);
    expect(Object.keys(restored.getSnapshot().context.drains)).toHaveLength(6);
  });

  it('restored from a snapshot taken mid-drain of the one schedule, re-invokes it with every pair', async () => {
    const first: Fakes = { calls: [], drain: () => new Promise(() => undefined) };
    const actor = createActor(runMachine.provide({ actors: fakeActors(first) }), {
      input: { ...input, order: 'together' },
    });
    actor.start();
    await waitFor(actor, (s) => s.matches('drain'));
    const persisted: Snapshot<unknown> = JSON.parse(JSON.stringify(actor.getPersistedSnapshot()));
    actor.stop();

    const second: Fakes = {
      calls: [],
      drainInputs: [],
      drain: async (i) => ({
        moved: 6,
        quarantined: 0,
        remaining: 0,
        perPair: (i.pairs ?? []).map((p) => ({
          source: p.source,
          kind: p.kind,
          moved: 1,
          quarantined: 0,
          remaining: 0,
        })),
      }),
    };
    const restored = createActor(runMachine.provide({ actors: fakeActors(second) }), { snapshot: persisted, input });
    restored.start();
    await toPromise(restored);
    expect(second.calls).toEqual(['drain:nfs-1/projects', 'verify', 'geo']);
    expect(second.drainInputs?.[0]?.pairs).toHaveLength(6);
    expect(restored.getSnapshot().value).toBe('done');
  });

  it('restored mid-write of the weights, keeps the weights seen before the write', async () => {
    const first: Fakes = { calls: [] };
    const actors = fakeActors(first);
    actors.weights = fromPromise(() => new Promise<never>(() => undefined));
    const actor = createActor(runMachine.provide({ actors }), { input });
    actor.start();
    await waitFor(actor, (s) => s.matches({ weights: 'writing' }));
    const persisted = JSON.parse(JSON.stringify(actor.getPersistedSnapshot()));
    actor.stop();
    const second: Fakes = { calls: [] };
    const secondActors = fakeActors(second);
    secondActors.readWeights = fromPromise(async () => ({ default: 0, cluster: 100 }));
    const restored = createActor(runMachine.provide({ actors: secondActors }), { snapshot: persisted, input });
    restored.start();
    await toPromise(restored);
    expect(second.calls[0]).toBe('weights');
    expect(restored.getSnapshot().context.previousWeights).toEqual({ default: 100 });
  });

  it('has a version and a JSON-safe context with no secrets', async () => {
    expect(MACHINE_VERSION).toBeGreaterThan(0);
    const { snapshot } = await runToEnd({ calls: [] });
    expect(JSON.parse(JSON.stringify(snapshot.context))).toEqual(snapshot.context);
  });
});

describe('kinds the instance cannot list or move', () => {
  it('drops a kind pre-flight found unsupported, and passes each drain and verify how its kind is found', async () => {
    const f: Fakes = {
      calls: [],
      access: { projects: 'listing', snippets: 'records', groups: 'unsupported' },
      drainInputs: [],
      verifyInputs: [],
    };
    const { snapshot } = await runToEnd(f);
    expect(snapshot.value).toBe('done');
    expect(snapshot.context.kinds).toEqual(['projects', 'snippets']);
    expect(f.calls.filter((c) => c.startsWith('drain:'))).toEqual([
      'drain:nfs-1/projects',
      'drain:nfs-1/snippets',
      'drain:nfs-2/projects',
      'drain:nfs-2/snippets',
    ]);
    expect(f.drainInputs?.map((i) => i.access)).toEqual(['listing', 'records', 'listing', 'records']);
    // Each drain names the next one of the sequence (whose items may fill its tail); the last none.
    expect(f.drainInputs?.map((i) => (i.ahead ? `${i.ahead.source}/${i.ahead.kind}/${i.ahead.access}` : null))).toEqual(
      ['nfs-1/snippets/records', 'nfs-2/projects/listing', 'nfs-2/snippets/records', null],
    );
    expect(f.verifyInputs).toEqual([
      { kinds: ['projects', 'snippets'], access: { projects: 'listing', snippets: 'records', groups: 'unsupported' } },
    ]);
  });

  it('with every kind unsupported, drains nothing and still verifies and finishes', async () => {
    const f: Fakes = { calls: [], access: { groups: 'unsupported' } };
    const { snapshot } = await runToEnd(f, { ...input, kinds: ['groups'] });
    expect(snapshot.value).toBe('done');
    expect(f.calls.some((c) => c.startsWith('drain:'))).toBe(false);
  });
});
