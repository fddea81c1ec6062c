/**
 * POST /oauth/token (refresh grant).
 * TODO(#2): implementation.
 */
import type { Router } from './router.js';

export function register(router: Router): void {
  void router;
}
