/** The terminal frame of `status --watch` (pure): redrawn in place, cut to the width, escaped. */
import { describe, expect, it } from 'vitest';
import { FakeClock } from './support/fake-clock.js';
import { fitLine, watchBlock, watchFrame, watchIntervalOf, watchStatus } from '../src/cli/status-watch.js';

describe('watchFrame', () => {
  it('starts at the cursor home with the cursor hidden, erases each line end and below, and cuts to the width', () => {
    const frame = watchFrame('short\nthis line is far too long for ten\n', { columns: 10, rows: 24 });
    expect(frame.startsWith('\x1b[?25l\x1b[H')).toBe(true);
    expect(frame.endsWith('\n\x1b[J')).toBe(true);
    expect(frame).toContain('short\x1b[K\n');
    expect(frame).toContain('this line…\x1b[K');
    expect(frame).not.toContain('far');
  });

  it('escapes control characters from the instance and keeps within the rows', () => {
    const frame = watchFrame('evil\x1b[2Jname\n', { columns: 80 });
    expect(frame).toContain('evil\\u001b[2Jname');
    const tall = watchFrame(Array.from({ length: 50 }, (_, i) => `line ${i}`).join('\n'), { columns: 80, rows: 10 });
    expect(tall.split('\n').length - 1).toBe(9);
    expect(tall).toContain('… 42 more lines');
  });

  it('never cuts a command to paste: printed whole, its rows counted against the screen', () => {
    const command = '       `shardmove control /tmp/a long path/plan.yaml --unpause` goes on';
    const frame = watchFrame(`now: PAUSED\n${command}\nlast\n`, { columns: 30, rows: 24 });
    expect(frame).toContain(`${command}\x1b[K`);
    expect(frame).toContain('last\x1b[K');
    // 70 characters take 3 rows of 30: with 6 rows, 1 + 3 rows fit, and the note takes the last.
    const tall = watchFrame(`a\n${command}\nb\nc\nd\n`, { columns: 30, rows: 6 });
    expect(tall).toContain(command);
    expect(tall).toContain('… 3 more lines');
    const plain = watchFrame('the word shardmove in a long line of text here', { columns: 20 });
    expect(plain).toContain('the word shardmove …');
  });

  it('fitLine counts characters, not UTF-16 units', () => {
    expect(fitLine('ééééé', 5)).toBe('ééééé');
    expect(fitLine('éééééé', 5)).toBe('éééé…');
  });
});

describe('watchBlock and the interval', () => {
  it('puts a UTC header before each block', () => {
    expect(watchBlock('a\n', Date.UTC(2026, 0, 2, 3, 4, 5))).toBe(
      '=== shardmove status at 2026-01-02 03:04:05 UTC ===\na\n',
    );
  });
  it('defaults to 2s and reads plan durations', () => {
    expect(watchIntervalOf({ watch: true })).toBe(2000);
    expect(watchIntervalOf({ watch: true, interval: '1m30s' })).toBe(90_000);
    expect(() => watchIntervalOf({ interval: '5s' })).toThrow(/add --watch/);
    expect(() => watchIntervalOf({ watch: true, interval: '999ms' })).toThrow(/too short/);
  });
});

describe('watchStatus on a terminal', () => {
  it('draws frames on the raw terminal and shows the cursor again when interrupted', async () => {
    const written: string[] = [];
    const raw = {
      isTTY: true,
      columns: 20,
      rows: 30,
      write: (t: string, cb?: (e?: Error | null) => void) => (written.push(t), cb?.(), true),
    };
    const controller = new AbortController();
    let looks = 0;
    const code = await watchStatus(
      async () => {
        looks += 1;
        if (looks === 2) controller.abort();
        return { text: `look ${looks}\n` };
      },
      {
        intervalMs: 1000,
        json: false,
        signal: controller.signal,
        stdout: raw as never,
        stderr: raw as never,
        raw: () => raw as never,
        clock: new FakeClock(0),
      },
    );
    expect(code).toBe(0);
    // The second look came after the abort: not drawn, so no frame is half of one.
    expect(written).toHaveLength(2);
    expect(written[0]).toContain('look 1');
    expect(written[1]).toBe('\x1b[?25h');
  });
});
