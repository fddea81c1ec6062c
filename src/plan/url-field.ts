/**
 * An http(s) URL written in a plan (`prometheus.url`, a notify webhook's `url`): read, parsed, its
 * scheme checked and credentials refused, each problem at the field's file:line:col. What else a
 * field refuses (a query, a key in the path) is its own.
 */
import type { Node } from 'yaml';
import type { Reader } from './reader.js';

export function readHttpUrl(
  r: Reader,
  node: Node,
  path: string,
  words: { example: string; credentials: string },
): { url: URL; fromVars: boolean } | undefined {
  const at = r.posOf(node);
  r.mark(path, at);
  const s = r.string(node, path);
  if (!s) return undefined;
  let url: URL;
  try {
    url = new URL(s.value.trim());
  } catch {
    return void r.error(path, at, `not a valid URL; expected e.g. ${words.example}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    return void r.error(path, at, 'must be an http:// or https:// URL');
  if (url.username || url.password) return void r.error(path, at, `must not contain credentials${words.credentials}`);
  return { url, fromVars: s.fromVars };
}
