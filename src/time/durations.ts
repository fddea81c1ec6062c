/**
 * Durations as plans write them: one or more `<integer><unit>` parts, largest unit first, each unit
 * at most once ("500ms", "30s", "5m", "1h", "1h30m"). Bare numbers are refused because "30" could
 * mean seconds or milliseconds, and a wrong guess turns a 30-second backoff into a 30-millisecond one.
 */

const UNIT_MS = { h: 3_600_000, m: 60_000, s: 1_000, ms: 1 } as const;
type Unit = keyof typeof UNIT_MS;
const ORDER: readonly Unit[] = ['h', 'm', 's', 'ms'];
const PART = /(\d+)(ms|h|m|s)/y;

/** The result of parsing a duration: milliseconds, or why the text is not a duration. */
export type DurationResult = { ok: true; ms: number } | { ok: false; reason: string };

/** Parses a plan duration into milliseconds. Pure; never throws. */
export function parseDuration(text: string): DurationResult {
  const s = text.trim();
  const hint = 'write a number with a unit: "500ms", "30s", "5m", "1h" or "1h30m"';
  if (s === '') return { ok: false, reason: `empty duration; ${hint}` };
  if (/^\d+(\.\d+)?$/.test(s)) return { ok: false, reason: `a bare number is ambiguous; ${hint}` };
  let total = 0;
  let last = -1;
  PART.lastIndex = 0;
  while (PART.lastIndex < s.length) {
    const at = PART.lastIndex;
    const m = PART.exec(s);
    if (!m || m.index !== at) return { ok: false, reason: `not a duration; ${hint}` };
    const unit = m[2] as Unit;
    const rank = ORDER.indexOf(unit);
    if (rank <= last) return { ok: false, reason: `units must go from largest to smallest, each once; ${hint}` };
    last = rank;
    total += Number(m[1]) * UNIT_MS[unit];
  }
  if (!Number.isSafeInteger(total)) return { ok: false, reason: 'duration too large' };
  return { ok: true, ms: total };
}

/** Formats milliseconds exactly the way plans write them (parseDuration reads it back), e.g. 5_400_000 -> "1h30m", 0 -> "0s". */
export function formatPlanDuration(ms: number): string {
  if (ms === 0) return '0s';
  let rest = ms;
  let out = '';
  for (const unit of ORDER) {
    const n = Math.floor(rest / UNIT_MS[unit]);
    if (n > 0) {
      out += `${n}${unit}`;
      rest -= n * UNIT_MS[unit];
    }
  }
  return out;
}
