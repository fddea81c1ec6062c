import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseDocument } from 'yaml';
import { parsePlanText } from '../plan/load.js';
import { TWIN_ADMIN_TOKEN } from './seed-text.js';
import { TWIN_TOKEN_VAR, TWIN_URL_VAR, rehearsalPlanFor, renderRehearsalPlan } from './rehearsal-plan.js';

const dir = mkdtempSync(join(tmpdir(), 'shardmove-rehearsal-plan-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
writeFileSync(join(dir, 'token.txt'), 'glpat-production-token-000000001\n', { mode: 0o600 });
writeFileSync(join(dir, 'prom.txt'), 'prometheus-production-token\n', { mode: 0o600 });
writeFileSync(join(dir, 'list.txt'), 'acme/web\n');

/** A plan that reaches production in every way a plan can. */
const PRODUCTION = `# Run with: GITLAB_URL=https://gitlab.example.com bin/shardmove run plans/retire.yaml
version: 1
name: retire
checkpoint: ../runs/retire.db
instance:
  url: https://gitlab.example.com
  token_file: token.txt
  sudo: ops-admin
move:
  from: [nfs-1]
  to: cluster
  concurrency: 7
  select: { file: list.txt }
prometheus:
  url: https://prometheus.example.com
  token_file: prom.txt
throttle:
  latency_p90: 3s
  rules:
    - { name: disk, query: 'max(disk_busy)', above: 0.9, action: pause }
capacity:
  keep_free: 100GiB
  storages: { cluster: { free: 'node_filesystem_avail_bytes{mountpoint="/cluster"}' } }
notify:
  - { on: ['*'], webhook: { url: 'https://hooks.example.com/shardmove' } }
`;

describe('the rehearsal plan', () => {
  const planFile = join(dir, 'retire.yaml');
  const file = join(dir, 'twin', 'retire.plan.yaml');

  it('reads its instance from the twin variables only, keeps nothing that reaches production, and has a checkpoint of its own', () => {
    const made = renderRehearsalPlan(PRODUCTION, { planFile, planName: 'retire', file, env: {} });
    if ('problem' in made) throw new Error(made.problem);
    const doc = parseDocument(made.text).toJS() as Record<string, Record<string, unknown>>;
    expect(doc.instance).toEqual({ url: `\${${TWIN_URL_VAR}}`, token: `\${${TWIN_TOKEN_VAR}}` });
    expect(Object.keys(doc)).not.toContain('prometheus');
    expect(Object.keys(doc)).not.toContain('capacity');
    expect(Object.keys(doc)).not.toContain('notify');
    expect(doc.throttle).toEqual({ latency_p90: '3s' });
    expect(doc.checkpoint).toBe('state/retire.twin.db');
    expect((doc.move as { select: unknown }).select).toEqual({ file: join('..', 'list.txt') });
    for (const production of [
      'gitlab.example.com',
      'prometheus.example.com',
      'hooks.example.com',
      'token.txt',
      'ops-admin',
    ])
      expect(made.text, production).not.toContain(production);
    expect(made.removed.map((r) => r.split(' ')[0])).toEqual([
      'prometheus',
      'throttle.rules',
      'notify',
      'instance.sudo',
      'capacity',
    ]);
    // It loads as the rehearsal reads it, with the twin's URL and token, and without them it does not.
    const env = { [TWIN_URL_VAR]: 'http://127.0.0.1:8081', [TWIN_TOKEN_VAR]: TWIN_ADMIN_TOKEN };
    const loaded = parsePlanText(made.text, file, { env, baseDir: join(dir, 'twin'), resolveSecrets: false });
    expect(loaded.plan.instance.url).toBe('http://127.0.0.1:8081');
    expect(loaded.plan.move.concurrency).toBe(7);
    expect(() => parsePlanText(made.text, file, { env: {}, baseDir: join(dir, 'twin') })).toThrow(
      new RegExp(`${TWIN_URL_VAR} is not set`),
    );
  });

  it('says why there is none when the copy would not load', () => {
    const until = PRODUCTION.replace('  concurrency: 7\n', '  concurrency: 7\n  until: { free: 2TiB }\n').replace(
      'storages: { cluster: { free: \'node_filesystem_avail_bytes{mountpoint="/cluster"}\' } }',
      "storages: { cluster: { free: 'x' }, nfs-1: { free: 'y' } }",
    );
    const made = renderRehearsalPlan(until, { planFile, planName: 'retire', file, env: {} });
    expect('problem' in made && made.problem).toMatch(/move\.until/);
  });

  it('is named beside the seed', () => {
    expect(rehearsalPlanFor('/x/twin.yaml')).toBe('/x/twin.plan.yaml');
    expect(rehearsalPlanFor('/x/-odd seed.YML')).toBe('/x/-odd seed.plan.yaml');
  });
});
