/*
 * Route options declaring each broker route's access level (issue #8): the level belongs to the
 * route the router matched, declared where the route is registered, so no spelling of a URL can
 * reach a handler under another route's rules. The auth plugin refuses a registration without
 * one. Which level a route gets follows the documented route table (docs/broker-configuration.md, "Authentication");
 * test/broker/route-access.test.ts checks every registered route against it.
 */
import type { AccessLevel } from '@herald/auth';

function declare<const Level extends AccessLevel>(access: Level) {
  return { config: { access } } as const;
}

export const PUBLIC = declare('public');
export const ADMIN = declare('admin');
export const READ_ONLY = declare('read-only');
export const WRITE_ONLY = declare('write-only');
export const READ_WRITE = declare('read-write');
