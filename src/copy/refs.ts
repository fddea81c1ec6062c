/**
 * Refs of a repository, read with `git for-each-ref` (refname -> object id), locally or on the
 * target over ssh. `--git-dir` keeps git from searching parent directories: a missing repository
 * reads as null instead of some enclosing repository's refs.
 */
import { runCommand, scriptArgv, shq } from './exec.js';

export type RefMap = Record<string, string>;

const FORMAT = '%(objectname) %(refname)';

/** Parses `<oid> <refname>` lines. */
export function parseRefs(text: string): RefMap {
  const out: RefMap = {};
  for (const line of text.split('\n')) {
    const m = /^([0-9a-f]{40,64}) (.+)$/.exec(line.trim());
    if (m) out[m[2]!] = m[1]!;
  }
  return out;
}

/** Refs of the repository at `gitDir` on `host` (null: here); null when there is no repository there. */
export async function readRefs(host: string | null, gitDir: string, signal?: AbortSignal): Promise<RefMap | null> {
  const argv =
    host === null
      ? ['git', `--git-dir=${gitDir}`, 'for-each-ref', `--format=${FORMAT}`]
      : scriptArgv(host, `git --git-dir=${shq(gitDir)} for-each-ref ${shq(`--format=${FORMAT}`)}`);
  const r = await runCommand(argv, signal ? { signal } : {});
  return r.code === 0 ? parseRefs(r.stdout) : null;
}
