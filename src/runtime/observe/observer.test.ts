import { describe, expect, it } from 'vitest';
import { notifyObservers, stopObservers } from './observer.js';
import type { RunObserver } from './observer.js';

describe('run observers', () => {
  it('are all told, and what one throws (at once or later) is logged, never passed on', async () => {
    const warned: unknown[] = [];
    const log = { warn: (o: unknown) => void warned.push(o) };
    const seen: string[] = [];
    const observers: RunObserver[] = [
      {
        progress: () => {
          throw new Error('disk full');
        },
        stopped: () => Promise.reject(new Error('late')),
      },
      {
        progress: () => void seen.push('progress'),
        response: (e) => void seen.push(`${e.method} ${e.status}`),
        stopped: () => void seen.push('stopped'),
      },
      {},
    ];
    notifyObservers(observers, log, 'progress');
    notifyObservers(observers, log, 'response', {
      method: 'GET',
      path: '/x',
      attempt: 1,
      mutating: false,
      status: 200,
    });
    await stopObservers(observers, log);
    expect(seen).toEqual(['progress', 'GET 200', 'stopped']);
    expect(warned).toHaveLength(2);
  });
});
