/**
 * GET /user, /users, /version, /job and the Features API.
 * TODO(#2): implementation.
 */
import type { Router } from './router.js';

export function register(router: Router): void {
  void router;
}
