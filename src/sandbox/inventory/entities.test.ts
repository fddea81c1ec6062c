import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { EntityRow } from './entities.js';
import { projectEntity, projectJson } from './entities.js';
import { assertProperty } from '../../../test/support/property.js';

const row: EntityRow = {
  id: 42,
  name: 'project-42',
  path: 'project-42',
  namespace: 'group-7',
  visibility: 'internal',
  storage: 'nfs-1',
  read_only: 1,
  size_mb: 12.5,
  commit_count: 0,
  owner_id: null,
  project_id: null,
  created_at: '2024-01-01T00:00:00.000Z',
  updated_at: '2024-01-02T00:00:00.000Z',
};

describe('projectJson', () => {
  it('writes exactly what JSON.stringify writes for projectEntity, for every option combination', () => {
    for (const admin of [false, true]) {
      for (const simple of [false, true]) {
        const opts = { origin: 'http://127.0.0.1:4567', admin };
        expect(projectJson(row, opts, simple)).toBe(JSON.stringify(projectEntity(row, opts, simple)));
      }
    }
  });

  it('escapes names, paths and namespaces that need it (quotes, backslashes, control and non-ASCII characters)', () => {
    const text = fc.string({ unit: 'binary', maxLength: 12 });
    assertProperty(
      fc.property(
        text,
        text,
        text,
        text,
        fc.option(fc.integer({ min: 1, max: 1e6 })),
        fc.nat(),
        fc.boolean(),
        (name, path, namespace, storage, owner, commits, admin) => {
          const r: EntityRow = { ...row, name, path, namespace, storage, owner_id: owner, commit_count: commits };
          const opts = { origin: 'http://sandbox.test:80', admin, sshHost: 'sandbox.test' };
          expect(projectJson(r, opts)).toBe(JSON.stringify(projectEntity(r, opts)));
        },
      ),
      { numRuns: 300 },
    );
    const odd: EntityRow = { ...row, name: 'a"b\\c\n\u0001\ud800 é', namespace: 'g/"x"', path: '\u2028' };
    const opts = { origin: 'http://127.0.0.1:1', admin: true };
    expect(projectJson(odd, opts)).toBe(JSON.stringify(projectEntity(odd, opts)));
    expect(JSON.parse(projectJson(odd, opts))).toMatchObject({ name: odd.name, path_with_namespace: 'g/"x"/\u2028' });
  });
});
