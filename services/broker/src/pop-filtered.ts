import type { BrokerContext } from './context.js';
import type { WakeReason } from './long-poll.js';
import { type AnswerHold, type PopOptions, popOnce, popOptions } from './pop.js';
import type { PopResult } from './storage.js';
import { LIMITS, optionalString } from './validation.js';

/** `GET /api/v1/pop?namespace&task`: which queues a pop reads; null matches every value. */
export interface PopFilter {
  readonly namespace: string | null;
  readonly task: string | null;
}

export function parseFilteredPopQuery(
  context: BrokerContext,
  query: Record<string, unknown>,
): { filter: PopFilter; options: PopOptions } {
  return {
    filter: {
      namespace: optionalString(query.namespace, 'namespace'),
      task: optionalString(query.task, 'task'),
    },
    // The queue is set per candidate; the other parameters are those of a pop by queue.
    options: popOptions(context, '', undefined, query),
  };
}

/** The queues a filtered pop tries, in name order, at most `maxQueuesPerFilteredPop`. */
async function matchingQueues(context: BrokerContext, filter: PopFilter): Promise<string[]> {
  return (await context.storage.catalog.list())
    .filter(
      (queue) =>
        (filter.namespace === null || queue.namespace === filter.namespace) &&
        (filter.task === null || queue.task === filter.task),
    )
    .map((queue) => queue.name)
    .sort()
    .slice(0, LIMITS.maxQueuesPerFilteredPop);
}

/**
 * Parks on every matching queue at once and resumes at the first wake-up of any of them
 * (the others are withdrawn), so a filtered long-poll is woken like a pop by queue.
 */
async function waitForAny(
  context: BrokerContext,
  queues: string[],
  group: string,
  wakeAt: number,
  deadline: number,
  signal: AbortSignal,
): Promise<{ queue: string; reason: WakeReason; epoch: number }> {
  const withdraw = new AbortController();
  const onAbort = () => withdraw.abort();
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    if (queues.length === 0) {
      // Nothing to park on yet: wait out the deadline (or the client), then look again.
      const woke = await context.longPoll.wait('', group, wakeAt, deadline, withdraw.signal);
      return { queue: '', ...woke };
    }
    const waits = queues.map(async (queue) => ({
      queue,
      ...(await context.longPoll.wait(queue, group, wakeAt, deadline, withdraw.signal)),
    }));
    const first = await Promise.race(waits);
    withdraw.abort();
    // A notification that selected this pop on another queue meanwhile is passed on, not lost.
    for (const other of await Promise.all(waits)) {
      if (other !== first && other.reason === 'notified') {
        context.longPoll.handOff(other.queue, group, other.epoch);
      }
    }
    return first;
  } finally {
    signal.removeEventListener('abort', onAbort);
    withdraw.abort();
  }
}

/**
 * Queen's `GET /api/v1/pop?namespace=&task=`: tries each matching queue (name order) and
 * answers from the first that has work, as Queen did (docs/broker-queen.md, "Queen compatibility").
 * With `wait=true` it long-polls on every matching queue; queues created while it is parked
 * are seen at its next wake-up.
 */
export async function popFiltered(
  context: BrokerContext,
  filter: PopFilter,
  options: PopOptions,
  signal: AbortSignal,
  hold?: AnswerHold,
): Promise<PopResult | undefined> {
  const deadline = context.clock.now() + (options.wait ? options.timeout : 0);
  const { longPoll } = context;
  const { group } = options.request;
  /** The queue and notification that last woke this pop, to pass the wake-up on if unused. */
  let woken: { queue: string; epoch: number } | undefined;
  for (;;) {
    if (signal.aborted) return undefined;
    const queues = await matchingQueues(context, filter);
    let nextReadyAt = 0;
    for (const queue of queues) {
      const attempt = await popOnce(
        context,
        { ...options.request, queue },
        options.autoAck,
        signal,
        options.sub,
        hold,
      );
      if (attempt.result || attempt.paused) return attempt.result;
      if (attempt.nextReadyAt > 0) {
        nextReadyAt = nextReadyAt === 0 ? attempt.nextReadyAt : Math.min(nextReadyAt, attempt.nextReadyAt);
        if (woken?.queue === queue && attempt.nextReadyAt <= context.clock.now()) {
          longPoll.handOff(queue, group, woken.epoch);
        }
      }
    }
    if (!options.wait || context.clock.now() >= deadline || longPoll.isClosed) return undefined;
    const woke = await waitForAny(context, queues, group, nextReadyAt, deadline, signal);
    woken = woke.reason === 'notified' ? { queue: woke.queue, epoch: woke.epoch } : undefined;
  }
}
