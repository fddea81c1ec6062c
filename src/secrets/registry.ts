/**
 * The secret values this process knows, and the one scrub every text from a server goes through.
 *
 * A server, or a proxy in front of it, may echo what it was sent: a 401 page quoting the
 * `Authorization` header, a Prometheus error repeating the request. Whatever it answers may end
 * in a checkpoint, an events file, a report or a terminal, so each client scrubs the text it reads
 * (the GitLab client, the OAuth refresh, the Prometheus client) before anything parses or quotes
 * it. The plan loader feeds the registry once, with every secret it resolves (`${VAR}` or
 * `*_file`: the instance token, the OAuth pair and client secret, the Prometheus token); an OAuth
 * refresh adds the pair it receives. Imports nothing, so every layer may use it.
 */

/** What a secret is replaced with. */
export const REDACTED = '[REDACTED]';

/** Very short values would redact ordinary words; real tokens are long. */
const MIN_SECRET_LENGTH = 6;

/**
 * A run of this many characters of a secret, anywhere in it, is a leak too: a server, a proxy or
 * a length limit may cut the echo short at either end (`Bearer glpat-Sx7QmPatRo...`,
 * `...mPatRoXy12`), and the rest of a token is easier to guess from any long piece of it.
 */
const RUN_LENGTH = 12;
/**
 * The pieces of each form looked for with `indexOf`: any run of RUN_LENGTH characters of a form
 * holds one of its pieces that start at a multiple of PIECE (PIECE * 2 - 1 <= RUN_LENGTH), so a
 * text is searched a few times per form by native code, and only the hits are looked at closely.
 */
const PIECE = 6;

/** Where a text was cut: the secret that straddled a cut is only partly in it. */
export interface CutEdges {
  /** The text starts where something longer was cut (its first characters may end a secret). */
  start?: boolean;
  /** The text ends where something longer was cut (its last characters may start a secret). */
  end?: boolean;
}

/** Secret values, and the forms a careless writer would put them in. */
export class SecretRegistry {
  readonly #forms = new Set<string>();
  /** The forms longest first; null when stale. */
  #sorted: string[] | null = null;

  add(...values: (string | null | undefined)[]): void {
    for (const v of values) {
      if (!v || v.length < MIN_SECRET_LENGTH) continue;
      // Raw, JSON-escaped, URL-encoded (a query string) and form-encoded (a request body).
      for (const form of [
        v,
        JSON.stringify(v).slice(1, -1),
        encodeURIComponent(v),
        new URLSearchParams({ x: v }).toString().slice(2),
      ])
        this.#forms.add(form);
      this.#sorted = null;
    }
  }

  /**
   * Replaces every known secret in `text`, in each of its forms, whole or in part: any run of at
   * least RUN_LENGTH characters of a secret, wherever in the secret it starts (the whole value
   * when it is shorter). A text that was cut (`edges`) loses, besides, any piece of a secret at a
   * cut edge however short: its first characters when they end a secret, its last ones when they
   * start one (the whole text when it is cut at both ends and lies inside one). Scrub a text before cutting it; a text already cut (a stream read only so far) says
   * where.
   */
  scrub(text: string, edges: CutEdges = {}): string {
    this.#sorted ??= [...this.#forms].sort((a, b) => b.length - a.length);
    const spans: [number, number][] = [];
    for (const form of this.#sorted) {
      const least = Math.min(RUN_LENGTH, form.length);
      for (let q = 0; q + PIECE <= form.length; q += PIECE) {
        const piece = form.slice(q, q + PIECE);
        for (let at = text.indexOf(piece); at !== -1; at = text.indexOf(piece, at + 1)) {
          let left = 0;
          while (left < q && at - left > 0 && text[at - left - 1] === form[q - left - 1]) left += 1;
          let right = PIECE;
          while (q + right < form.length && text[at + right] === form[q + right]) right += 1;
          if (left + right >= least) spans.push([at - left, at + right]);
        }
      }
      // Cut at both ends, a text may be a piece from inside a secret, however short.
      if (edges.start && edges.end && text !== '' && form.includes(text)) spans.push([0, text.length]);
      if (edges.start) {
        const n = edgeOverlap(form, text);
        if (n > 0) spans.push([0, n]);
      }
      if (edges.end) {
        const n = edgeOverlap(text, form);
        if (n > 0) spans.push([text.length - n, text.length]);
      }
    }
    if (spans.length === 0) return text;
    spans.sort((a, b) => a[0] - b[0]);
    let out = '';
    let from = 0;
    let i = 0;
    while (i < spans.length) {
      const start = spans[i]![0];
      let end = spans[i]![1];
      for (i += 1; i < spans.length && spans[i]![0] <= end; i += 1) end = Math.max(end, spans[i]![1]);
      out += text.slice(from, start) + REDACTED;
      from = end;
    }
    return out + text.slice(from);
  }

  get size(): number {
    return this.#forms.size;
  }
}

/** The length of the longest end of `a` that is a start of `b` (shorter than both). */
function edgeOverlap(a: string, b: string): number {
  for (let n = Math.min(a.length, b.length); n > 0; n -= 1) if (a.endsWith(b.slice(0, n))) return n;
  return 0;
}

/**
 * The process's registry of the secrets the plan resolved (and of OAuth pairs issued since). Fed by
 * the plan loader and the OAuth refresh; read by every client through `scrubServerText`.
 */
export const resolvedSecrets = new SecretRegistry();

/**
 * Text that came back from a server, with every secret the process knows (and `extra`, values a
 * client holds on its own, such as a token typed to `shardmove token`) replaced. Every client's
 * body and error path goes through here.
 */
export function scrubServerText(
  text: string,
  extra: readonly (string | null | undefined)[] = [],
  edges: CutEdges = {},
): string {
  const out = resolvedSecrets.scrub(text, edges);
  if (extra.length === 0) return out;
  const more = new SecretRegistry();
  more.add(...extra);
  return more.scrub(out, edges);
}
