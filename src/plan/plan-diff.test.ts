import { describe, expect, it } from 'vitest';
import { canonicalJson, planHashInput } from './hash.js';
import { parsePlanText } from './load.js';
import { diffPlanRecords, formatPlanChanges } from './plan-diff.js';

const ENV = { GITLAB_URL: 'https://gitlab.example.com', GITLAB_TOKEN: 'glpat-Zx8Kd2mQpL0vZ7rT4yWnB' };
const MINIMAL = `version: 1
name: retire-nfs
instance:
  url: \${GITLAB_URL}
  token: \${GITLAB_TOKEN}
move:
  from: [nfs-1, nfs-2]
  to: cluster
  concurrency: 4
`;

/** The record a checkpoint keeps of a plan text. */
const record = (text: string) =>
  canonicalJson(
    planHashInput(parsePlanText(text, 'plan.yaml', { env: ENV, baseDir: '/plans', readFile: () => undefined }).plan),
  );

const changes = (before: string, after: string) => formatPlanChanges(diffPlanRecords(record(before), record(after)));

describe('diffPlanRecords: which fields of the plan changed', () => {
  it('names each changed field by its YAML path, with both values as a plan writes them', () => {
    const after = MINIMAL.replace('concurrency: 4', 'concurrency: 8').concat(
      'retry: {max_attempts: 5}\npoll: {interval: 30s}\n',
    );
    expect(changes(MINIMAL, after)).toEqual([
      'move.concurrency: 4 -> 8',
      'poll.interval: 5s -> 30s',
      'retry.max_attempts: 3 -> 5',
    ]);
  });

  it('shows lists whole, mappings key by key, and a section written or left out', () => {
    const after = MINIMAL.replace('from: [nfs-1, nfs-2]', 'from: [nfs-1]').concat(
      'weights: {cluster: 50}\nschedule: {windows: ["Mon-Fri 22:00-06:00"]}\n',
    );
    expect(changes(MINIMAL, after)).toEqual([
      'move.from: [nfs-1, nfs-2] -> [nfs-1]',
      'schedule: (absent) -> {timezone: UTC, windows: ["Mon-Fri 22:00-06:00"]}',
      'weights.cluster: 100 -> 50',
      'weights.nfs-2: 0 -> (absent)',
    ]);
  });

  it('names the keys inside fields with a shape of their own as the plan writes them, in their units', () => {
    const before = MINIMAL.concat(
      'retry: {pause_after: {failures: 5, within: 10m}}\ncapacity: {keep_free: 1GiB, storages: {cluster: {free: 1KiB}}}\n',
    );
    const after = MINIMAL.replace('  to: cluster\n', '  to: cluster\n  until: {moved: 2TiB}\n').concat(
      'retry: {pause_after: {failures: 5, within: 1h}}\ncapacity: {keep_free: 2GiB, storages: {cluster: {free: 1TiB}}}\n',
    );
    expect(changes(before, after)).toEqual([
      'capacity.keep_free: 1.0 GiB -> 2.0 GiB',
      'capacity.storages.cluster.free: 1.0 KiB -> 1.0 TiB',
      'move.until: (absent) -> {moved: 2.0 TiB}',
      'retry.pause_after.within: 10m -> 1h',
    ]);
  });

  it('calls the running stuck limit by its name, not the key the hash keeps for old checkpoints', () => {
    const after = MINIMAL.concat('poll: {stuck_running_after: 2h}\n');
    expect(changes(MINIMAL, after)).toEqual(['poll.stuck_running_after: 1h -> 2h']);
  });

  it('leaves credentials out: a rotated token or a token file is no change', () => {
    const fromFile = MINIMAL.replace('  token: ${GITLAB_TOKEN}', '  token_file: secret.txt');
    const rec = canonicalJson(
      planHashInput(
        parsePlanText(fromFile, 'plan.yaml', {
          env: ENV,
          baseDir: '/plans',
          readFile: () => ({ text: 'glpat-OtherTokenValue0123456789', mode: 0o600 }),
        }).plan,
      ),
    );
    expect(diffPlanRecords(record(MINIMAL), rec)).toEqual([]);
    expect(rec).not.toContain('glpat-');
  });

  it('keeps a refusal short: long values are cut, and past the limit the rest is counted', () => {
    const long = Array.from({ length: 30 }, (_, i) => `nfs-${i + 10}`);
    const lines = formatPlanChanges(
      diffPlanRecords('{"move":{"from":["nfs-1"]}}', JSON.stringify({ move: { from: long } })),
    );
    expect(lines).toHaveLength(1);
    expect(lines[0]!.length).toBeLessThan(140);
    expect(lines[0]).toMatch(/\.\.\.$/);
    const many = diffPlanRecords(
      '{}',
      JSON.stringify(Object.fromEntries(Array.from({ length: 20 }, (_, i) => [i, i]))),
    );
    expect(formatPlanChanges(many, 12).at(-1)).toBe('... and 8 more');
  });
});
