/**
 * Copy plan version 1 (`shardmove copy`): the fields, their types and the named rules that can be decided
 * from the plan alone. The move plan's schema (schema.ts) is untouched; both share the Reader, so a
 * copy plan's problems come out as file:line:col like a move plan's.
 */
import { posix } from 'node:path';
import type { Node } from 'yaml';
import { isScalar } from 'yaml';
import { boolean, readEnum } from './fields.js';
import type { Entry, Reader } from './reader.js';
import type { CopyMethod, CopyPlan } from './copy-types.js';
import { COPY_METHODS } from './copy-types.js';

const TOP = ['version', 'name', 'copy'];
const COPY = ['method', 'source', 'target', 'backup'];
const SOURCE = ['path'];
const TARGET = ['path', 'host', 'clustered'];
const BACKUP = ['path'];
const NAME_RE = /^[a-z0-9][a-z0-9_-]*$/;
/**
 * `[user@]host`, as ssh takes it: no option-looking or shell-special text. Neither part may begin
 * with "-": `-Fevil@x` would reach ssh (and rsync's own ssh command line) as an option.
 */
const HOST_RE = /^(?:[A-Za-z0-9_][A-Za-z0-9._-]*@)?[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** The schema's output, or undefined when some field could not be read (the reader holds the errors). */
export function readCopyPlanTree(r: Reader, root: Node | null): CopyPlan | undefined {
  r.mark('', r.posOf(root));
  const top = root === null || r.isNull(root) ? undefined : r.map(root, '', TOP);
  if (!top) {
    if (root === null || r.isNull(root)) r.error('', { line: 1, col: 1 }, 'the plan is empty; start with "version: 1"');
    return undefined;
  }
  let ok = true;
  const get = (m: Map<string, Entry> | undefined, k: string): Node | null => m?.get(k)?.value ?? null;
  const required = (m: Map<string, Entry>, k: string, path: string, parent: string): Node | null => {
    const node = get(m, k);
    if (r.isNull(node)) {
      r.error(path, m.get(k) ? r.posOf(m.get(k)!.key) : r.at(parent), `missing required field ${k}`);
      ok = false;
      return null;
    }
    r.mark(path, r.posOf(node));
    return node;
  };
  const section = (
    m: Map<string, Entry>,
    k: string,
    path: string,
    parent: string,
    known: string[],
    need: boolean,
  ): Map<string, Entry> | undefined => {
    const node = need ? required(m, k, path, parent) : get(m, k);
    if (r.isNull(node)) return need ? undefined : new Map();
    r.mark(path, r.posOf(node));
    const out = r.map(node, path, known);
    if (!out) ok = false;
    return out;
  };
  /** A string that `fits`, or undefined (reported at the node: not a string, or `problem`). */
  const fitting = (
    node: Node | null,
    path: string,
    fits: (s: string) => boolean,
    problem: string,
  ): string | undefined => {
    const s = r.string(node, path);
    if (s && fits(s.value)) return s.value;
    if (s) r.error(path, r.posOf(node), problem);
    ok = false;
    return undefined;
  };

  const versionNode = required(top, 'version', 'version', '');
  if (versionNode && (!isScalar(versionNode) || versionNode.value !== 1)) {
    r.error('version', r.posOf(versionNode), 'unsupported plan version; this shardmove reads version: 1');
    ok = false;
  }

  let name = '';
  const nameNode = required(top, 'name', 'name', '');
  if (nameNode) {
    name =
      fitting(
        nameNode,
        'name',
        (s) => NAME_RE.test(s) && s.length <= 100,
        'must match [a-z0-9][a-z0-9_-]* (at most 100 characters): it names the checkpoint file',
      ) ?? '';
  }

  const copy = section(top, 'copy', 'copy', '', COPY, true);
  if (!copy) return undefined;
  const methodNode = required(copy, 'method', 'copy.method', 'copy');
  const method: CopyMethod | undefined = methodNode ? readEnum(r, methodNode, 'copy.method', COPY_METHODS) : undefined;
  if (!method) ok = false;

  const source = section(copy, 'source', 'copy.source', 'copy', SOURCE, true);
  const sourcePath = source
    ? readPath(r, required(source, 'path', 'copy.source.path', 'copy.source'), 'copy.source.path')
    : undefined;
  const target = section(copy, 'target', 'copy.target', 'copy', TARGET, true);
  const targetPath = target
    ? readPath(r, required(target, 'path', 'copy.target.path', 'copy.target'), 'copy.target.path')
    : undefined;
  const invalid = new Set<string>();
  let host: string | null = null;
  const hostNode = get(target, 'host');
  if (!r.isNull(hostNode)) {
    r.mark('copy.target.host', r.posOf(hostNode));
    host =
      fitting(
        hostNode,
        'copy.target.host',
        (s) => HOST_RE.test(s),
        'expected [user@]host for ssh (letters, digits, ".", "_", "-"; neither part begins with "-"); ssh options belong in your ssh configuration',
      ) ?? null;
  }
  const clustered = boolean(r, get(target, 'clustered'), 'copy.target.clustered', false, invalid);
  const backup = section(copy, 'backup', 'copy.backup', 'copy', BACKUP, false);
  const backupNode = get(backup, 'path');
  const backupPath = r.isNull(backupNode) ? null : readPath(r, backupNode, 'copy.backup.path');
  if (!sourcePath || !targetPath || backupPath === undefined || invalid.size > 0) ok = false;
  if (!ok || !method || !sourcePath || !targetPath || backupPath === undefined) return undefined;

  const plan: CopyPlan = {
    version: 1,
    name,
    copy: { method, source: { path: sourcePath }, target: { path: targetPath, host, clustered }, backupPath },
  };
  for (const f of copyPlanRules(plan)) r.error(f.path, r.at(f.path), f.message, f.rule);
  return plan;
}

/**
 * What a plan path may hold: letters and digits of any script, space, and `/ . _ - + , @ % : =`.
 * Everything else is refused, in particular the shell's metacharacters (`` ` $ ; | & < > ( ) { } [ ]
 * * ? ! # ~ ^ ' " \ ``) and control characters: paths reach the target's shell inside scripts and,
 * for rsync, the remote rsync (which expands wildcards), so a character that any of them reads
 * specially has no business in a storage path. Quoting handles the space.
 */
const PATH_CHARS_RE = /^[\p{L}\p{M}\p{N} /._+,@%:=-]*$/u;

/** The first character of `s` outside PATH_CHARS_RE, printable in a message. */
function refusedChar(s: string): string | undefined {
  for (const c of s) {
    if (PATH_CHARS_RE.test(c)) continue;
    const cp = c.codePointAt(0)!;
    return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) ? `U+${cp.toString(16).toUpperCase().padStart(4, '0')}` : `"${c}"`;
  }
  return undefined;
}

/** An absolute path, normalised (no trailing slash; a trailing `/.` is dropped: rsync's form is added when it runs). */
function readPath(r: Reader, node: Node | null, path: string): string | undefined {
  if (node === null) return undefined;
  r.mark(path, r.posOf(node));
  const s = r.string(node, path);
  if (!s) return undefined;
  if (!posix.isAbsolute(s.value)) {
    r.error(path, r.posOf(node), 'expected an absolute path (starting with /)');
    return undefined;
  }
  const bad = refusedChar(s.value);
  if (bad !== undefined) {
    r.error(
      path,
      r.posOf(node),
      `${bad} is refused in a path: use letters, digits, spaces and / . _ - + , @ % : = only (no shell metacharacters or control characters)`,
    );
    return undefined;
  }
  const norm = posix.normalize(s.value).replace(/\/+$/, '');
  return norm === '' ? '/' : norm;
}

/** One broken named rule: the field it is about and why. */
export interface CopyRuleFinding {
  rule: string;
  path: string;
  message: string;
}

/** True when `inner` is `outer` or lies inside it (normalised absolute paths). */
export function isSameOrInside(inner: string, outer: string): boolean {
  return inner === outer || outer === '/' || inner.startsWith(`${outer}/`);
}

/**
 * The copy rules that the plan alone decides (the checkpoint and the file system are checked again
 * when the copy runs, with real paths): docs/copy.md, "Guardrails".
 */
export function copyPlanRules(plan: CopyPlan): CopyRuleFinding[] {
  const out: CopyRuleFinding[] = [];
  const { method, source, target, backupPath } = plan.copy;
  if (target.clustered && method !== 'backup') {
    out.push({
      rule: 'clustered-target-backup-only',
      path: 'copy.method',
      message: `a clustered target accepts only backup and restore; ${method} would write behind the cluster's back`,
    });
  }
  if (target.host === null && (isSameOrInside(target.path, source.path) || isSameOrInside(source.path, target.path))) {
    out.push({
      rule: 'source-target-overlap',
      path: 'copy.target.path',
      message: `source ${source.path} and target ${target.path} overlap; they must be separate directories`,
    });
  }
  if (backupPath !== null) {
    if (method !== 'backup')
      out.push({
        rule: 'backup-path-backup-only',
        path: 'copy.backup.path',
        message: `copy.backup is used by method backup only, not ${method}`,
      });
    const clash = [source.path, ...(target.host === null ? [target.path] : [])].find(
      (p) => isSameOrInside(backupPath, p) || isSameOrInside(p, backupPath),
    );
    if (clash)
      out.push({
        rule: 'backup-path-overlap',
        path: 'copy.backup.path',
        message: `backup directory ${backupPath} overlaps ${clash}`,
      });
  }
  return out;
}
