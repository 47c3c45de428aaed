/*
 * The outage probe of the broker soak: while Redis is down, push, pop and ack are sent once each
 * (never retried) and must be refused with 503 within the bound of docs/broker-operations.md ("Outages");
 * once Redis is back, none of the refused requests may show any effect.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ClusterClient, Reply } from './client.js';

/** docs/broker-operations.md, "Outages": a request that needs Redis answers 503 within 1.25 s. */
export const REFUSAL_BOUND_MS = 1250;

export const OUTAGE_QUEUE = 'soak.outage';
/** Longer than an outage plus the recovery, so the probe's own lease is still held afterwards. */
const OUTAGE_LEASE_SECONDS = 300;
/** Pause between two probes of one kind during the outage. */
const PROBE_PAUSE_MS = 100;

export interface OutageProbeResult {
  /** Probe requests sent while Redis was down (push, pop and ack together). */
  probes: number;
  /** Of those, answers that were not 503 (`op status` each), or connection errors. */
  notRefused: string[];
  /** The slowest 503 among the probes, in milliseconds. */
  maxRefusalMs: number;
  /** Which probe was the slowest and when it was sent (seconds into the outage). */
  slowest: string;
  /** Probes answered 503 later than `REFUSAL_BOUND_MS`. */
  late: number;
  /** Pushes refused with 503 (each with a payload id never used again). */
  refusedPushes: number;
  /** Refused pushes found in the queue afterwards. */
  refusedPushesApplied: number;
  /** A refused pop that leased the message anyway (it is not poppable at once afterwards). */
  refusedPopApplied: number;
  /** A refused ack that was applied anyway (the message is completed before the real ack). */
  refusedAckApplied: number;
}

interface Leased {
  transactionId: string;
  partitionId: string;
  leaseId: string;
}

function parse<T>(reply: Reply | undefined, what: string, status: number): T {
  if (!reply || reply.status !== status) {
    throw new Error(`outage probe: ${what} answered ${reply?.status ?? 'nothing'} ${reply?.text ?? ''}`);
  }
  return JSON.parse(reply.text) as T;
}

/** One outage probe; `prepare` before Redis goes down, `during` while it is down, `verify` after. */
export class OutageProbe {
  private leased: Leased | undefined;
  private stopped = false;
  private startedAt = 0;
  private pushes = 0;
  private readonly result: OutageProbeResult = {
    probes: 0,
    notRefused: [],
    maxRefusalMs: 0,
    slowest: 'none',
    late: 0,
    refusedPushes: 0,
    refusedPushesApplied: 0,
    refusedPopApplied: 0,
    refusedAckApplied: 0,
  };

  constructor(
    private readonly client: ClusterClient,
    /** Distinguishes the partitions of successive outages. */
    private readonly round: number,
  ) {}

  private partition(kind: 'ack' | 'pop' | 'push'): string {
    return `${kind}-${this.round}`;
  }

  /** Two messages under the ack partition (the first one leased), one under the pop partition. */
  async prepare(): Promise<void> {
    const configure = await this.client.retrying('POST', '/api/v1/configure', {
      queue: OUTAGE_QUEUE,
      options: { leaseTime: OUTAGE_LEASE_SECONDS, retryLimit: 100 },
    });
    parse(configure, 'configure', 200);
    const items = [
      { partition: this.partition('ack'), transactionId: `ack-${this.round}-1` },
      { partition: this.partition('ack'), transactionId: `ack-${this.round}-2` },
      { partition: this.partition('pop'), transactionId: `pop-${this.round}-1` },
    ].map((item) => ({ queue: OUTAGE_QUEUE, ...item, payload: { probe: item.transactionId } }));
    parse(await this.client.retrying('POST', '/api/v1/push', { items }), 'push', 201);
    const popped = parse<{ messages: Leased[] }>(
      await this.client.retrying(
        'GET',
        `/api/v1/pop/queue/${OUTAGE_QUEUE}/partition/${this.partition('ack')}?batch=1`,
      ),
      'pop',
      200,
    );
    const [message] = popped.messages;
    if (message?.transactionId !== `ack-${this.round}-1`)
      throw new Error('outage probe: wrong message leased');
    this.leased = message;
  }

  private record(op: string, reply: Reply | undefined): boolean {
    this.result.probes += 1;
    if (!reply) {
      this.result.notRefused.push(`${op} connection error`);
      return false;
    }
    if (reply.status !== 503) {
      this.result.notRefused.push(`${op} ${reply.status}`);
      return false;
    }
    if (reply.ms > this.result.maxRefusalMs) {
      this.result.maxRefusalMs = reply.ms;
      const sentAt = (performance.now() - reply.ms - this.startedAt) / 1000;
      this.result.slowest = `${op} ${reply.ms.toFixed(0)} ms, sent ${sentAt.toFixed(1)} s into the outage`;
    }
    if (reply.ms > REFUSAL_BOUND_MS) this.result.late += 1;
    return true;
  }

  private async attempt(node: number, method: 'GET' | 'POST', path: string, body?: unknown) {
    try {
      return await this.client.once(node, method, path, body);
    } catch {
      return undefined;
    }
  }

  /** Probes until `stop()`; call it once Redis is down. */
  async during(): Promise<void> {
    const leased = this.leased;
    if (!leased) throw new Error('outage probe: prepare() first');
    this.startedAt = performance.now();
    let node = 0;
    const loop = async (work: () => Promise<void>) => {
      while (!this.stopped) {
        await work();
        await sleep(PROBE_PAUSE_MS);
      }
    };
    await Promise.all([
      loop(async () => {
        const transactionId = `refused-${this.round}-${this.pushes++}`;
        const reply = await this.attempt(node++, 'POST', '/api/v1/push', {
          items: [
            {
              queue: OUTAGE_QUEUE,
              partition: this.partition('push'),
              transactionId,
              payload: { transactionId },
            },
          ],
        });
        if (this.record('push', reply)) this.result.refusedPushes += 1;
      }),
      loop(async () => {
        const path = `/api/v1/pop/queue/${OUTAGE_QUEUE}/partition/${this.partition('pop')}?batch=1`;
        this.record('pop', await this.attempt(node++, 'GET', path));
      }),
      loop(async () => {
        const body = { ...leased, status: 'completed' };
        this.record('ack', await this.attempt(node++, 'POST', '/api/v1/ack', body));
      }),
    ]);
  }

  stop(): void {
    this.stopped = true;
  }

  /** Once Redis is back and the nodes are ready: did any refused request take effect? */
  async verify(): Promise<OutageProbeResult> {
    const leased = this.leased as Leased;
    // A refused pop applied later would hold the partition under a lease nobody knows.
    const pop = await this.client.retrying(
      'GET',
      `/api/v1/pop/queue/${OUTAGE_QUEUE}/partition/${this.partition('pop')}?batch=1&autoAck=true`,
    );
    const popped =
      pop?.status === 200 ? (JSON.parse(pop.text) as { messages: { retryCount: number }[] }) : undefined;
    if (popped?.messages[0]?.retryCount !== 0) this.result.refusedPopApplied += 1;
    // A refused ack applied later completed the message before this first real ack. Read from
    // its state, not from the real ack's `repeat`: the reply-loss proxy drops the node's Redis
    // connection with whatever is in flight on it, and ioredis re-sends an unanswered script, so
    // the real ack itself can come back a repeat (the broker soak failed that way in CI once,
    // every other count clean).
    const states = parse<{ transactionId: string; status: string }[]>(
      await this.client.retrying('GET', `/api/v1/status/queues/${OUTAGE_QUEUE}/messages?limit=1000`),
      'status',
      200,
    );
    const state = states.find((message) => message.transactionId === leased.transactionId)?.status;
    if (state !== 'processing') this.result.refusedAckApplied += 1;
    const [ack] = parse<{ success: boolean; error: string | null }[]>(
      await this.client.retrying('POST', '/api/v1/ack', { ...leased, status: 'completed' }),
      'ack',
      200,
    );
    if (!ack?.success) this.result.refusedAckApplied += 1;
    // Every refused push had its own id: anything under the push partition was applied.
    for (;;) {
      const reply = await this.client.retrying(
        'GET',
        `/api/v1/pop/queue/${OUTAGE_QUEUE}/partition/${this.partition('push')}?batch=1000&autoAck=true`,
      );
      if (reply?.status === 204) break;
      this.result.refusedPushesApplied += parse<{ messages: unknown[] }>(reply, 'pop', 200).messages.length;
    }
    return this.result;
  }
}
