import { describe, expect, it } from 'vitest';
import { WindowSyntaxError, nextChange, openTimeBetween, openWindow, parseWindow, upcomingWindows } from './windows.js';
import type { Schedule } from './windows.js';

const at = (iso: string) => Date.parse(iso);
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
const schedule = (timezone: string, ...windows: string[]): Schedule => ({
  timezone,
  windows: windows.map(parseWindow),
});

describe('window syntax', () => {
  it('reads day ranges, single days, daily, and spans across days', () => {
    expect(parseWindow('Mon-Fri 22:00-06:00').spans).toHaveLength(5);
    expect(parseWindow('Tue 09:30-11:00').spans).toEqual([{ start: 2 * 1440 + 570, end: 2 * 1440 + 660 }]);
    expect(parseWindow('daily 01:00-03:00').spans).toHaveLength(7);
    expect(parseWindow('Mon-Sun 01:00-03:00').spans).toHaveLength(7);
    expect(parseWindow('Fri-Mon 20:00-23:00').spans.map((s) => Math.floor(s.start / 1440))).toEqual([5, 6, 0, 1]);
    expect(parseWindow('Sat 00:00-Mon 00:00').spans).toEqual([{ start: 6 * 1440, end: 8 * 1440 }]);
    expect(parseWindow('Mon 08:00-24:00').spans).toEqual([{ start: 1440 + 480, end: 2880 }]);
  });

  it.each([
    'daily 03:00-03:00',
    'daily 00:00-00:00',
    'Mon-Fri 22:00-22:00',
    'Tue 09:30-09:30',
    'Sat 00:00-Sat 00:00',
    'Sun 12:00-Sun 12:00',
  ])('refuses "%s", which ends when it starts, and says how to write always', (text) => {
    expect(() => parseWindow(text)).toThrow(WindowSyntaxError);
    expect(() => parseWindow(text)).toThrow(
      /ends when it starts; for a schedule that is always open write "daily 00:00-24:00" \(or leave out schedule\)/,
    );
  });

  it('takes a whole day or a whole week written with a different end', () => {
    expect(parseWindow('daily 00:00-24:00').spans).toHaveLength(7);
    expect(parseWindow('Mon 03:00-Tue 03:00').spans).toEqual([{ start: 1440 + 180, end: 2 * 1440 + 180 }]);
    expect(parseWindow('Sat 00:00-Fri 23:59').spans).toEqual([{ start: 6 * 1440, end: 13 * 1440 - 1 }]);
  });

  it.each(['Mon-Fri 22:00', 'Monday 22:00-06:00', 'Mon-Fri 25:00-06:00', 'Mon-Fri 22:60-06:00', 'mon 01:00-02:00', ''])(
    'rejects "%s" and says how to write one',
    (text) => {
      expect(() => parseWindow(text)).toThrow(WindowSyntaxError);
      expect(() => parseWindow(text)).toThrow(/Mon-Fri 22:00-06:00/);
    },
  );
});

describe('open or closed, in UTC', () => {
  const s = schedule('UTC', 'Mon-Fri 22:00-06:00');
  it('runs past midnight: Friday 23:00 and Saturday 05:59 are open, Saturday 06:00 and 22:00 are not', () => {
    // 2026-11-27 is a Friday.
    expect(openWindow(s, at('2026-11-27T23:00:00Z'))).not.toBeNull();
    expect(openWindow(s, at('2026-11-28T05:59:00Z'))).not.toBeNull();
    expect(openWindow(s, at('2026-11-28T06:00:00Z'))).toBeNull();
    expect(openWindow(s, at('2026-11-28T22:00:00Z'))).toBeNull();
    // Monday 05:00 is closed: Sunday night has no window.
    expect(openWindow(s, at('2026-11-30T05:00:00Z'))).toBeNull();
  });

  it('a span across the end of the week (Sat 22:00 to Sun 06:00) is open on Sunday morning', () => {
    const w = schedule('UTC', 'Sat 22:00-Sun 06:00');
    expect(openWindow(w, at('2026-11-29T03:00:00Z'))).not.toBeNull();
    expect(openWindow(w, at('2026-11-29T07:00:00Z'))).toBeNull();
  });

  it('finds the next opening and closing', () => {
    expect(iso(nextChange(s, at('2026-11-28T12:00:00Z')))).toBe('2026-11-30T22:00:00.000Z');
    expect(iso(nextChange(s, at('2026-11-30T23:10:30Z')))).toBe('2026-12-01T06:00:00.000Z');
    expect(nextChange(schedule('UTC', 'daily 00:00-24:00'), at('2026-11-28T12:00:00Z'))).toBeNull();
  });

  it('lists upcoming windows and sums open time', () => {
    const up = upcomingWindows(s, at('2026-11-30T12:00:00Z'), 2);
    expect(up.map((u) => [iso(u.opens), iso(u.closes)])).toEqual([
      ['2026-11-30T22:00:00.000Z', '2026-12-01T06:00:00.000Z'],
      ['2026-12-01T22:00:00.000Z', '2026-12-02T06:00:00.000Z'],
    ]);
    expect(openTimeBetween(s, at('2026-11-30T12:00:00Z'), at('2026-12-01T12:00:00Z'))).toBe(8 * 3_600_000);
  });
});

describe('daylight saving, Europe/Berlin', () => {
  const s = schedule('Europe/Berlin', 'daily 01:00-04:00');
  it('spring forward: the night of 2026-03-29 has two open hours, not three', () => {
    const open = openTimeBetween(s, at('2026-03-28T12:00:00Z'), at('2026-03-29T12:00:00Z'));
    expect(open).toBe(2 * 3_600_000);
    // 01:00 CET is 00:00 UTC; 04:00 CEST is 02:00 UTC.
    expect(iso(nextChange(s, at('2026-03-28T12:00:00Z')))).toBe('2026-03-29T00:00:00.000Z');
    expect(iso(nextChange(s, at('2026-03-29T00:30:00Z')))).toBe('2026-03-29T02:00:00.000Z');
  });

  it('fall back: the night of 2026-10-25 has four open hours', () => {
    expect(openTimeBetween(s, at('2026-10-24T12:00:00Z'), at('2026-10-25T12:00:00Z'))).toBe(4 * 3_600_000);
  });

  it('a window starting inside the skipped hour opens when the clock jumps', () => {
    const gap = schedule('Europe/Berlin', 'Sun 02:30-05:00');
    // 2026-03-29 02:00 CET becomes 03:00 CEST (01:00 UTC): 02:30 never happens; the window opens at 03:00 local.
    expect(iso(nextChange(gap, at('2026-03-28T12:00:00Z')))).toBe('2026-03-29T01:00:00.000Z');
  });

  it("a window in another zone is judged by that zone's wall clock", () => {
    const tokyo = schedule('Asia/Tokyo', 'Mon 09:00-10:00');
    // Monday 09:30 in Tokyo is Monday 00:30 UTC.
    expect(openWindow(tokyo, at('2026-11-30T00:30:00Z'))).not.toBeNull();
    expect(openWindow(tokyo, at('2026-11-30T09:30:00Z'))).toBeNull();
  });
});

describe('does the estimated work fit the windows (dry run)', () => {
  it('says in how many windows the work ends, or that it does not fit', async () => {
    const { windowFit } = await import('../report/final.js');
    const s = schedule('UTC', 'Mon-Fri 22:00-06:00');
    const mon = at('2026-11-30T12:00:00Z');
    expect(windowFit(s, mon, 3 * 3_600_000)).toEqual([
      '  maintenance windows: the work fits in 1 window(s), from Mon 2026-11-30 22:00 UTC to about Tue 2026-12-01 01:00 UTC',
    ]);
    expect(windowFit(s, mon, 10 * 3_600_000).join('\n')).toMatch(
      /fits in 2 window\(s\).*about Wed 2026-12-02 00:00 UTC\n.*first window.*too short/,
    );
    expect(windowFit(s, mon, 1000 * 3_600_000)[0]).toMatch(/does NOT fit in the next 60 windows/);
  });
});
