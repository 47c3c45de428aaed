import type { AccessLevel } from './broker-routes.js';

/** The role names that grant each level, remappable per deployment (`JWT_ROLE_*`). */
export interface BrokerRoleNames {
  readonly admin: string;
  readonly readWrite: string;
  readonly readOnly: string;
  readonly writeOnly: string;
}

export const DEFAULT_ROLE_NAMES: BrokerRoleNames = {
  admin: 'admin',
  readWrite: 'read-write',
  readOnly: 'read-only',
  writeOnly: 'write-only',
};

export interface RoleClaimNames {
  /** Claim holding one role (`JWT_ROLES_CLAIM`, default `role`). */
  readonly rolesClaim: string;
  /** Claim holding an array of roles (`JWT_ROLES_ARRAY_CLAIM`, default `roles`). */
  readonly rolesArrayClaim: string;
}

/**
 * The roles a token holds: the single-value claim plus every string of the array claim. Both are
 * literal top-level keys, not JSON paths (seed: `realm_access.roles` is invisible), and only the
 * token's own properties count (`constructor` is not a role claim).
 */
export function rolesFromClaims(
  payload: Readonly<Record<string, unknown>>,
  names: RoleClaimNames,
): ReadonlySet<string> {
  const roles = new Set<string>();
  const single = Object.hasOwn(payload, names.rolesClaim) ? payload[names.rolesClaim] : undefined;
  if (typeof single === 'string' && single !== '') roles.add(single);
  const array = Object.hasOwn(payload, names.rolesArrayClaim) ? payload[names.rolesArrayClaim] : undefined;
  if (Array.isArray(array)) {
    for (const role of array) if (typeof role === 'string' && role !== '') roles.add(role);
  }
  return roles;
}

/**
 * Role-set membership, not a ladder (seed): admin passes everything; read-write passes
 * read-write, read-only and write-only routes; read-only passes only read routes; write-only
 * passes only write-only routes (`POST /api/v1/push`) and is refused on every read and consume
 * route.
 */
export function hasAccess(
  roles: ReadonlySet<string>,
  level: AccessLevel,
  names: BrokerRoleNames = DEFAULT_ROLE_NAMES,
): boolean {
  const isAdmin = roles.has(names.admin);
  const isReadWrite = isAdmin || roles.has(names.readWrite);
  switch (level) {
    case 'public':
      return true;
    case 'admin':
      return isAdmin;
    case 'read-write':
      return isReadWrite;
    case 'read-only':
      return isReadWrite || roles.has(names.readOnly);
    case 'write-only':
      return isReadWrite || roles.has(names.writeOnly);
  }
}
