import { type BodyTicket, popAnswerBytes } from './body-budget.js';
import type { BrokerContext } from './context.js';
import { busy } from './errors.js';
import { newId } from './identifiers.js';
import { type PopRequest, type PopResult, QUEUE_MODE, type SubscriptionStart } from './storage.js';
import { booleanParam, integer, LIMITS, name, timestamp } from './validation.js';

export interface PopOptions {
  readonly request: PopRequest;
  readonly wait: boolean;
  readonly timeout: number;
  readonly autoAck: boolean;
  /** The token's `sub` (the in-flight budget's tenant in `sub` mode); set by the route. */
  readonly sub?: string | undefined;
}

/** Query parameters of `GET /api/v1/pop/queue/:queue[/partition/:partition]` (Queen's names). */
export function parsePopQuery(
  context: BrokerContext,
  params: { queue?: unknown; partition?: unknown },
  query: Record<string, unknown>,
): PopOptions {
  const queue = name(params.queue, 'queue');
  const partition = params.partition === undefined ? undefined : name(params.partition, 'partition');
  return popOptions(context, queue, partition, query);
}

/** The query parameters every pop route shares (all but the queue and partition). */
export function popOptions(
  context: BrokerContext,
  queue: string,
  partition: string | undefined,
  query: Record<string, unknown>,
): PopOptions {
  const group = query.consumerGroup === undefined ? QUEUE_MODE : name(query.consumerGroup, 'consumerGroup');
  const mode = query.subscriptionMode;
  let subscription: SubscriptionStart = { mode: 'all' };
  if (query.subscriptionFrom !== undefined && query.subscriptionFrom !== '') {
    subscription =
      query.subscriptionFrom === 'now'
        ? { mode: 'new' }
        : { mode: 'from', at: timestamp(query.subscriptionFrom, 'subscriptionFrom') };
  } else if (mode === 'new' || mode === 'new-only') {
    // Any other mode reads from the beginning, as Queen's parse_subscription_mode does (its JS
    // client sends `from_beginning`): docs/broker-queen.md, "Queen compatibility".
    subscription = { mode: 'new' };
  }
  return {
    request: {
      queue,
      partition,
      group,
      batch: integer(query.batch, 'batch', context.defaultBatchSize, 1, LIMITS.maxBatch),
      maxPartitions:
        partition === undefined
          ? integer(query.partitions, 'partitions', 1, 1, LIMITS.maxPartitionsPerPop)
          : 1,
      leaseId: '',
      subscription,
    },
    wait: booleanParam(query.wait, 'wait', false),
    timeout: integer(query.timeout, 'timeout', context.defaultTimeout, 0, LIMITS.maxTimeoutMs),
    autoAck: booleanParam(query.autoAck, 'autoAck', false),
  };
}

function count(result: PopResult): number {
  return result.partitions.reduce((total, p) => total + p.messages.length, 0);
}

/** One pop attempt: what it delivered (undefined: nothing), and when work is next ready (0: unknown). */
export interface PopAttempt {
  readonly result: PopResult | undefined;
  readonly nextReadyAt: number;
  /** Pop maintenance mode is on: the pop answers 204 at once, even a long-poll. */
  readonly paused?: true;
}

/**
 * Keeps what a pop's answer holds of the node's body budget until the answer is sent: the route
 * releases it once its response closes (an attempt that delivers nothing releases at once).
 */
export type AnswerHold = (release: () => void) => void;

const releaseNow: AnswerHold = (release) => release();

/**
 * One pop without waiting: leases, then (client still there) acks when `autoAck`, and counts.
 * A pop whose client disconnected gives its leases back (docs/broker-api.md: it must not lease anything).
 * Under an in-flight limit, the pop first reserves slots for its batch (a smaller batch when
 * fewer are free, a 429 when none is) and settles them with what it leased. On a queue that holds
 * large messages it first takes room in the body budget for its answer (body-budget.ts), and
 * answers 503 when none came within the budget's wait, nothing leased.
 */
export async function popOnce(
  context: BrokerContext,
  request: PopRequest,
  autoAck: boolean,
  signal: AbortSignal,
  sub?: string,
  hold: AnswerHold = releaseNow,
): Promise<PopAttempt> {
  const { storage } = context;
  if ((await storage.flags.get()).popMaintenanceMode)
    return { result: undefined, nextReadyAt: 0, paused: true };
  const room = await answerRoom(context, request);
  let attempt: PopAttempt | undefined;
  try {
    attempt = await leaseAndCount(context, request, autoAck, signal, sub);
    return attempt;
  } finally {
    if (room) {
      if (attempt?.result) hold(room.release);
      else room.release();
    }
  }
}

/** Room in the body budget for a pop's answer of large messages; undefined where none is needed. */
async function answerRoom(context: BrokerContext, request: PopRequest): Promise<BodyTicket | undefined> {
  const { bodyBudget } = context;
  if (!bodyBudget) return undefined;
  const bytes = popAnswerBytes(context.storage.queues.largestRecord(request.queue), request.batch);
  if (bytes === 0) return undefined;
  const ticket = bodyBudget.request(bytes);
  if (await ticket.admitted) return ticket;
  context.metrics.bodyBudgetRefusals.inc();
  throw busy(bodyBudget.bytes, bodyBudget.waitMs);
}

async function leaseAndCount(
  context: BrokerContext,
  request: PopRequest,
  autoAck: boolean,
  signal: AbortSignal,
  sub: string | undefined,
): Promise<PopAttempt> {
  const { storage } = context;
  const leased = { ...request, leaseId: newId() };
  const reservation = await context.limits.reserve(sub, leased);
  if (reservation) leased.batch = reservation.granted;
  /** Settles the reservation; a failure is logged: the reservation then ends on its own (RESERVATION_MS). */
  const settle = async (stored: PopResult, held: boolean) => {
    if (!reservation) return;
    try {
      await context.limits.settle(reservation, leased, stored, held);
    } catch (error) {
      context.log.warn({ err: error }, 'could not settle an in-flight reservation; it expires on its own');
    }
  };
  let stored: PopResult;
  try {
    stored = await storage.queues.pop(leased);
  } catch (error) {
    await settle({ partitions: [], nextReadyAt: 0 }, false);
    throw error;
  }
  if (count(stored) === 0) {
    await settle(stored, false);
    return { result: undefined, nextReadyAt: stored.nextReadyAt };
  }
  let result: PopResult;
  try {
    result = context.encryption.openPop(stored);
  } catch (error) {
    // Given back uncounted: a node without the key must not walk messages to the DLQ.
    await storage.queues.release(stored, leased.group);
    await settle(stored, false);
    throw error;
  }
  if (signal.aborted) {
    await storage.queues.release(stored, leased.group);
    await settle(stored, false);
    return { result: undefined, nextReadyAt: 0 };
  }
  if (autoAck) {
    // Acked only once the client is known to be there: a lease first, then the ack.
    await storage.queues.ack(
      result.partitions.flatMap((popped) =>
        popped.messages.map((message) => ({
          transactionId: message.transactionId,
          partitionId: popped.partitionId,
          status: 'completed' as const,
          group: leased.group,
          leaseId: popped.leaseId,
          error: null,
        })),
      ),
    );
  }
  await settle(stored, !autoAck);
  for (const popped of result.partitions) {
    context.metrics.popped.inc({ queue: popped.queue }, popped.messages.length);
    if (autoAck)
      context.metrics.acked.inc({ queue: popped.queue, status: 'completed' }, popped.messages.length);
  }
  return { result, nextReadyAt: 0 };
}

/**
 * Pops, long-polling when asked. `signal` is checked before each attempt and after a
 * successful one. Resolves with undefined when there is nothing to deliver.
 */
export async function pop(
  context: BrokerContext,
  options: PopOptions,
  signal: AbortSignal,
  hold: AnswerHold = releaseNow,
): Promise<PopResult | undefined> {
  const deadline = context.clock.now() + (options.wait ? options.timeout : 0);
  const { longPoll } = context;
  const { queue, group } = options.request;
  /** The notification epoch this pop last tried for, and whether a notification woke it. */
  let tried = 0;
  let notified = false;
  // A pop woken by a notification that it does not use passes the wake-up on (long-poll.ts).
  const passOn = () => {
    if (notified) longPoll.handOff(queue, group, tried);
  };
  for (;;) {
    if (signal.aborted) {
      passOn();
      return undefined;
    }
    const attempt = await popOnce(context, options.request, options.autoAck, signal, options.sub, hold);
    if (attempt.result || attempt.paused) return attempt.result;
    // Nothing for this pop, yet work is ready now (on a partition it does not wait for, say).
    if (attempt.nextReadyAt > 0 && attempt.nextReadyAt <= context.clock.now()) passOn();
    if (!options.wait || context.clock.now() >= deadline || longPoll.isClosed) return undefined;
    const woke = await longPoll.wait(queue, group, attempt.nextReadyAt, deadline, signal, tried);
    tried = woke.epoch;
    notified = woke.reason === 'notified';
  }
}

function escapeText(value: string | null): string {
  return value === null ? 'null' : JSON.stringify(value);
}

/** The second of the last `isoTime` call, and its text up to the milliseconds. */
let isoSecond = Number.NaN;
let isoPrefix = '';

/**
 * `new Date(ms).toISOString()`, with the text up to the second kept from the previous call: a
 * pop's messages mostly share their second, and toISOString was a third of the pop body's cost.
 */
export function isoTime(ms: number): string {
  const second = Math.floor(ms / 1000);
  if (second !== isoSecond) {
    // Every ISO text ends with '.mmmZ' (a year past 9999 only lengthens the front).
    isoPrefix = new Date(second * 1000).toISOString().slice(0, -4);
    isoSecond = second;
  }
  const millis = ms - second * 1000;
  return `${isoPrefix}${millis < 10 ? '00' : millis < 100 ? '0' : ''}${millis}Z`;
}

/**
 * The 200 body, built as text so stored payloads (already JSON) are spliced in without a
 * parse/serialize round trip; one string grown in place (an array joined at the end cost more).
 */
export function popResponseBody(result: PopResult, group: string): string {
  const [first] = result.partitions;
  if (!first) throw new Error('empty pop result');
  const groupText = JSON.stringify(group);
  let messages = '';
  let separator = '';
  for (const popped of result.partitions) {
    const common = `,"queue":${JSON.stringify(popped.queue)},"partitionId":${JSON.stringify(popped.partitionId)},"partition":${JSON.stringify(popped.partition)},"leaseId":${JSON.stringify(popped.leaseId)},"consumerGroup":${groupText}}`;
    for (const message of popped.messages) {
      messages += `${separator}{"id":${JSON.stringify(message.id)},"transactionId":${JSON.stringify(message.transactionId)},"traceId":${escapeText(message.traceId)},"data":${message.data},"producerSub":${escapeText(message.producerSub)},"createdAt":"${isoTime(message.createdAt)}","retryCount":${message.retryCount}${common}`;
      separator = ',';
    }
  }
  return `{"success":true,"queue":${JSON.stringify(first.queue)},"partition":${JSON.stringify(first.partition)},"partitionId":${JSON.stringify(first.partitionId)},"leaseId":${JSON.stringify(first.leaseId)},"consumerGroup":${groupText},"partitionsClaimed":${result.partitions.length},"messages":[${messages}]}`;
}
