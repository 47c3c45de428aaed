// The tenant limits' admin routes (docs/broker-api.md, "Limits per tenant"): what applies and who
// is using how much, and the per-tenant overrides. Under /api/v1/system/: admin.
import { isLimitKind, MAX_LIMIT, MAX_OVERRIDES, MAX_USAGE_TENANTS } from '@herald/limits';
import type { FastifyInstance } from 'fastify';
import type { BrokerContext } from '../context.js';
import { invalidRequest, tooManyOverrides } from '../errors.js';
import { integer, isObject } from '../validation.js';
import { ADMIN } from './access.js';

/** The kinds of limit the broker enforces. */
const BROKER_KINDS = ['push', 'inflight'] as const;
type BrokerKind = (typeof BROKER_KINDS)[number];

/** Longest tenant name an override may name (longer `sub`s are counted under a digest). */
const MAX_TENANT_NAME = 1024;

function kindOf(raw: unknown): BrokerKind {
  if (!isLimitKind(raw) || !(BROKER_KINDS as readonly string[]).includes(raw)) {
    throw invalidRequest(`kind must be one of ${BROKER_KINDS.join(', ')}`);
  }
  return raw as BrokerKind;
}

function tenantOf(raw: unknown): string {
  if (typeof raw !== 'string' || raw === '' || raw.length > MAX_TENANT_NAME) {
    throw invalidRequest(`tenant must be a non-empty string of at most ${MAX_TENANT_NAME} characters`);
  }
  return raw;
}

export function registerLimitRoutes(app: FastifyInstance, context: BrokerContext): void {
  const { limits } = context.storage;

  // What applies (defaults and overrides) and what the tenants seen in the last 10 minutes use.
  app.get('/api/v1/system/limits', ADMIN, async (request) => {
    const query = request.query as Record<string, unknown>;
    const max = integer(query.max, 'max', 100, 1, MAX_USAGE_TENANTS);
    const [overrides, push, inflight] = await Promise.all([
      limits.overrides(),
      limits.usage('push', max),
      limits.usage('inflight', max),
    ]);
    return {
      tenant: context.limits.source,
      defaults: { push: limits.defaultOf('push') ?? null, inflight: limits.defaultOf('inflight') ?? null },
      overrides: overrides.filter((entry) => (BROKER_KINDS as readonly string[]).includes(entry.kind)),
      usage: { push, inflight },
    };
  });

  app.put<{ Params: { kind: string; tenant: string } }>(
    '/api/v1/system/limits/:kind/:tenant',
    ADMIN,
    async (request) => {
      const kind = kindOf(request.params.kind);
      const tenant = tenantOf(request.params.tenant);
      const body = request.body;
      if (!isObject(body)) throw invalidRequest('body must be a JSON object: {"limit": <integer>}');
      // A string is not a limit here (query parameters are strings; a body is JSON).
      if (typeof body.limit !== 'number')
        throw invalidRequest(`limit must be an integer between 0 and ${MAX_LIMIT}`);
      const limit = integer(body.limit, 'limit', 0, 0, MAX_LIMIT);
      if (!(await limits.hasOverride(kind, tenant)) && (await limits.overrideCount()) >= MAX_OVERRIDES) {
        throw tooManyOverrides(MAX_OVERRIDES);
      }
      await limits.setOverride(kind, tenant, limit);
      return { kind, tenant, limit };
    },
  );

  app.delete<{ Params: { kind: string; tenant: string } }>(
    '/api/v1/system/limits/:kind/:tenant',
    ADMIN,
    async (request) => {
      const kind = kindOf(request.params.kind);
      const tenant = tenantOf(request.params.tenant);
      await limits.setOverride(kind, tenant, null);
      return { kind, tenant, limit: limits.defaultOf(kind) ?? null };
    },
  );
}
