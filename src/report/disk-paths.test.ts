import { describe, expect, it } from 'vitest';
import { diskPaths } from './disk-paths.js';

// GitLab's documented example (administration/repository_storage_paths): project 1 lives at
// @hashed/6b/86/6b86b273ff34fce19d6b804eff5a3f5747ada4eaa22f1d49c01e52ddb7875b4b.git, the SHA-256
// of "1". The other containers use the same hash of their own id under their own prefix (the
// hash of "42" below is coreutils' sha256sum of the two characters).
const HASH_OF_1 = '6b86b273ff34fce19d6b804eff5a3f5747ada4eaa22f1d49c01e52ddb7875b4b';
const HASH_OF_42 = '73475cb40a568e8da8a045ced110137e159f890ac4da883b6b17dc651b3a8049';

describe('hashed storage paths of a copy left behind', () => {
  it('a project: its repository, wiki and design repository under @hashed', () => {
    expect(diskPaths('projects', 1)).toEqual([
      `@hashed/6b/86/${HASH_OF_1}.git`,
      `@hashed/6b/86/${HASH_OF_1}.wiki.git`,
      `@hashed/6b/86/${HASH_OF_1}.design.git`,
    ]);
  });

  it('a snippet under @snippets, a group wiki under @groups, hashed by their own ids', () => {
    expect(diskPaths('snippets', 42)).toEqual([`@snippets/73/47/${HASH_OF_42}.git`]);
    expect(diskPaths('groups', 42)).toEqual([`@groups/73/47/${HASH_OF_42}.wiki.git`]);
  });
});
