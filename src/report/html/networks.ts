/**
 * The HTML report's section on fork networks (../networks.ts): each network's root, members, pool
 * and where it goes, with its members listed. The page's own helpers are passed in (./copies.ts).
 */
import { networkGoes } from '../networks.js';
import type { NetworksView } from '../networks.js';
import { formatBytes } from '../summary.js';
import type { PageParts } from './copies.js';

/** Members named in a network's row; the JSON report lists every one. */
const MEMBERS_NAMED = 50;

/** The section, or nothing when the checkpoint knows no network. */
export function networksHtml(v: NetworksView | undefined, p: PageParts): string {
  if (!v || v.count === 0) return '';
  const rows = v.networks.map((n) => {
    const list = n.memberList ?? [];
    const named = list
      .slice(0, MEMBERS_NAMED)
      .map((m) => `${m.id} ${m.path}`)
      .join(', ');
    return [
      n.root,
      n.rootPath ?? '(not on the sources)',
      n.rootStorage ?? 'unknown',
      n.members,
      n.poolBytes === null ? 'unknown' : formatBytes(n.poolBytes),
      networkGoes(n),
      list.length > MEMBERS_NAMED ? `${named}, ... (${list.length - MEMBERS_NAMED} more in report --json)` : named,
    ];
  });
  return p.section(
    'networks-section',
    `Fork networks (${v.count})`,
    `<p class="note">${v.members} member(s) on the sources, pools ${p.escapeHtml(formatBytes(v.poolBytes))} in all (estimated as each root's repository). A network's root and its direct forks share the pool: each member lands with the pool's objects, and a destination without the pool gets one copy of it, as the room check counts them.</p>` +
      p.table('networks', ['Root', 'Root path', 'Pool on', 'Members', 'Pool', 'Goes', 'Members (id path)'], rows, [
        true,
        false,
        false,
        true,
        true,
        false,
        false,
      ]),
  );
}
