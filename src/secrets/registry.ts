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
 * A run of this many characters from a secret's start is a leak too: a server, a proxy or a length
 * limit may cut the echo short (`Bearer glpat-Sx7QmPatRo...`), and the rest of a token is easier to
 * guess from its head.
 */
const PREFIX_LENGTH = 12;

/** Secret values, and the forms a careless writer would put them in. */
export class SecretRegistry {
  readonly #forms = new Set<string>();
  /** The forms longest first (a value that contains another is replaced whole); null when stale. */
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
   * Replaces every known secret in `text`, in each of its forms, whole or cut short: any run of at
   * least PREFIX_LENGTH characters from a secret's start (the whole value when it is shorter).
   */
  scrub(text: string): string {
    this.#sorted ??= [...this.#forms].sort((a, b) => b.length - a.length);
    let out = text;
    for (const form of this.#sorted) {
      const head = form.slice(0, PREFIX_LENGTH);
      if (!out.includes(head)) continue;
      let kept = '';
      let from = 0;
      for (let at = out.indexOf(head); at !== -1; at = out.indexOf(head, from)) {
        let n = head.length;
        while (n < form.length && out[at + n] === form[n]) n += 1;
        kept += out.slice(from, at) + REDACTED;
        from = at + n;
      }
      out = kept + out.slice(from);
    }
    return out;
  }

  get size(): number {
    return this.#forms.size;
  }
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
export function scrubServerText(text: string, extra: readonly (string | null | undefined)[] = []): string {
  const out = resolvedSecrets.scrub(text);
  if (extra.length === 0) return out;
  const more = new SecretRegistry();
  more.add(...extra);
  return more.scrub(out);
}
