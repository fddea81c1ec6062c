/**
 * GET /projects, /projects/:id, /snippets/all, /groups: listings with offset and keyset pagination.
 * TODO(#2): implementation.
 */
import type { Router } from './router.js';

export function register(router: Router): void {
  void router;
}
