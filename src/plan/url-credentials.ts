/**
 * Whether a URL carries a credential, and how to show one that may. A URL ends up in proxies' and
 * receivers' logs, and a receiver may quote the request line it got, so a URL that is itself a key
 * (Slack's, Discord's, Teams', a Telegram bot's) or that holds one in its query (`?private_token=`,
 * `?sig=`) is a secret: the plan must take it from the environment, and every text that repeats it
 * is scrubbed. The host is judged as a resolver would: lower case, without the trailing dot, and
 * an international name in its ASCII form (the URL parser does the last two's part).
 */
import { REDACTED } from '../secrets/registry.js';
import { findTokenLike } from './secrets.js';

/** What carries the credential, for the message, and the variable the plan should name instead. */
export interface UrlCredential {
  what: string;
  variable: string;
  /** True when the path is the key (the URL as a whole is the secret), false when a query parameter holds it. */
  inPath: boolean;
  /**
   * The secret parts (a key in the path, a credential parameter's value): registered, so no text
   * repeats them. Only parts that cannot be ordinary words: any 12 characters of a registered
   * value are masked wherever they appear, in the instance's answers too (before they are parsed),
   * so a host, a word of the path or a storage's name must never be one.
   */
  values: string[];
}

interface KeyedHost {
  host: RegExp;
  path: RegExp;
  what: string;
  variable: string;
}

/** Hosts whose webhook URLs are themselves the key (the path is the secret). */
const KEY_IN_PATH: readonly KeyedHost[] = [
  {
    host: /^hooks\.slack\.com$/,
    path: /^\/(services|workflows|triggers)\//,
    what: 'Slack',
    variable: 'SLACK_WEBHOOK_URL',
  },
  {
    host: /^((ptb|canary)\.)?(discord|discordapp)\.com$/,
    path: /^\/api\/(v\d+\/)?webhooks\//,
    what: 'Discord',
    variable: 'DISCORD_WEBHOOK_URL',
  },
  { host: /\.webhook\.office\.com$/, path: /./, what: 'Microsoft Teams', variable: 'TEAMS_WEBHOOK_URL' },
  {
    host: /^outlook\.office(365)?\.com$/,
    path: /^\/webhook(b2)?\//i,
    what: 'Microsoft Teams',
    variable: 'TEAMS_WEBHOOK_URL',
  },
  {
    host: /^api\.telegram\.org$/,
    path: /^\/(file\/)?bot[^/]+/,
    what: 'Telegram bot',
    variable: 'TELEGRAM_WEBHOOK_URL',
  },
  { host: /^hooks\.zapier\.com$/, path: /^\/hooks\//, what: 'Zapier', variable: 'ZAPIER_WEBHOOK_URL' },
  { host: /^maker\.ifttt\.com$/, path: /\/key\//, what: 'IFTTT', variable: 'IFTTT_WEBHOOK_URL' },
  { host: /^hook\.([a-z0-9-]+\.)?(make|integromat)\.com$/, path: /^\/./, what: 'Make', variable: 'MAKE_WEBHOOK_URL' },
];

/** The same services' key-bearing path shapes on any host (a proxy, a self-hosted bot API, a mirror). */
const KEY_PATH_SHAPES: readonly { path: RegExp; what: string; variable: string }[] = [
  { path: /^\/services\/T[A-Z0-9]+\/B[A-Z0-9]+\/[A-Za-z0-9]+/, what: 'Slack', variable: 'SLACK_WEBHOOK_URL' },
  { path: /^\/api\/(v\d+\/)?webhooks\/\d+\/[\w-]+/, what: 'Discord', variable: 'DISCORD_WEBHOOK_URL' },
  { path: /^\/webhookb2\//i, what: 'Microsoft Teams', variable: 'TEAMS_WEBHOOK_URL' },
  { path: /^\/(file\/)?bot\d+:[\w-]+/, what: 'Telegram bot', variable: 'TELEGRAM_WEBHOOK_URL' },
];

/**
 * Query parameter names that carry credentials, compared without case and separators:
 * `private_token`, `access-token`, `api_key`, `X-Amz-Signature`, `sig`, `password`, `auth` ...
 */
const CREDENTIAL_PARAM =
  /token|secret|passw|^pwd$|^pass$|apikey|^key$|key$|^sig$|sig$|signature|^auth|credential|session|^jwt$|hmac|^code$|routingkey/;

/** True when a query parameter of this name carries a credential. */
export function isCredentialParam(name: string): boolean {
  return CREDENTIAL_PARAM.test(name.toLowerCase().replace(/[^a-z0-9]/g, ''));
}

/**
 * A path segment or query value that looks like a key on its own: a GitLab token (any prefix), or
 * a run of 16 and more letters and digits that looks random (digits among letters, or upper and
 * lower case mixed), as GitLab's 20-character tokens from before prefixes and most services'
 * webhook keys do. Words joined by dashes (`shardmove-alerts-2024`) are not one.
 */
export function looksLikeKey(text: string): boolean {
  if (findTokenLike(text).length > 0) return true;
  for (const [run] of text.matchAll(/[A-Za-z0-9]{16,}/g)) {
    const digits = run.replace(/[^0-9]/g, '').length;
    if (!/[A-Za-z]/.test(run)) {
      if (run.length >= 20) return true;
      continue;
    }
    if (digits >= 2 || (/[A-Z]/.test(run.slice(1)) && /[a-z]/.test(run))) return true;
  }
  return false;
}

/**
 * A part worth registering as a secret: 8 characters or more, and not a plain word or number
 * (`services`, `IncomingWebhook` is kept: mixed case; `storage`, `sendMessage`... are not).
 */
function notAWord(text: string): boolean {
  if (text.length < 8) return false;
  if (/^[a-z]+([-_.][a-z]+)*$/i.test(text) && !/[a-z][A-Z]/.test(text.slice(1))) return false;
  return !/^[0-9]{1,11}$/.test(text);
}

/** The host as a resolver sees it: lower case, without trailing dots. */
export function normalHost(u: URL): string {
  return u.hostname.toLowerCase().replace(/\.+$/, '');
}

const decode = (text: string) => {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
};

/** The credential `u` carries in its path or query (user:password@ is the caller's to refuse), or null. */
export function credentialIn(u: URL): UrlCredential | null {
  const host = normalHost(u);
  // Judged as the receiver reads it: `/%73ervices/` is `/services/` to Slack.
  const path = decode(u.pathname);
  const segments = u.pathname.split('/').filter((s) => s !== '');
  const keyed =
    KEY_IN_PATH.find((k) => k.host.test(host) && k.path.test(path)) ?? KEY_PATH_SHAPES.find((k) => k.path.test(path));
  const values: string[] = [];
  let what: string | null = keyed ? `a ${keyed.what} webhook URL is itself a secret (its path is the key)` : null;
  let inPath = keyed !== undefined;
  // A keyed service's path is the key as a whole (Zapier's parts are short): registered whole too.
  if (keyed) values.push(...(u.pathname.length >= 12 ? [u.pathname] : []), ...segments.slice(1).filter(notAWord));
  for (const s of segments) {
    const plain = decode(s);
    // A Telegram bot's path segment is `bot<id>:<key>`: the whole segment is the secret.
    if (looksLikeKey(plain) || looksLikeKey(plain.replace(/^bot/, ''))) {
      values.push(...[s, plain].filter(notAWord));
      what ??= 'its path holds a key (the URL is itself a secret)';
      inPath = true;
    }
  }
  for (const [name, value] of u.searchParams) {
    if (isCredentialParam(name) || looksLikeKey(value)) {
      if (notAWord(value)) values.push(value);
      what ??= `query parameter ${JSON.stringify(name.length > 40 ? `${name.slice(0, 37)}...` : name)} carries a credential`;
    }
  }
  if (!what) return null;
  return { what, variable: keyed?.variable ?? 'WEBHOOK_URL', inPath, values: [...new Set(values)] };
}

/**
 * A URL to show in a message, say a redirect's target: without user:password@, with each value
 * of a credential parameter and each key-looking path segment masked. The caller scrubs the result
 * of the secrets it knows besides.
 */
export function showUrl(u: URL): string {
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    const text = u.href;
    return looksLikeKey(text) || findTokenLike(text).length > 0 ? `${u.protocol}${REDACTED}` : text;
  }
  const path = u.pathname
    .split('/')
    .map((s) => (looksLikeKey(decode(s)) || looksLikeKey(decode(s).replace(/^bot/, '')) ? REDACTED : s))
    .join('/');
  const keyed = KEY_IN_PATH.some((k) => k.host.test(normalHost(u)) && k.path.test(decode(u.pathname)));
  const shownPath = keyed ? `/${u.pathname.split('/')[1] ?? ''}/${REDACTED}` : path;
  const query = [...u.searchParams]
    .map(
      ([k, v]) =>
        `${encodeURIComponent(k)}=${isCredentialParam(k) || looksLikeKey(v) ? REDACTED : encodeURIComponent(v)}`,
    )
    .join('&');
  const userinfo = u.username || u.password ? `${REDACTED}@` : '';
  return `${u.protocol}//${userinfo}${u.host}${shownPath}${query ? `?${query}` : ''}`;
}
