/**
 * Writes that create commits, refused while a repository is read-only.
 * TODO(#2): implementation.
 */
import type { Router } from './router.js';

export function register(router: Router): void {
  void router;
}
