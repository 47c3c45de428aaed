/*
 * The hub's admin routes (issue #24 item 3; docs/security.md, "Revocation"): the token deny
 * list, read and written by a caller whose token the hub's PUBLISHER key verifies and whose
 * payload carries `"herald": {"admin": true}`. Refusals are the hub's usual plain-text 401/403
 * with the Bearer challenge (challenge.ts).
 */
import {
  InvalidRevocationError,
  MAX_REVOCATION_ID_LENGTH,
  type RevocationEntry,
  RevocationsFullError,
  revocationFromRequest,
  revocationId,
} from '@herald/auth';
import { type Clock, RevocationLimitError, type RevocationStore } from '@herald/redis';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { HubAuthorization } from './authorization.js';
import { forbidden, invalidField, unauthorized } from './errors.js';
import type { Principal } from './principal.js';

export const ADMIN_REVOCATIONS_PATH = '/herald/admin/revocations';

/** A revocation body is a few ids and times, or one token (at most 64 KiB, verify.ts). */
const ADMIN_BODY_LIMIT = 128 * 1024;

/** Whether a verified payload carries `"herald": {"admin": true}`. */
export function carriesAdminClaim(payload: Readonly<Record<string, unknown>> | undefined): boolean {
  const herald = payload?.herald;
  return typeof herald === 'object' && herald !== null && (herald as Record<string, unknown>).admin === true;
}

/**
 * The admin caller, or a refusal: 401 without a token or with one the publisher key does not
 * verify (or a revoked one), 403 for a valid token without the admin claim. For any admin route.
 */
export async function authorizeHubAdmin(
  auth: Pick<HubAuthorization, 'authenticate'>,
  request: FastifyRequest,
): Promise<Principal> {
  const principal = await auth.authenticate(request, 'publisher');
  if (!principal) throw unauthorized('Authentication required');
  if (!principal.admin) throw forbidden('The token does not carry "herald": {"admin": true}');
  return principal;
}

export interface HubAdminDependencies {
  readonly auth: Pick<HubAuthorization, 'authenticate'>;
  readonly revocations: RevocationStore<RevocationEntry>;
  /** Applies a write on this node before the answer (the others follow within a poll). */
  readonly applyRevocations: () => Promise<void>;
  readonly clock: Clock;
}

/** An entry as the routes show it: its id (the DELETE path's) and its fields. */
function wireEntry(entry: RevocationEntry): Record<string, unknown> {
  return { id: revocationId(entry), ...entry };
}

export function registerHubAdminRoutes(app: FastifyInstance, dependencies: HubAdminDependencies): void {
  const { revocations, applyRevocations, clock } = dependencies;
  const onRequest = async (request: FastifyRequest) => {
    await authorizeHubAdmin(dependencies.auth, request);
  };

  app.get(ADMIN_REVOCATIONS_PATH, { onRequest }, async () => ({
    revocations: (await revocations.list()).map(wireEntry),
  }));

  app.post(ADMIN_REVOCATIONS_PATH, { onRequest, bodyLimit: ADMIN_BODY_LIMIT }, async (request, reply) => {
    let entry: RevocationEntry;
    try {
      entry = revocationFromRequest(request.body, clock.now());
    } catch (error) {
      if (error instanceof InvalidRevocationError) throw invalidField(error.message);
      throw error;
    }
    try {
      await revocations.add(entry);
    } catch (error) {
      if (error instanceof RevocationLimitError) throw new RevocationsFullError(error.limit);
      throw error;
    }
    await applyRevocations();
    return reply.code(201).send(wireEntry(entry));
  });

  // 204 whether or not the entry existed: a retried or resent delete answers as the first did.
  app.delete<{ Params: { id: string } }>(
    `${ADMIN_REVOCATIONS_PATH}/:id`,
    { onRequest },
    async (request, reply) => {
      const { id } = request.params;
      if (id.length > MAX_REVOCATION_ID_LENGTH + 4) {
        throw invalidField(`id exceeds ${MAX_REVOCATION_ID_LENGTH + 4} characters (jti:<jti> or sub:<sub>)`);
      }
      await revocations.remove(id);
      await applyRevocations();
      return reply.code(204).send();
    },
  );
}
