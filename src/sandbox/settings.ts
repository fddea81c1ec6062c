/**
 * GET and PUT /application/settings.
 * TODO(#2): implementation.
 */
import type { Router } from './router.js';

export function register(router: Router): void {
  void router;
}
