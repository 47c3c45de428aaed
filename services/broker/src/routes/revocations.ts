import {
  InvalidRevocationError,
  MAX_REVOCATION_ID_LENGTH,
  type RevocationEntry,
  RevocationsFullError,
  revocationFromRequest,
  revocationId,
} from '@herald/auth';
import { type Clock, RevocationLimitError, type RevocationStore } from '@herald/redis';
import type { FastifyInstance } from 'fastify';
import { invalidRequest } from '../errors.js';
import { ADMIN } from './access.js';

export const REVOCATIONS_PATH = '/api/v1/system/revocations';

/** A revocation body is a few ids and times, or one token (at most 64 KiB, `@herald/auth`). */
const BODY_LIMIT = 128 * 1024;

export interface RevocationRouteDependencies {
  readonly store: RevocationStore<RevocationEntry>;
  /** Applies a write on this node before the answer (the others follow within a poll). */
  readonly applyRevocations: () => Promise<void>;
  readonly clock: Clock;
}

/** An entry as the routes show it: its id (the DELETE path's) and its fields. */
function wireEntry(entry: RevocationEntry): Record<string, unknown> {
  return { id: revocationId(entry), ...entry };
}

/**
 * The token deny list (issue #24 item 3; docs/broker-api.md, "Revocations"; docs/security.md,
 * "Revocation"): admin routes, like the rest of `/api/v1/system/`. The POST grammar and the
 * entry rules are `@herald/auth`'s, shared with the hub.
 */
export function registerRevocationRoutes(
  app: FastifyInstance,
  dependencies: RevocationRouteDependencies,
): void {
  const { store, applyRevocations, clock } = dependencies;

  app.get(REVOCATIONS_PATH, ADMIN, async () => ({ revocations: (await store.list()).map(wireEntry) }));

  app.post(REVOCATIONS_PATH, { ...ADMIN, bodyLimit: BODY_LIMIT }, async (request, reply) => {
    let entry: RevocationEntry;
    try {
      entry = revocationFromRequest(request.body, clock.now());
    } catch (error) {
      if (error instanceof InvalidRevocationError) throw invalidRequest(error.message);
      throw error;
    }
    try {
      await store.add(entry);
    } catch (error) {
      if (error instanceof RevocationLimitError) throw new RevocationsFullError(error.limit);
      throw error;
    }
    await applyRevocations();
    return reply.code(201).send(wireEntry(entry));
  });

  // 204 whether or not the entry existed: a retried or resent delete answers as the first did.
  app.delete<{ Params: { id: string } }>(`${REVOCATIONS_PATH}/:id`, ADMIN, async (request, reply) => {
    const { id } = request.params;
    if (id.length > MAX_REVOCATION_ID_LENGTH + 4) {
      throw invalidRequest(`id exceeds ${MAX_REVOCATION_ID_LENGTH + 4} characters (jti:<jti> or sub:<sub>)`);
    }
    await store.remove(id);
    await applyRevocations();
    return reply.code(204).send();
  });
}
