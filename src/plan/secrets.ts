/**
 * What counts as a secret in a plan file. A token pasted into a plan ends up in version control, CI
 * logs and backups, so the loader refuses any text that looks like one, wherever it is (values,
 * keys, comments), and never repeats the text it found.
 */

/** GitLab's documented token prefixes (personal, OAuth app secret, deploy, runner, trigger, feed ...). */
export const GITLAB_TOKEN_PREFIXES: readonly string[] = [
  'glpat-',
  'gloas-',
  'gldt-',
  'glrt-',
  'glrtr-',
  'glptt-',
  'glft-',
  'glimt-',
  'glcbt-',
  'glagent-',
  'glffct-',
  'glsoat-',
];

/** Body characters of GitLab tokens (base64url, plus dots in routable tokens). */
const BODY = '[A-Za-z0-9_.-]';
const escaped = GITLAB_TOKEN_PREFIXES.map((p) => p.replace(/[-]/g, '\\-')).join('|');
/** A known prefix followed by 16+ body characters, not glued to a preceding word. */
const KNOWN = new RegExp(`(?<![A-Za-z0-9])(?:${escaped})${BODY}{16,}`, 'g');
/**
 * An instance may set a custom personal-token prefix (e.g. "acme-"): a short word, a dash, then a
 * 20+ character body that mixes upper case, lower case and digits, as random token bodies do.
 * Storage and plan names (lower case by convention) do not match.
 */
const CUSTOM = /(?<![A-Za-z0-9_-])[A-Za-z][A-Za-z0-9]{1,15}-[A-Za-z0-9_-]{20,}/g;

function looksRandom(body: string): boolean {
  return /[A-Z]/.test(body) && /[a-z]/.test(body) && /[0-9]/.test(body);
}

/** A token-looking span in some text: [start, end) offsets. */
export interface TokenSpan {
  start: number;
  end: number;
}

/** Finds every span of `text` that looks like an access token. Pure. */
export function findTokenLike(text: string): TokenSpan[] {
  const known: TokenSpan[] = [];
  for (const m of text.matchAll(KNOWN)) known.push({ start: m.index, end: m.index + m[0].length });
  const spans = [...known];
  // Both lists come in file order, so one cursor over the known spans finds any overlap.
  let k = 0;
  for (const m of text.matchAll(CUSTOM)) {
    const body = m[0].slice(m[0].indexOf('-') + 1);
    if (!looksRandom(body)) continue;
    const start = m.index;
    const end = start + m[0].length;
    while (k < known.length && known[k]!.end <= start) k += 1;
    if (k < known.length && known[k]!.start < end) continue;
    spans.push({ start, end });
  }
  return spans.sort((a, b) => a.start - b.start);
}

/** True when `text` contains anything that looks like an access token. */
export function hasTokenLike(text: string): boolean {
  return findTokenLike(text).length > 0;
}

/**
 * Replaces token-looking spans and the given known secret values with "***". The last line of
 * defence for messages built from plan text.
 */
export function redact(text: string, secrets: readonly string[] = []): string {
  let out = text;
  for (const s of secrets) if (s.length >= 4) out = out.split(s).join('***');
  const spans = findTokenLike(out);
  for (let i = spans.length - 1; i >= 0; i--) {
    const s = spans[i]!;
    out = out.slice(0, s.start) + '***' + out.slice(s.end);
  }
  return out;
}

/** Shows a plan value in a message: short and token-free, or a placeholder. */
export function showValue(value: unknown): string {
  const s = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  if (hasTokenLike(s)) return '(a token-looking value)';
  return JSON.stringify(s.length > 40 ? `${s.slice(0, 37)}...` : s);
}
