/**
 * What the sandbox shows as a repository's checksum: the seed gives every item one, and a write
 * that adds a commit (inventory/writes.ts) changes it. Its own module, below both.
 */

const HEX_BYTE = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));
const hex32 = (n: number): string => {
  const u = n >>> 0;
  return (
    (HEX_BYTE[u >>> 24] as string) +
    (HEX_BYTE[(u >>> 16) & 255] as string) +
    (HEX_BYTE[(u >>> 8) & 255] as string) +
    (HEX_BYTE[u & 255] as string)
  );
};

/**
 * A repository checksum stand-in: 40 hex characters derived from the item and its commit count.
 * Hot when seeding a million items, hence the byte table instead of toString(16).
 */
export function fakeChecksum(kind: string, id: number, commits: number): string {
  let h1 = 0x811c9dc5 ^ id;
  let h2 = 0x01000193 ^ commits;
  const s = `${kind}:${id}:${commits}`;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 16777619);
    h2 = Math.imul(h2 ^ c, 2246822519);
  }
  return hex32(h1) + hex32(h2) + hex32(h1 ^ h2) + hex32(Math.imul(h1, 31) ^ h2) + hex32(h2 * 7 + h1);
}
