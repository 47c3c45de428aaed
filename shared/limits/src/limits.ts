import { createHash, randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Counter, type Metrics, withZeroSeries } from '@herald/metrics';
import {
  type Clock,
  type LuaScript,
  loadScripts,
  type RedisClient,
  runScript,
  type ScriptClock,
  type ScriptSet,
  scriptNamed,
  systemClock,
} from '@herald/redis';

/**
 * The limits a tenant can be held to (docs/security.md, "Limits per tenant"): `push` (broker
 * messages per second), `inflight` (broker messages leased and not acknowledged), `publish`
 * (hub updates per second), `subscriptions` (hub streams open at once).
 */
export const LIMIT_KINDS = ['push', 'inflight', 'publish', 'subscriptions'] as const;
export type LimitKind = (typeof LIMIT_KINDS)[number];

export function isLimitKind(value: unknown): value is LimitKind {
  return typeof value === 'string' && (LIMIT_KINDS as readonly string[]).includes(value);
}

/** Longest tenant name kept as it is; a longer one is counted under a digest of it. */
export const MAX_TENANT_LENGTH = 200;
/** Per-tenant overrides kept at most (the admin route refuses more). */
export const MAX_OVERRIDES = 10_000;
/** Largest limit a setting or an override may give. */
export const MAX_LIMIT = 1_000_000_000;
/** Tenants a usage report lists at most. */
export const MAX_USAGE_TENANTS = 1000;

/** How long an unsettled in-flight reservation holds its slots (a node killed mid-pop). */
export const RESERVATION_MS = 30_000;
/** Default lease of a node's slots (hub subscriptions): renewed every third of it. */
export const SLOT_LEASE_MS = 30_000;
/** How often a node re-reads the overrides (a new override applies within this). */
export const OVERRIDES_REFRESH_MS = 1000;

const LUA_DIRECTORY = fileURLToPath(new URL('../lua/', import.meta.url));

/** The scripts of lua/ on a clock (`key` in tests that move time). */
export function loadLimitScripts(clock: ScriptClock = 'redis'): ScriptSet {
  return loadScripts(LUA_DIRECTORY, { clock });
}

/** How a tenant name is written into keys: URI-encoded, or a digest when too long. */
export function tenantKey(tenant: string): string {
  if (tenant.length <= MAX_TENANT_LENGTH) return encodeURIComponent(tenant);
  return `~sha256:${createHash('sha256').update(tenant).digest('hex')}`;
}

/** The tenant name a key part stands for (a digest stays a digest). */
export function tenantName(key: string): string {
  return key.startsWith('~sha256:') ? key : decodeURIComponent(key);
}

/** A request over a tenant's limit. */
export interface Refusal {
  readonly kind: LimitKind;
  readonly tenant: string;
  readonly limit: number;
  /** When trying again may succeed (ms); undefined when it never will (`tooLarge`). */
  readonly retryAfterMs: number | undefined;
  /** The request alone is larger than the tenant's whole budget. */
  readonly tooLarge: boolean;
}

export interface TenantUsage {
  readonly tenant: string;
  readonly used: number;
  /** Negative: no limit. */
  readonly limit: number;
}

export interface LimitOverride {
  readonly kind: LimitKind;
  readonly tenant: string;
  readonly limit: number;
}

export interface TenantLimitsOptions {
  readonly redis: RedisClient;
  /** The service's key prefix: every key lives under `<prefix>{limits}:` (one Cluster slot). */
  readonly prefix: string;
  /** Each kind's limit for tenants without an override; absent or negative: no limit. */
  readonly defaults: Partial<Record<LimitKind, number>>;
  /** This node (slot kinds count per node). */
  readonly nodeId?: string;
  /** Node-side timers (refresh, renewals); default the system clock. */
  readonly clock?: Clock;
  /** The scripts' clock; default Redis TIME. */
  readonly scriptClock?: ScriptClock;
  readonly slotLeaseMs?: number;
  readonly refreshMs?: number;
  /**
   * Told of a background failure (a refresh, a renewal, a release), once until that kind of
   * round succeeds again (no line a second through an outage); the next round tries again.
   */
  readonly onError?: (error: unknown, what: string) => void;
}

type Reply = number | string | Reply[] | null;

/**
 * Per-tenant limits, enforced cluster-wide by Lua scripts on one Redis slot (lua/, each script's
 * header says how it is safe to run twice). Every node sees the same budgets: counters live in
 * Redis, never in a node, so a restart or a new node resets nothing. A node calls Redis only for
 * a tenant some limit may apply to (a default is set, or the tenant has an override, re-read
 * every second): with every limit off, nothing here runs.
 */
export class TenantLimits {
  readonly base: string;
  readonly nodeId: string;
  private readonly redis: RedisClient;
  private readonly scripts: ScriptSet;
  private readonly clock: Clock;
  private readonly defaults: Partial<Record<LimitKind, number>>;
  private readonly slotLeaseMs: number;
  private readonly refreshMs: number;
  /** Tenants (key form) with an override, per kind. */
  private overridden = new Map<LimitKind, Set<string>>();
  /** Slot releases Redis did not confirm: retried on each renewal (each is resend-safe). */
  private readonly pendingReleases = new Map<string, { kind: LimitKind; tenant: string }>();
  /** Slot kinds this node holds slots of (renewed while it does). */
  private readonly slotKinds = new Set<LimitKind>();
  private refreshTimer: (() => void) | undefined;
  private renewTimer: (() => void) | undefined;
  private stopped = false;
  /** Background rounds failing now: each is reported once until it succeeds. */
  private readonly failing = new Set<string>();

  constructor(private readonly options: TenantLimitsOptions) {
    this.redis = options.redis;
    this.base = `${options.prefix}{limits}:`;
    this.scripts = loadLimitScripts(options.scriptClock);
    this.clock = options.clock ?? systemClock;
    this.defaults = options.defaults;
    this.nodeId = options.nodeId ?? randomUUID();
    this.slotLeaseMs = options.slotLeaseMs ?? SLOT_LEASE_MS;
    this.refreshMs = options.refreshMs ?? OVERRIDES_REFRESH_MS;
  }

  /**
   * Keeps the overrides fresh and this node's slot leases renewed; resolves once the overrides
   * were read (rejects when Redis could not answer: the rounds go on and read them later).
   */
  async start(): Promise<void> {
    this.scheduleRefresh();
    this.scheduleRenewal();
    await this.refresh();
  }

  /** Stops the timers; this node's slots stop counting at once (they are its streams, closed by now). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.refreshTimer?.();
    this.renewTimer?.();
    await Promise.allSettled(
      [...this.slotKinds].map((kind) => this.run('node-renew', [kind, this.nodeId, 0])),
    );
  }

  /** The default limit of a kind; undefined when off. */
  defaultOf(kind: LimitKind): number | undefined {
    const value = this.defaults[kind];
    return value !== undefined && value >= 0 ? value : undefined;
  }

  /** Whether a limit of `kind` may apply to `tenant` (a default, or an override). */
  applies(kind: LimitKind, tenant: string): boolean {
    return this.defaultOf(kind) !== undefined || (this.overridden.get(kind)?.has(tenantKey(tenant)) ?? false);
  }

  /** Whether a limit of `kind` may apply to any tenant. */
  anyApplies(kind: LimitKind): boolean {
    return this.defaultOf(kind) !== undefined || (this.overridden.get(kind)?.size ?? 0) > 0;
  }

  /**
   * Takes `cost` from each tenant's rate budget (`push`, `publish`), all or none. Undefined
   * when taken (or no limit applies); the refusal of the first tenant without room otherwise.
   */
  async takeRate(kind: 'push' | 'publish', costs: ReadonlyMap<string, number>): Promise<Refusal | undefined> {
    const tenants = [...costs].filter(([tenant]) => this.applies(kind, tenant));
    if (tenants.length === 0) return undefined;
    const args: (string | number)[] = [randomUUID(), kind, this.defaultOf(kind) ?? -1];
    for (const [tenant, cost] of tenants) args.push(tenantKey(tenant), cost);
    const [status, value, index] = (await this.run('rate-take', args)) as [number, number?, number?];
    if (status === 1) return undefined;
    const tenant = (tenants[(index ?? 1) - 1] as [string, number])[0];
    if (status === 2) {
      return { kind, tenant, limit: value ?? 0, retryAfterMs: undefined, tooLarge: true };
    }
    const limit = await this.limitOf(kind, tenant);
    return { kind, tenant, limit, retryAfterMs: value ?? 1000, tooLarge: false };
  }

  /**
   * Reserves up to `want` in-flight slots for a pop under `leaseId`: the number granted, or a
   * refusal when none is free. Undefined when no in-flight limit applies to the tenant.
   */
  async reserveInFlight(
    tenant: string,
    leaseId: string,
    want: number,
  ): Promise<{ granted: number } | Refusal | undefined> {
    if (!this.applies('inflight', tenant)) return undefined;
    const [status, value] = (await this.run('inflight-reserve', [
      this.defaultOf('inflight') ?? -1,
      tenantKey(tenant),
      leaseId,
      want,
      RESERVATION_MS,
    ])) as [number, number];
    if (status === 1) return { granted: value };
    const limit = await this.limitOf('inflight', tenant);
    return { kind: 'inflight', tenant, limit, retryAfterMs: value, tooLarge: false };
  }

  /**
   * What a pop leased under a reservation: `count` messages until `expiresAt`, from the
   * (partitionId, group) pairs listed; 0 gives the reservation back.
   */
  async settleInFlight(
    tenant: string,
    leaseId: string,
    count: number,
    expiresAt: number,
    partitions: readonly { partitionId: string; group: string }[],
  ): Promise<void> {
    const pairs = partitions.map(({ partitionId, group }) => `${partitionId}\n${encodeURIComponent(group)}`);
    await this.run('inflight-settle', [tenantKey(tenant), leaseId, count, expiresAt, ...pairs]);
  }

  /** Frees the in-flight slots of acknowledged messages (any tenant: found by their lease), once each. */
  async ackInFlight(
    acks: readonly { partitionId: string; group: string; transactionId: string }[],
  ): Promise<void> {
    if (acks.length === 0 || !this.anyApplies('inflight')) return;
    const args: string[] = [];
    for (const { partitionId, group, transactionId } of acks)
      args.push(partitionId, encodeURIComponent(group), transactionId);
    await this.run('inflight-ack', args);
  }

  /** Keeps a lease's slots held until its extended expiry. */
  async extendInFlight(leaseId: string, expiresAt: number): Promise<void> {
    if (!this.anyApplies('inflight')) return;
    await this.run('inflight-extend', [leaseId, expiresAt]);
  }

  /**
   * Takes one slot of a slot kind (`subscriptions`) on this node: the handle gives it back.
   * Undefined handle when no limit applies (nothing is counted then).
   */
  async acquireSlot(
    kind: 'subscriptions',
    tenant: string,
  ): Promise<{ release(): void } | Refusal | undefined> {
    if (!this.applies(kind, tenant)) return undefined;
    this.slotKinds.add(kind);
    const key = tenantKey(tenant);
    const [status, limit] = (await this.run('slot-acquire', [
      randomUUID(),
      kind,
      this.defaultOf(kind) ?? -1,
      key,
      this.nodeId,
      this.slotLeaseMs,
    ])) as [number, number];
    if (status !== 1) {
      // A live stream ends when it ends: try again after a lease round.
      return { kind, tenant, limit, retryAfterMs: this.slotLeaseMs / 3, tooLarge: false };
    }
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        const id = randomUUID();
        this.pendingReleases.set(id, { kind, tenant: key });
        void this.release(id);
      },
    };
  }

  private async release(id: string): Promise<void> {
    const pending = this.pendingReleases.get(id);
    if (!pending) return;
    try {
      await this.run('slot-release', [id, pending.kind, pending.tenant, this.nodeId]);
      this.pendingReleases.delete(id);
      this.failing.delete('release');
    } catch (error) {
      this.report('release', error, 'slot release (retried at the next renewal)');
    }
  }

  /** Sets (or with `null` removes) a tenant's override of one kind. */
  async setOverride(kind: LimitKind, tenant: string, limit: number | null): Promise<void> {
    const field = `${kind}\n${tenantKey(tenant)}`;
    if (limit === null) await this.redis.hdel(`${this.base}cfg`, field);
    else await this.redis.hset(`${this.base}cfg`, field, String(limit));
    await this.refresh();
  }

  /** Every override, as stored. */
  async overrides(): Promise<LimitOverride[]> {
    const fields = await this.redis.hgetall(`${this.base}cfg`);
    const list: LimitOverride[] = [];
    for (const [field, value] of Object.entries(fields)) {
      const [kind, tenant] = field.split('\n');
      if (!isLimitKind(kind) || tenant === undefined) continue;
      list.push({ kind, tenant: tenantName(tenant), limit: Number(value) });
    }
    return list.sort((a, b) => a.kind.localeCompare(b.kind) || a.tenant.localeCompare(b.tenant));
  }

  /** Whether a tenant has an override of one kind (read from Redis, not the node's copy). */
  async hasOverride(kind: LimitKind, tenant: string): Promise<boolean> {
    return (await this.redis.hexists(`${this.base}cfg`, `${kind}\n${tenantKey(tenant)}`)) === 1;
  }

  /** The number of overrides stored (the admin route's cap). */
  overrideCount(): Promise<number> {
    return this.redis.hlen(`${this.base}cfg`);
  }

  /** What the tenants seen in the last 10 minutes use of one kind, most recently seen first. */
  async usage(kind: LimitKind, max = 100): Promise<TenantUsage[]> {
    const flat = (await this.run('usage', [kind, this.defaultOf(kind) ?? -1, max])) as Reply[];
    const list: TenantUsage[] = [];
    for (let i = 0; i + 2 < flat.length; i += 3) {
      list.push({
        tenant: tenantName(String(flat[i])),
        used: Number(flat[i + 1]),
        limit: Number(flat[i + 2]),
      });
    }
    return list;
  }

  /** The limit that applies to a tenant now (for a refusal's message). */
  private async limitOf(kind: LimitKind, tenant: string): Promise<number> {
    const override = await this.redis.hget(`${this.base}cfg`, `${kind}\n${tenantKey(tenant)}`);
    return override === null ? (this.defaultOf(kind) ?? -1) : Number(override);
  }

  private async refresh(): Promise<void> {
    const fields = await this.redis.hkeys(`${this.base}cfg`);
    const overridden = new Map<LimitKind, Set<string>>();
    for (const field of fields) {
      const [kind, tenant] = field.split('\n');
      if (!isLimitKind(kind) || tenant === undefined) continue;
      const tenants = overridden.get(kind) ?? new Set<string>();
      tenants.add(tenant);
      overridden.set(kind, tenants);
    }
    this.overridden = overridden;
  }

  private scheduleRefresh(): void {
    if (this.stopped) return;
    this.refreshTimer = this.clock.timer(this.clock.now() + this.refreshMs, () => {
      this.refresh()
        .then(() => this.failing.delete('refresh'))
        .catch((error: unknown) => this.report('refresh', error, 'limit overrides refresh'))
        .finally(() => this.scheduleRefresh());
    });
  }

  private scheduleRenewal(): void {
    if (this.stopped) return;
    this.renewTimer = this.clock.timer(this.clock.now() + this.slotLeaseMs / 3, () => {
      this.renew()
        .then(() => this.failing.delete('renew'))
        .catch((error: unknown) => this.report('renew', error, 'slot lease renewal'))
        .finally(() => this.scheduleRenewal());
    });
  }

  private report(round: string, error: unknown, what: string): void {
    if (this.failing.has(round)) return;
    this.failing.add(round);
    this.options.onError?.(error, what);
  }

  /** Renews this node's slot leases, then retries the releases Redis did not confirm. */
  async renew(): Promise<void> {
    for (const kind of this.slotKinds) await this.run('node-renew', [kind, this.nodeId, this.slotLeaseMs]);
    for (const id of [...this.pendingReleases.keys()]) await this.release(id);
  }

  private run(name: string, args: (string | number)[]): Promise<unknown> {
    const script: LuaScript = scriptNamed(this.scripts, name);
    return runScript(this.redis, script, [this.base], args);
  }
}

/**
 * `herald_limit_refusals_total{kind}`: requests a service refused over a tenant's limit, one
 * series per kind it enforces, each at 0 from the start. No tenant label: `sub` values come from
 * clients and would add series without bound (per-tenant use is in the admin routes).
 */
export function limitRefusalsCounter(metrics: Metrics, kinds: readonly LimitKind[]): Counter<'kind'> {
  return withZeroSeries(
    new Counter({
      name: 'herald_limit_refusals_total',
      help: 'Requests refused because a tenant was over its limit, by kind of limit.',
      labelNames: ['kind'],
      registers: [metrics.registry],
    }),
    'kind',
    kinds,
  );
}
