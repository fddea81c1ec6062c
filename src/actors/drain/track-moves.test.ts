import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../../test/support/fake-clock.js';
import { FakeInstance } from '../../../test/support/fake-instance.js';
import { range } from '../../../test/support/drain-harness.js';
import { pollMoves } from './track-moves.js';

function instanceWithMoves(n: number): FakeInstance {
  const fake = new FakeInstance({ clock: new FakeClock() });
  fake.addItems('projects', 'nfs-1', range(1, n));
  for (const id of range(1, n)) fake.startForeignMove('projects', id, 'cluster');
  return fake;
}

describe('pollMoves', () => {
  it('finds recent moves on the first page with one request', async () => {
    const fake = instanceWithMoves(500);
    const res = await pollMoves(fake, 'projects', [450, 480, 500]);
    expect([...res.found.keys()].sort()).toEqual([450, 480, 500]);
    expect(fake.stats().requests).toBe(1);
  });

  it('fetches an old long-running move by id instead of paging back to it', async () => {
    const fake = instanceWithMoves(5000);
    const res = await pollMoves(fake, 'projects', [3, 4950, 4800]);
    expect(res.found.size).toBe(3);
    // Page 1 (5000..4901) holds 4950, page 2 none of ours: stop there; 4800 and 3 by GET.
    expect(fake.stats().requests).toBe(4);
  });

  it('pages past moves newer than all of ours (POSTs answered since) instead of GETting ours one by one', async () => {
    const fake = instanceWithMoves(1000);
    // Ours are 501..700; 701..1000 were created after them (three pages with none of ours).
    const res = await pollMoves(fake, 'projects', range(501, 700));
    expect(res.found.size).toBe(200);
    expect(fake.stats().requests).toBe(5);
  });

  it('reports ids the instance does not know as missing', async () => {
    const fake = instanceWithMoves(10);
    const res = await pollMoves(fake, 'projects', [9, 12345]);
    expect(res.missing).toEqual([12345]);
  });

  it('discovers every move above a baseline across pages', async () => {
    const fake = instanceWithMoves(350);
    const res = await pollMoves(fake, 'projects', [], 120);
    expect(res.discovered).toHaveLength(230);
  });
});
