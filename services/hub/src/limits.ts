/*
 * The hub's limits per tenant (issue #24 item 2; docs/hub.md, "Limits per tenant"): concurrent
 * streams per subscriber subject and publishes per second per publisher, counted cluster-wide by
 * @herald/limits (Lua on the hub's Redis; on the in-process backend, on an in-process Redis
 * engine running the same scripts). A node's streams hold their slots under the node's lease: a
 * node killed with streams open frees them when its lease expires. Nothing here runs on the
 * fan-out path: a publish costs one Redis call when a publish limit applies, a stream one at
 * open and one at close when a subscription limit applies.
 */
import { isLimitKind, MAX_LIMIT, MAX_OVERRIDES, type Refusal, TenantLimits } from '@herald/limits';
import type { Counter } from '@herald/metrics';
import { type Clock, closeRedis, loggableError, type Redis, type RedisClient } from '@herald/redis';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { authorizeHubAdmin } from './admin.js';
import type { HubAuthorization } from './authorization.js';
import { type HubError, invalidField, limitExceeded, tooManyOverrides } from './errors.js';
import type { Principal } from './principal.js';

export const ADMIN_LIMITS_PATH = '/herald/admin/limits';

/** The kinds of limit the hub enforces. */
const HUB_KINDS = ['subscriptions', 'publish'] as const;
type HubKind = (typeof HUB_KINDS)[number];

/** Longest tenant name an override may name. */
const MAX_TENANT_NAME = 1024;

const UNITS: Record<HubKind, string> = {
  subscriptions: 'streams open at once',
  publish: 'updates per second',
};

/**
 * Whose budget a request spends: the token's `sub`, else the client's address as seen through
 * TRUSTED_PROXIES (`ip:<address>`: anonymous subscribers, tokens without `sub`).
 */
export function tenantOf(principal: Principal | undefined, request: Pick<FastifyRequest, 'ip'>): string {
  return principal?.subject || `ip:${request.ip}`;
}

export function limitError(refusal: Refusal): HubError {
  const kind = refusal.kind as HubKind;
  const limit = `${kind} limit of ${refusal.limit} ${UNITS[kind] ?? ''}`.trimEnd();
  return limitExceeded(
    `Tenant '${refusal.tenant}' is over its ${limit}; retry later`,
    refusal.retryAfterMs ?? 1000,
  );
}

export interface HubLimitsOptions {
  /**
   * The connection to the hub's Redis (the node's fail-fast connection of the deny list, shared:
   * both are a few small calls, owned and closed by the hub); undefined: the in-process backend,
   * an in-process engine started on need.
   */
  readonly redis: RedisClient | undefined;
  readonly prefix: string;
  readonly defaults: { readonly subscriptions?: number; readonly publish?: number };
  /** MERCURE_LIMIT_LEASE: how long a node's stream slots count without a renewal. */
  readonly slotLeaseMs: number;
  readonly nodeId: string;
  readonly clock: Clock;
  /** The scripts' clock: Redis TIME, or with a test clock on Redis its `~test-clock` key (KeyClock). */
  readonly scriptClock: 'redis' | 'key';
  /** `herald_limit_refusals_total{kind}`. */
  readonly refusals: Counter<'kind'>;
  readonly log: (message: string, details: object) => void;
}

export class HubLimits {
  private limits: TenantLimits | undefined;
  private starting: Promise<TenantLimits> | undefined;
  /** The in-process engine and its client, when this node has no Redis (closed at stop). */
  private engine: { close(): Promise<void>; client: Redis } | undefined;

  constructor(private readonly options: HubLimitsOptions) {}

  private get anyDefault(): boolean {
    const { subscriptions, publish } = this.options.defaults;
    return subscriptions !== undefined || publish !== undefined;
  }

  /** On Redis, or with a default set: counting starts with the node (overrides are read). */
  async start(): Promise<void> {
    if (this.options.redis || this.anyDefault) await this.ensure().catch(() => undefined);
  }

  /** The limits, their connection (or engine) made on first need. */
  private ensure(): Promise<TenantLimits> {
    this.starting ??= this.open();
    return this.starting;
  }

  private async open(): Promise<TenantLimits> {
    const { options } = this;
    let redis = options.redis;
    if (!redis) {
      // Loaded here: a hub on Redis, or without limits, never loads the engine and its Lua VM.
      const { EmbeddedRedis } = await import('@herald/embedded-redis');
      const engine = await EmbeddedRedis.start({ clock: options.clock });
      const { Redis: Client } = await import('ioredis');
      const client = new Client(engine.path) as Redis;
      client.on('error', () => undefined);
      this.engine = { client, close: () => engine.close() };
      redis = client;
    }
    const limits = new TenantLimits({
      redis,
      prefix: options.prefix,
      defaults: options.defaults,
      nodeId: options.nodeId,
      clock: options.clock,
      slotLeaseMs: options.slotLeaseMs,
      // The in-process engine's TIME is the node's clock already.
      scriptClock: options.redis ? options.scriptClock : 'redis',
      // Once per kind of round until it succeeds again, without a stack (the transport's outage
      // lines say what happened to Redis).
      onError: (error, what) => options.log(`tenant limits: ${what} failed`, { error: loggableError(error) }),
    });
    this.limits = limits;
    // Not awaited: a node on a Redis that is away at boot starts at once (issue #9, defect 7);
    // the defaults apply meanwhile, and the overrides from the first read that succeeds.
    limits
      .start()
      .catch((error: unknown) =>
        options.log('tenant limits: overrides not read yet', { error: loggableError(error) }),
      );
    return limits;
  }

  /** The base of the limits' keys (tests move their clock there). */
  get base(): string {
    return `${this.options.prefix}{limits}:`;
  }

  /**
   * A stream's slot: what gives it back when the stream closes (undefined when no limit applies:
   * nothing to give back, and no closure kept per idle subscriber), or the 429 when the tenant
   * has none left.
   */
  async acquireStream(tenant: string): Promise<(() => void) | undefined> {
    const limits = this.limits;
    if (!limits) return undefined;
    const slot = await limits.acquireSlot('subscriptions', tenant);
    if (slot === undefined) return undefined;
    if ('release' in slot) return () => slot.release();
    throw this.refuse(slot);
  }

  /** Takes one update from the publisher's rate; the 429 when it has none left this second. */
  async takePublish(tenant: string): Promise<void> {
    const limits = this.limits;
    if (!limits) return;
    const refusal = await limits.takeRate('publish', new Map([[tenant, 1]]));
    if (refusal) throw this.refuse(refusal);
  }

  private refuse(refusal: Refusal): HubError {
    this.options.refusals.inc({ kind: refusal.kind });
    return limitError(refusal);
  }

  async stop(): Promise<void> {
    await this.starting?.catch(() => undefined);
    await this.limits?.stop();
    if (this.engine) {
      await closeRedis(this.engine.client);
      await this.engine.close();
    }
  }

  /** The admin routes (docs/hub.md, "Limits per tenant"): admin token as for revocations. */
  registerRoutes(app: FastifyInstance, auth: Pick<HubAuthorization, 'authenticate'>): void {
    const onRequest = async (request: FastifyRequest) => {
      await authorizeHubAdmin(auth, request);
    };
    const kindOf = (raw: string): HubKind => {
      if (!isLimitKind(raw) || !(HUB_KINDS as readonly string[]).includes(raw)) {
        throw invalidField(`kind must be one of ${HUB_KINDS.join(', ')}`);
      }
      return raw as HubKind;
    };
    const tenantOfParam = (raw: string): string => {
      if (raw === '' || raw.length > MAX_TENANT_NAME) {
        throw invalidField(`tenant must be a non-empty string of at most ${MAX_TENANT_NAME} characters`);
      }
      return raw;
    };
    const defaults = {
      subscriptions: this.options.defaults.subscriptions ?? null,
      publish: this.options.defaults.publish ?? null,
    };

    app.get(ADMIN_LIMITS_PATH, { onRequest }, async () => {
      const limits = this.limits;
      if (!limits) return { defaults, overrides: [], usage: { subscriptions: [], publish: [] } };
      const [overrides, subscriptions, publish] = await Promise.all([
        limits.overrides(),
        limits.usage('subscriptions'),
        limits.usage('publish'),
      ]);
      return {
        defaults,
        overrides: overrides.filter((entry) => (HUB_KINDS as readonly string[]).includes(entry.kind)),
        usage: { subscriptions, publish },
      };
    });

    app.put<{ Params: { kind: string; tenant: string } }>(
      `${ADMIN_LIMITS_PATH}/:kind/:tenant`,
      { onRequest },
      async (request) => {
        const kind = kindOf(request.params.kind);
        const tenant = tenantOfParam(request.params.tenant);
        const body = request.body as { limit?: unknown } | undefined;
        const limit = body?.limit;
        if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 0 || limit > MAX_LIMIT) {
          throw invalidField(
            `limit must be an integer between 0 and ${MAX_LIMIT} (body {"limit": <integer>})`,
          );
        }
        const limits = await this.ensure();
        if (!(await limits.hasOverride(kind, tenant)) && (await limits.overrideCount()) >= MAX_OVERRIDES) {
          throw tooManyOverrides(MAX_OVERRIDES);
        }
        await limits.setOverride(kind, tenant, limit);
        return { kind, tenant, limit };
      },
    );

    app.delete<{ Params: { kind: string; tenant: string } }>(
      `${ADMIN_LIMITS_PATH}/:kind/:tenant`,
      { onRequest },
      async (request) => {
        const kind = kindOf(request.params.kind);
        const tenant = tenantOfParam(request.params.tenant);
        const limits = await this.ensure();
        await limits.setOverride(kind, tenant, null);
        return { kind, tenant, limit: defaults[kind] };
      },
    );
  }
}
