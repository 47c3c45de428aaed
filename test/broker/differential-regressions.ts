/*
 * Sequences on which the two broker storages once differed, each replayed by
 * differential.test.ts on every run. `found`: the seed (or the issue) that showed it.
 * Over 500 lines on purpose: data, one printed sequence per drift, kept as the shrinker printed
 * it so a regression can be replayed with DIFF_REPLAY and compared with the seed that found it.
 */
import type { Operation } from './differential-model.js';

export interface Regression {
  name: string;
  found: string;
  operations: Operation[];
}

const pop = (
  queue: number,
  group: number,
  subscription: 'all' | 'new' = 'all',
  partition: number | null = null,
): Operation => ({ op: 'pop', queue, partition, group, batch: 4, maxPartitions: 3, subscription });

export const REGRESSIONS: Regression[] = [
  {
    name: 'a group with subscriptionMode=new that pops a queue before it exists reads what is pushed next',
    found: 'issue #11 (confirmed drift); seeds 1-3 of the first run',
    operations: [
      pop(0, 1, 'new'),
      { op: 'push', items: [{ queue: 0, partition: 0, transaction: 0 }] },
      { op: 'advance', ms: 1000 },
      pop(0, 1, 'new'),
    ],
  },
  {
    name: 'a message dead-lettered by a lease expiry is trimmed by retention',
    found: 'issue #11 (confirmed drift)',
    operations: [
      {
        op: 'configure',
        queue: 0,
        options: { leaseTime: 1, retryLimit: 0, retentionEnabled: true, completedRetentionSeconds: 1 },
        named: false,
      },
      { op: 'push', items: [{ queue: 0, partition: 0, transaction: 0 }] },
      pop(0, 0),
      // Takes the look the group's first pop scheduled (pop-1.lua), so only the expiry can
      // schedule the next one.
      { op: 'retention' },
      { op: 'advance', ms: 2000 },
      { op: 'sweepLeases' },
      { op: 'advance', ms: 2000 },
      { op: 'retention' },
    ],
  },
  {
    name: 'queue-mode messages of one millisecond list in the same order',
    found: 'seed 1',
    operations: [
      {
        op: 'push',
        items: [
          { queue: 0, partition: 2, transaction: 1 },
          { queue: 0, partition: 1, transaction: 4 },
        ],
      },
    ],
  },
  {
    name: 'partitions ready at the same time are popped in the same order',
    found: 'seed 1',
    operations: [
      { op: 'push', items: [{ queue: 0, partition: 2, transaction: 3 }] },
      { op: 'push', items: [{ queue: 0, partition: 0, transaction: 4 }] },
      { op: 'pop', queue: 0, partition: null, group: 0, batch: 1, maxPartitions: 1, subscription: 'all' },
    ],
  },
  {
    name: 'queues and stats are listed by code unit, with the names configure gave',
    found: 'seeds 1, 5',
    operations: [
      { op: 'configure', queue: 1, options: {}, named: true },
      { op: 'push', items: [{ queue: 0, partition: 0, transaction: 0 }] },
      { op: 'stats' },
    ],
  },
  {
    name: 'a push of duplicates only over maxSize answers duplicate',
    found: 'seed 1',
    operations: [
      {
        op: 'push',
        items: [
          { queue: 0, partition: 0, transaction: 0 },
          { queue: 0, partition: 0, transaction: 1 },
        ],
      },
      { op: 'configure', queue: 0, options: { maxSize: 1 }, named: false },
      { op: 'push', items: [{ queue: 0, partition: 0, transaction: 0 }] },
    ],
  },
  {
    name: 'a push over maxSize in one queue stores the items of the other queue',
    found: 'seed 7',
    operations: [
      { op: 'configure', queue: 0, options: { maxSize: 1 }, named: false },
      { op: 'push', items: [{ queue: 0, partition: 0, transaction: 0 }] },
      {
        op: 'push',
        items: [
          { queue: 1, partition: 0, transaction: 0 },
          { queue: 0, partition: 0, transaction: 1 },
        ],
      },
    ],
  },
  {
    name: 'queue-mode status of a partition the group has not read follows its subscription',
    found: 'seed 2',
    operations: [
      { op: 'push', items: [{ queue: 0, partition: 1, transaction: 2 }] },
      { op: 'advance', ms: 1300 },
      {
        op: 'pop',
        queue: 0,
        partition: 0,
        group: 0,
        batch: 3,
        maxPartitions: 1,
        subscription: { secondsAgo: 1 },
      },
    ],
  },
  {
    name: 'a refused ack leaves no state for a group that subscribes later',
    found: 'seed 2',
    operations: [
      { op: 'push', items: [{ queue: 0, partition: 0, transaction: 5 }] },
      pop(0, 0),
      { op: 'ack', acks: [{ popped: 0, status: 'dlq', lease: 'own', group: 1 }] },
      { op: 'advance', ms: 2000 },
      pop(0, 1, 'new'),
    ],
  },
  {
    name: 'a transaction refuses a clear payload for an encrypted queue before a later failing ack',
    found: 'seed 5',
    operations: [
      { op: 'push', items: [{ queue: 0, partition: 0, transaction: 1 }] },
      pop(0, 2),
      { op: 'configure', queue: 0, options: { encryptionEnabled: true }, named: false },
      {
        op: 'transaction',
        parts: [
          { push: { queue: 0, partition: 2, transaction: 5 } },
          { ack: { popped: 0, status: 'completed', lease: 'unknown', group: 'own' } },
        ],
      },
    ],
  },
  {
    name: 'an ack resent after its queue was deleted and created again answers the same',
    found: 'seeds 5, 9, 11',
    operations: [
      { op: 'push', items: [{ queue: 0, partition: 1, transaction: 0 }] },
      pop(0, 0),
      { op: 'ack', acks: [{ popped: 0, status: 'completed', lease: 'own', group: 'own' }] },
      { op: 'deleteQueue', queue: 0 },
      { op: 'push', items: [{ queue: 0, partition: 1, transaction: 1 }] },
      { op: 'ack', acks: [{ popped: 0, status: 'dlq', lease: 'own', group: 'own' }] },
    ],
  },
  {
    name: 'a seek back makes waiting messages due for maxWaitTimeSeconds at once',
    found: 'seed 8',
    operations: [
      { op: 'configure', queue: 0, options: { maxWaitTimeSeconds: 5 }, named: false },
      { op: 'push', items: [{ queue: 0, partition: 1, transaction: 0 }] },
      { op: 'advance', ms: 5000 },
      pop(0, 1, 'new', 1),
      { op: 'retention' },
      { op: 'seek', queue: 0, group: 1, partition: 1, target: { secondsAgo: 12 } },
      { op: 'retention' },
    ],
  },
  {
    name: 'a group created after acks it made without a lease counts its backlog from them',
    found: 'seed 4',
    operations: [
      {
        op: 'push',
        items: [
          { queue: 0, partition: 2, transaction: 1 },
          { queue: 0, partition: 1, transaction: 0 },
          { queue: 0, partition: 2, transaction: 5 },
        ],
      },
      pop(0, 1),
      { op: 'deleteGroup', queue: 0, group: 1 },
      { op: 'ack', acks: [{ popped: 0, status: 'completed', lease: 'none', group: 'own' }] },
      pop(0, 1),
      { op: 'stats' },
    ],
  },
  {
    name: 'leases expiring in one sweep dead-letter in the same order',
    found: 'seed 23',
    operations: [
      {
        op: 'push',
        items: [
          { queue: 0, partition: 1, transaction: 2 },
          { queue: 0, partition: 0, transaction: 0 },
        ],
      },
      { op: 'configure', queue: 0, options: { leaseTime: 1, retryLimit: 0 }, named: false },
      pop(0, 1),
      pop(0, 0, 'all', 1),
      { op: 'advance', ms: 2000 },
      { op: 'sweepLeases' },
    ],
  },
  {
    name: 'a message pushed again under a dead-lettered transaction id is not dead',
    found: 'seed 23',
    operations: [
      { op: 'push', items: [{ queue: 0, partition: 0, transaction: 0 }] },
      pop(0, 0),
      { op: 'ack', acks: [{ popped: 0, status: 'dlq', lease: 'own', group: 'own' }] },
      { op: 'deleteMessage', pushed: 0 },
      { op: 'push', items: [{ queue: 0, partition: 0, transaction: 0 }] },
    ],
  },
  {
    name: 'a transaction answers its first failing operation, an unknown partition included',
    found: 'seed 22',
    operations: [
      { op: 'push', items: [{ queue: 0, partition: 0, transaction: 2 }] },
      { op: 'push', items: [{ queue: 1, partition: 1, transaction: 4 }] },
      pop(0, 0),
      pop(1, 0),
      { op: 'ack', acks: [{ popped: 0, status: 'completed', lease: 'own', group: 'own' }] },
      { op: 'deleteQueue', queue: 1 },
      {
        op: 'transaction',
        parts: [
          { ack: { popped: 0, status: 'failed', lease: 'none', group: 'own' } },
          { ack: { popped: 1, status: 'retry', lease: 'own', group: 'own' } },
        ],
      },
    ],
  },
  {
    name: "a new group's unconsumed messages are due for maxWaitTimeSeconds at once",
    found: 'seed 8',
    operations: [
      { op: 'configure', queue: 0, options: { maxWaitTimeSeconds: 5 }, named: false },
      {
        op: 'push',
        items: [
          { queue: 0, partition: 1, transaction: 3 },
          { queue: 0, partition: 2, transaction: 3 },
        ],
      },
      { op: 'advance', ms: 1000 },
      pop(0, 2, 'new'),
      { op: 'advance', ms: 5000 },
      { op: 'retention' },
      pop(0, 0, 'all', 1),
      { op: 'retention' },
    ],
  },
  {
    name: 'a transaction refused as full creates no queue, and leases of a deleted queue are not found',
    found: 'seed 8',
    operations: [
      { op: 'push', items: [{ queue: 1, partition: 0, transaction: 2 }] },
      { op: 'push', items: [{ queue: 0, partition: 0, transaction: 1 }] },
      { op: 'configure', queue: 0, options: { maxSize: 1 }, named: false },
      pop(1, 1),
      { op: 'ack', acks: [{ popped: 0, status: 'completed', lease: 'own', group: 'own' }] },
      { op: 'deleteQueue', queue: 1 },
      {
        op: 'transaction',
        parts: [
          { push: { queue: 0, partition: 1, transaction: 4 } },
          { push: { queue: 1, partition: 0, transaction: 0 } },
        ],
      },
      { op: 'stats' },
      {
        op: 'transaction',
        parts: [{ ack: { popped: 0, status: 'failed', lease: 'own', group: 'own' } }],
      },
    ],
  },
  {
    name: 'an ack of a partition only registered by a refused transaction names no queue',
    found: 'seed 13',
    operations: [
      {
        op: 'push',
        items: [
          { queue: 0, partition: 0, transaction: 3 },
          { queue: 0, partition: 2, transaction: 1 },
        ],
      },
      { op: 'pop', queue: 0, partition: 2, group: 2, batch: 3, maxPartitions: 1, subscription: 'all' },
      { op: 'deleteQueue', queue: 0 },
      {
        op: 'transaction',
        parts: [
          { push: { queue: 0, partition: 2, transaction: 2 } },
          { ack: { popped: 0, status: 'completed', lease: 'own', group: 'own' } },
        ],
      },
      { op: 'ack', acks: [{ popped: 0, status: 'success', lease: 'unknown', group: 'own' }] },
    ],
  },
  {
    name: 'a batch ack under a lease of a deleted queue is not found, as in a transaction',
    found: 'seed 13',
    operations: [
      { op: 'push', items: [{ queue: 0, partition: 1, transaction: 1 }] },
      pop(0, 2),
      { op: 'ack', acks: [{ popped: 0, status: 'retry', lease: 'own', group: 'own' }] },
      { op: 'deleteQueue', queue: 0 },
      // Refused (its ack is not found): it registered the partition ids all the same.
      {
        op: 'transaction',
        parts: [
          { push: { queue: 0, partition: 1, transaction: 2 } },
          { ack: { popped: 0, status: 'completed', lease: 'own', group: 'own' } },
        ],
      },
      { op: 'ack', acks: [{ popped: 0, status: 'completed', lease: 'own', group: 'own' }] },
    ],
  },
  {
    name: 'a group created by a seek of a missing partition sees the other partitions',
    found: 'seed 22',
    operations: [
      { op: 'push', items: [{ queue: 0, partition: 1, transaction: 2 }] },
      { op: 'advance', ms: 1000 },
      { op: 'seek', queue: 0, group: 2, partition: 2, target: { secondsAgo: 6 } },
      { op: 'stats' },
      pop(0, 2),
    ],
  },
  {
    name: 'a group deleted, dead-lettering by an ack without a lease, then created again after a requeue counts the requeued message',
    found: 'seed 22',
    operations: [
      { op: 'configure', queue: 0, options: { retryLimit: 0, deadLetterQueue: true }, named: false },
      {
        op: 'push',
        items: [
          { queue: 0, partition: 0, transaction: 0 },
          { queue: 0, partition: 0, transaction: 1 },
        ],
      },
      pop(0, 1),
      { op: 'deleteGroup', queue: 0, group: 1 },
      // The group is gone; an ack naming it still applies (an ack needs no registered group),
      // and dead-letters the second message, ahead of the group's position.
      { op: 'ack', acks: [{ popped: 1, status: 'failed', lease: 'none', group: 'own' }] },
      { op: 'requeue', queue: 0, picks: [0] },
      pop(0, 1),
      { op: 'stats' },
    ],
  },
  {
    name: 'a dead letter that a lease kept from retention by age is deleted once the lease ends',
    found: 'seed 36 of DIFF_SEEDS=40',
    operations: [
      {
        op: 'push',
        items: [
          { queue: 0, partition: 0, transaction: 4 },
          { queue: 0, partition: 0, transaction: 0 },
          { queue: 0, partition: 2, transaction: 1 },
        ],
      },
      { op: 'advance', ms: 2000 },
      {
        op: 'pop',
        queue: 0,
        partition: 2,
        group: 1,
        batch: 1,
        maxPartitions: 3,
        subscription: { secondsAgo: 16 },
      },
      {
        op: 'configure',
        queue: 0,
        options: { leaseTime: 5, delayedProcessing: 3, windowBuffer: 0, ttl: 2, retentionSeconds: 2 },
        named: true,
      },
      { op: 'retention' },
      { op: 'ack', acks: [{ popped: 390, status: 'dlq', lease: 'none', group: 'own' }] },
      { op: 'retention' },
    ],
  },
  {
    name: 'an ack for a deleted group keeps the position it resolved from when the group is created again later',
    found: 'seed 25 of DIFF_SEEDS=40',
    operations: [
      {
        op: 'push',
        items: [
          { queue: 1, partition: 0, transaction: 5 },
          { queue: 0, partition: 2, transaction: 4 },
          { queue: 0, partition: 2, transaction: 3 },
        ],
      },
      { op: 'advance', ms: 2300 },
      {
        op: 'push',
        items: [
          { queue: 0, partition: 1, transaction: 1 },
          { queue: 0, partition: 1, transaction: 2 },
          { queue: 0, partition: 2, transaction: 5 },
        ],
      },
      pop(0, 1),
      { op: 'deleteGroup', queue: 0, group: 1 },
      { op: 'pop', queue: 1, partition: 0, group: 1, batch: 2, maxPartitions: 1, subscription: 'all' },
      {
        op: 'pop',
        queue: 0,
        partition: 2,
        group: 2,
        batch: 2,
        maxPartitions: 1,
        subscription: { secondsAgo: 1 },
      },
      { op: 'ack', acks: [{ popped: 885, status: 'dlq', lease: 'none', group: 'own' }] },
      {
        op: 'pop',
        queue: 0,
        partition: 1,
        group: 1,
        batch: 4,
        maxPartitions: 2,
        subscription: { secondsAgo: 2 },
      },
      { op: 'stats' },
      pop(0, 1, 'all', 2),
    ],
  },
  {
    name: 'a release after its group was deleted leaves no state for the group created again',
    found: 'seed 42 of DIFF_SEEDS=100',
    operations: [
      { op: 'pop', queue: 0, partition: 2, group: 0, batch: 3, maxPartitions: 3, subscription: 'all' },
      { op: 'pop', queue: 0, partition: null, group: 0, batch: 4, maxPartitions: 2, subscription: 'all' },
      {
        op: 'pop',
        queue: 0,
        partition: null,
        group: 0,
        batch: 2,
        maxPartitions: 2,
        subscription: { secondsAgo: 16 },
      },
      { op: 'pop', queue: 0, partition: 1, group: 2, batch: 4, maxPartitions: 2, subscription: 'all' },
      {
        op: 'transaction',
        parts: [
          { push: { queue: 0, partition: 1, transaction: 5 } },
          { push: { queue: 1, partition: 2, transaction: 4 } },
          { push: { queue: 0, partition: 0, transaction: 3 } },
        ],
      },
      { op: 'pop', queue: 0, partition: 1, group: 0, batch: 3, maxPartitions: 2, subscription: 'all' },
      {
        op: 'pop',
        queue: 1,
        partition: 1,
        group: 1,
        batch: 2,
        maxPartitions: 2,
        subscription: { secondsAgo: 13 },
      },
      { op: 'pop', queue: 1, partition: null, group: 2, batch: 1, maxPartitions: 1, subscription: 'all' },
      {
        op: 'pop',
        queue: 0,
        partition: null,
        group: 1,
        batch: 1,
        maxPartitions: 2,
        subscription: { secondsAgo: 10 },
      },
      { op: 'pop', queue: 0, partition: 1, group: 2, batch: 1, maxPartitions: 1, subscription: 'all' },
      { op: 'advance', ms: 1000 },
      { op: 'pop', queue: 1, partition: null, group: 1, batch: 1, maxPartitions: 1, subscription: 'all' },
      { op: 'pop', queue: 0, partition: 0, group: 1, batch: 2, maxPartitions: 1, subscription: 'new' },
      {
        op: 'pop',
        queue: 0,
        partition: null,
        group: 1,
        batch: 3,
        maxPartitions: 2,
        subscription: { secondsAgo: 9 },
      },
      { op: 'deleteGroup', queue: 0, group: 1 },
      { op: 'release', pop: 343 },
      { op: 'pop', queue: 0, partition: 0, group: 1, batch: 2, maxPartitions: 1, subscription: 'new' },
    ],
  },
  {
    name: 'a deleted queue forgets the retry schedule an ack gave a group that was never registered',
    found: 'seed 53 of DIFF_SEEDS=100',
    operations: [
      {
        op: 'push',
        items: [
          { queue: 0, partition: 2, transaction: 3 },
          { queue: 1, partition: 1, transaction: 0 },
          { queue: 1, partition: 1, transaction: 1 },
          { queue: 0, partition: 1, transaction: 2 },
        ],
      },
      {
        op: 'configure',
        queue: 1,
        options: {
          retryDelay: 500,
          delayedProcessing: 0,
          ttl: 2,
          retentionEnabled: false,
          dlqAfterMaxRetries: true,
          maxWaitTimeSeconds: 5,
        },
        named: false,
      },
      {
        op: 'pop',
        queue: 1,
        partition: null,
        group: 0,
        batch: 2,
        maxPartitions: 2,
        subscription: { secondsAgo: 4 },
      },
      {
        op: 'ack',
        acks: [
          { popped: 187, status: 'completed', lease: 'own', group: 'own' },
          { popped: 433, status: 'failed', lease: 'none', group: 1 },
          { popped: 368, status: 'completed', lease: 'own', group: 'own' },
        ],
      },
      { op: 'deleteQueue', queue: 1 },
      { op: 'pop', queue: 1, partition: null, group: 1, batch: 3, maxPartitions: 3, subscription: 'all' },
    ],
  },
  {
    name: 'a deleted queue forgets the attempts an ack counted for a group that was never registered',
    found: 'seed 69 of DIFF_SEEDS=100',
    operations: [
      {
        op: 'push',
        items: [
          { queue: 0, partition: 0, transaction: 0 },
          { queue: 0, partition: 2, transaction: 5 },
        ],
      },
      { op: 'push', items: [{ queue: 0, partition: 0, transaction: 3 }] },
      { op: 'pop', queue: 0, partition: null, group: 0, batch: 4, maxPartitions: 3, subscription: 'all' },
      { op: 'pop', queue: 0, partition: null, group: 2, batch: 1, maxPartitions: 2, subscription: 'all' },
      { op: 'deleteQueue', queue: 0 },
      {
        op: 'push',
        items: [
          { queue: 0, partition: 0, transaction: 3 },
          { queue: 0, partition: 2, transaction: 4 },
        ],
      },
      {
        op: 'ack',
        acks: [
          { popped: 301, status: 'failed', lease: 'own', group: 'own' },
          { popped: 617, status: 'failed', lease: 'none', group: 'own' },
        ],
      },
      { op: 'deleteQueue', queue: 0 },
      {
        op: 'push',
        items: [
          { queue: 0, partition: 0, transaction: 1 },
          { queue: 1, partition: 0, transaction: 5 },
          { queue: 1, partition: 2, transaction: 5 },
          { queue: 0, partition: 2, transaction: 1 },
        ],
      },
      { op: 'pop', queue: 0, partition: null, group: 0, batch: 2, maxPartitions: 3, subscription: 'all' },
    ],
  },
  {
    name: 'a message dead-lettered long after its creation is deleted at once by completed retention',
    found: 'seed 215 of a sweep (seeds 125-324)',
    operations: [
      {
        op: 'configure',
        queue: 0,
        options: {
          retryLimit: 3,
          delayedProcessing: 1,
          maxSize: 10,
          completedRetentionSeconds: 1,
          retentionEnabled: true,
          maxWaitTimeSeconds: 5,
        },
        named: false,
      },
      {
        op: 'push',
        items: [
          { queue: 0, partition: 0, transaction: 4 },
          { queue: 0, partition: 1, transaction: 4 },
        ],
      },
      {
        op: 'configure',
        queue: 0,
        options: {
          retryDelay: 0,
          delayedProcessing: 0,
          windowBuffer: 0,
          maxSize: 10,
          retentionSeconds: 0,
          deadLetterQueue: true,
          encryptionEnabled: false,
        },
        named: false,
      },
      { op: 'advance', ms: 5000 },
      { op: 'push', items: [{ queue: 0, partition: 0, transaction: 2 }] },
      { op: 'pop', queue: 0, partition: null, group: 0, batch: 4, maxPartitions: 3, subscription: 'all' },
      { op: 'retention' },
      {
        op: 'ack',
        acks: [
          { popped: 762, status: 'dlq', lease: 'own', group: 'own' },
          { popped: 195, status: 'success', lease: 'own', group: 2 },
        ],
      },
      { op: 'retention' },
    ],
  },
  {
    name: 'a push refused by two full queues names the first queue of the request',
    found: 'seed 253 of a sweep (seeds 125-324)',
    operations: [
      {
        op: 'configure',
        queue: 0,
        options: {
          leaseTime: 5,
          retryLimit: 2,
          delayedProcessing: 0,
          maxSize: 3,
          dlqAfterMaxRetries: false,
          priority: 2,
          encryptionEnabled: false,
          maxWaitTimeSeconds: 5,
        },
        named: false,
      },
      {
        op: 'push',
        items: [
          { queue: 1, partition: 0, transaction: 0 },
          { queue: 0, partition: 0, transaction: 1 },
          { queue: 0, partition: 0, transaction: 1 },
          { queue: 0, partition: 2, transaction: 5 },
        ],
      },
      {
        op: 'configure',
        queue: 1,
        options: {
          leaseTime: 30,
          retryDelay: 500,
          windowBuffer: 0,
          maxSize: 3,
          retentionSeconds: 2,
          completedRetentionSeconds: 0,
          deadLetterQueue: true,
          encryptionEnabled: false,
        },
        named: false,
      },
      {
        op: 'push',
        items: [
          { queue: 0, partition: 1, transaction: 3 },
          { queue: 1, partition: 0, transaction: 2 },
          { queue: 0, partition: 1, transaction: 0 },
        ],
      },
      {
        op: 'push',
        items: [
          { queue: 1, partition: 2, transaction: 2 },
          { queue: 0, partition: 0, transaction: 3 },
          { queue: 1, partition: 1, transaction: 2 },
          { queue: 0, partition: 1, transaction: 0 },
        ],
      },
    ],
  },
  {
    name: 'an ack that moves a position frees what a lease held from deletion by age at once',
    found: 'seed 292 of a sweep (seeds 41-340)',
    operations: [
      {
        op: 'push',
        items: [
          { queue: 0, partition: 0, transaction: 2 },
          { queue: 0, partition: 0, transaction: 4 },
          { queue: 0, partition: 2, transaction: 1 },
          { queue: 0, partition: 1, transaction: 0 },
        ],
      },
      {
        op: 'pop',
        queue: 0,
        partition: 0,
        group: 1,
        batch: 1,
        maxPartitions: 1,
        subscription: { secondsAgo: 17 },
      },
      {
        op: 'configure',
        queue: 0,
        options: {
          leaseTime: 2,
          delayedProcessing: 0,
          windowBuffer: 0,
          maxSize: 10,
          ttl: 2,
          completedRetentionSeconds: 0,
          deadLetterQueue: true,
        },
        named: false,
      },
      { op: 'pop', queue: 0, partition: null, group: 1, batch: 2, maxPartitions: 1, subscription: 'all' },
      { op: 'advance', ms: 2000 },
      {
        op: 'push',
        items: [
          { queue: 0, partition: 1, transaction: 2 },
          { queue: 0, partition: 0, transaction: 3 },
          { queue: 1, partition: 1, transaction: 5 },
        ],
      },
      {
        op: 'push',
        items: [
          { queue: 0, partition: 1, transaction: 4 },
          { queue: 0, partition: 2, transaction: 3 },
        ],
      },
      { op: 'pop', queue: 0, partition: null, group: 0, batch: 3, maxPartitions: 3, subscription: 'all' },
      { op: 'pop', queue: 1, partition: 1, group: 1, batch: 4, maxPartitions: 3, subscription: 'all' },
      { op: 'retention' },
      { op: 'pop', queue: 0, partition: 2, group: 1, batch: 4, maxPartitions: 1, subscription: 'new' },
      { op: 'ack', acks: [{ popped: 435, status: 'success', lease: 'none', group: 'own' }] },
      { op: 'retention' },
    ],
  },
  {
    name: 'a queue deleted and created again numbers its dead letters anew, as a Redis stream does',
    found: 'seed 297 of a sweep (seeds 41-340)',
    operations: [
      {
        op: 'push',
        items: [
          { queue: 0, partition: 1, transaction: 3 },
          { queue: 0, partition: 0, transaction: 1 },
          { queue: 0, partition: 2, transaction: 2 },
          { queue: 0, partition: 1, transaction: 0 },
        ],
      },
      { op: 'pop', queue: 0, partition: null, group: 0, batch: 3, maxPartitions: 3, subscription: 'all' },
      {
        op: 'configure',
        queue: 0,
        options: {
          retentionSeconds: 0,
          completedRetentionSeconds: 3,
          retentionEnabled: true,
          leaseTime: 1,
          retryLimit: 0,
        },
        named: false,
      },
      {
        op: 'ack',
        acks: [
          { popped: 49, status: 'retry', lease: 'own', group: 'own' },
          { popped: 546, status: 'dlq', lease: 'unknown', group: 'own' },
        ],
      },
      { op: 'deleteQueue', queue: 0 },
      {
        op: 'push',
        items: [
          { queue: 0, partition: 0, transaction: 2 },
          { queue: 0, partition: 0, transaction: 5 },
          { queue: 0, partition: 1, transaction: 5 },
        ],
      },
      { op: 'pop', queue: 0, partition: null, group: 1, batch: 3, maxPartitions: 2, subscription: 'new' },
      {
        op: 'ack',
        acks: [
          { popped: 267, status: 'dlq', lease: 'own', group: 'own' },
          { popped: 256, status: 'completed', lease: 'own', group: 'own' },
        ],
      },
    ],
  },
  {
    name: 'a message deleted or requeued moves each group over what it had resolved right behind it',
    found: 'seed 290 of a sweep (seeds 41-340)',
    operations: [
      {
        op: 'push',
        items: [
          { queue: 0, partition: 1, transaction: 4 },
          { queue: 0, partition: 0, transaction: 4 },
          { queue: 0, partition: 2, transaction: 4 },
        ],
      },
      {
        op: 'push',
        items: [
          { queue: 1, partition: 2, transaction: 2 },
          { queue: 0, partition: 0, transaction: 2 },
          { queue: 0, partition: 0, transaction: 0 },
          { queue: 0, partition: 1, transaction: 3 },
        ],
      },
      {
        op: 'transaction',
        parts: [
          { push: { queue: 0, partition: 0, transaction: 5 } },
          { push: { queue: 0, partition: 2, transaction: 0 } },
        ],
      },
      {
        op: 'push',
        items: [
          { queue: 1, partition: 0, transaction: 1 },
          { queue: 1, partition: 1, transaction: 5 },
          { queue: 1, partition: 2, transaction: 2 },
        ],
      },
      { op: 'pop', queue: 0, partition: null, group: 1, batch: 3, maxPartitions: 2, subscription: 'new' },
      { op: 'pop', queue: 0, partition: null, group: 0, batch: 4, maxPartitions: 1, subscription: 'all' },
      {
        op: 'ack',
        acks: [
          { popped: 910, status: 'success', lease: 'own', group: 'own' },
          { popped: 790, status: 'failed', lease: 'own', group: 0 },
        ],
      },
      { op: 'pop', queue: 0, partition: null, group: 0, batch: 4, maxPartitions: 3, subscription: 'all' },
      { op: 'pop', queue: 1, partition: null, group: 2, batch: 1, maxPartitions: 3, subscription: 'new' },
      { op: 'pop', queue: 0, partition: null, group: 2, batch: 4, maxPartitions: 3, subscription: 'all' },
      { op: 'pop', queue: 1, partition: null, group: 2, batch: 1, maxPartitions: 2, subscription: 'all' },
      { op: 'pop', queue: 0, partition: null, group: 2, batch: 1, maxPartitions: 2, subscription: 'all' },
      {
        op: 'push',
        items: [
          { queue: 0, partition: 0, transaction: 0 },
          { queue: 0, partition: 2, transaction: 5 },
          { queue: 0, partition: 1, transaction: 2 },
        ],
      },
      { op: 'advance', ms: 2000 },
      {
        op: 'ack',
        acks: [
          { popped: 820, status: 'completed', lease: 'own', group: 'own' },
          { popped: 699, status: 'completed', lease: 'own', group: 'own' },
          { popped: 135, status: 'success', lease: 'unknown', group: 'own' },
        ],
      },
      { op: 'push', items: [{ queue: 0, partition: 2, transaction: 3 }] },
      {
        op: 'ack',
        acks: [
          { popped: 524, status: 'retry', lease: 'own', group: 'own' },
          { popped: 189, status: 'dlq', lease: 'own', group: 'own' },
          { popped: 523, status: 'retry', lease: 'own', group: 'own' },
        ],
      },
      {
        op: 'ack',
        acks: [
          { popped: 493, status: 'completed', lease: 'unknown', group: 'own' },
          { popped: 289, status: 'dlq', lease: 'none', group: 'own' },
          { popped: 859, status: 'success', lease: 'own', group: 'own' },
        ],
      },
      {
        op: 'ack',
        acks: [
          { popped: 828, status: 'retry', lease: 'own', group: 'own' },
          { popped: 786, status: 'dlq', lease: 'own', group: 'own' },
        ],
      },
      {
        op: 'pop',
        queue: 0,
        partition: null,
        group: 0,
        batch: 3,
        maxPartitions: 2,
        subscription: { secondsAgo: 10 },
      },
      { op: 'ack', acks: [{ popped: 365, status: 'success', lease: 'none', group: 'own' }] },
      { op: 'requeue', queue: 0, picks: [583, 405, 101] },
      { op: 'ack', acks: [{ popped: 906, status: 'failed', lease: 'own', group: 'own' }] },
      {
        op: 'ack',
        acks: [
          { popped: 704, status: 'completed', lease: 'own', group: 2 },
          { popped: 694, status: 'completed', lease: 'own', group: 'own' },
        ],
      },
      {
        op: 'configure',
        queue: 0,
        options: {
          delayedProcessing: 0,
          maxSize: 0,
          retentionSeconds: 2,
          retentionEnabled: true,
          dlqAfterMaxRetries: true,
          encryptionEnabled: false,
          maxWaitTimeSeconds: 0,
        },
        named: true,
      },
      { op: 'retention' },
    ],
  },
  {
    name: 'a requeued dead letter is deleted by age like a pushed message',
    found: 'seed 516 of a sweep (seeds 341-640)',
    operations: [
      {
        op: 'configure',
        queue: 0,
        options: {
          delayedProcessing: 0,
          maxSize: 10,
          ttl: 10,
          retentionSeconds: 2,
          retentionEnabled: true,
          priority: 3,
          encryptionEnabled: false,
          maxWaitTimeSeconds: 5,
          leaseTime: 2,
          retryLimit: 0,
          completedRetentionSeconds: 3,
        },
        named: false,
      },
      {
        op: 'push',
        items: [
          { queue: 1, partition: 0, transaction: 2 },
          { queue: 0, partition: 0, transaction: 5 },
          { queue: 1, partition: 1, transaction: 1 },
        ],
      },
      {
        op: 'pop',
        queue: 0,
        partition: 0,
        group: 0,
        batch: 1,
        maxPartitions: 3,
        subscription: { secondsAgo: 16 },
      },
      { op: 'advance', ms: 2000 },
      { op: 'sweepLeases' },
      { op: 'retention' },
      { op: 'requeue', queue: 0, picks: [656] },
      { op: 'advance', ms: 2000 },
      { op: 'retention' },
    ],
  },
  {
    name: 'deleting a group lets retention delete what only that group had not consumed',
    found: 'seeds 645, 678, 693, 726, 879 of a sweep (seeds 641-940)',
    operations: [
      {
        op: 'push',
        items: [
          { queue: 0, partition: 2, transaction: 2 },
          { queue: 0, partition: 2, transaction: 5 },
        ],
      },
      { op: 'pop', queue: 0, partition: null, group: 0, batch: 1, maxPartitions: 1, subscription: 'all' },
      { op: 'pop', queue: 0, partition: 1, group: 1, batch: 2, maxPartitions: 1, subscription: 'all' },
      { op: 'advance', ms: 1000 },
      { op: 'ack', acks: [{ popped: 699, status: 'success', lease: 'none', group: 'own' }] },
      {
        op: 'configure',
        queue: 0,
        options: {
          retryLimit: 0,
          retentionEnabled: true,
          encryptionEnabled: false,
          leaseTime: 1,
          completedRetentionSeconds: 1,
        },
        named: true,
      },
      { op: 'retention' },
      { op: 'deleteGroup', queue: 0, group: 1 },
      { op: 'retention' },
    ],
  },
  {
    name: "a group's oldest pending message is read from the partitions with work for it, not from one whose next message it resolved ahead",
    found: 'seed 923 of a sweep (seeds 641-940)',
    operations: [
      {
        op: 'transaction',
        parts: [
          { push: { queue: 0, partition: 2, transaction: 4 } },
          { ack: { popped: 745, status: 'completed', lease: 'own', group: 'own' } },
          { ack: { popped: 973, status: 'failed', lease: 'own', group: 'own' } },
        ],
      },
      {
        op: 'configure',
        queue: 0,
        options: { maxSize: 3, ttl: 2, priority: 1, encryptionEnabled: false },
        named: false,
      },
      { op: 'push', items: [{ queue: 0, partition: 2, transaction: 1 }] },
      { op: 'push', items: [{ queue: 1, partition: 2, transaction: 4 }] },
      { op: 'pop', queue: 0, partition: null, group: 1, batch: 4, maxPartitions: 1, subscription: 'all' },
      {
        op: 'ack',
        acks: [
          { popped: 450, status: 'completed', lease: 'own', group: 'own' },
          { popped: 309, status: 'failed', lease: 'own', group: 'own' },
          { popped: 112, status: 'failed', lease: 'own', group: 'own' },
        ],
      },
      {
        op: 'pop',
        queue: 0,
        partition: null,
        group: 1,
        batch: 4,
        maxPartitions: 1,
        subscription: { secondsAgo: 3 },
      },
      {
        op: 'ack',
        acks: [
          { popped: 874, status: 'failed', lease: 'own', group: 2 },
          { popped: 686, status: 'success', lease: 'own', group: 'own' },
        ],
      },
      {
        op: 'pop',
        queue: 1,
        partition: null,
        group: 1,
        batch: 1,
        maxPartitions: 3,
        subscription: { secondsAgo: 4 },
      },
      {
        op: 'push',
        items: [
          { queue: 1, partition: 1, transaction: 3 },
          { queue: 0, partition: 1, transaction: 3 },
        ],
      },
      { op: 'advance', ms: 5000 },
      { op: 'retention' },
      { op: 'push', items: [{ queue: 1, partition: 1, transaction: 0 }] },
      {
        op: 'push',
        items: [
          { queue: 0, partition: 0, transaction: 1 },
          { queue: 0, partition: 1, transaction: 4 },
          { queue: 0, partition: 2, transaction: 0 },
          { queue: 0, partition: 1, transaction: 4 },
        ],
      },
      {
        op: 'ack',
        acks: [
          { popped: 579, status: 'completed', lease: 'own', group: 'own' },
          { popped: 455, status: 'completed', lease: 'own', group: 'own' },
          { popped: 871, status: 'dlq', lease: 'own', group: 'own' },
        ],
      },
      { op: 'pop', queue: 1, partition: 1, group: 0, batch: 4, maxPartitions: 3, subscription: 'all' },
      { op: 'advance', ms: 1000 },
      {
        op: 'push',
        items: [
          { queue: 1, partition: 2, transaction: 5 },
          { queue: 1, partition: 2, transaction: 0 },
          { queue: 0, partition: 0, transaction: 5 },
        ],
      },
      {
        op: 'push',
        items: [
          { queue: 0, partition: 1, transaction: 3 },
          { queue: 1, partition: 0, transaction: 2 },
          { queue: 0, partition: 2, transaction: 2 },
        ],
      },
      { op: 'advance', ms: 1000 },
      { op: 'pop', queue: 0, partition: 0, group: 1, batch: 2, maxPartitions: 3, subscription: 'new' },
      { op: 'pop', queue: 1, partition: 1, group: 1, batch: 2, maxPartitions: 2, subscription: 'all' },
      {
        op: 'push',
        items: [
          { queue: 0, partition: 2, transaction: 4 },
          { queue: 0, partition: 2, transaction: 0 },
          { queue: 0, partition: 0, transaction: 1 },
        ],
      },
      {
        op: 'push',
        items: [
          { queue: 1, partition: 0, transaction: 5 },
          { queue: 0, partition: 1, transaction: 3 },
        ],
      },
      {
        op: 'pop',
        queue: 1,
        partition: null,
        group: 1,
        batch: 4,
        maxPartitions: 3,
        subscription: { secondsAgo: 0 },
      },
      {
        op: 'transaction',
        parts: [
          { ack: { popped: 744, status: 'success', lease: 'none', group: 1 } },
          { ack: { popped: 754, status: 'failed', lease: 'own', group: 'own' } },
          { ack: { popped: 873, status: 'failed', lease: 'own', group: 'own' } },
        ],
      },
      { op: 'retention' },
      { op: 'pop', queue: 0, partition: null, group: 1, batch: 3, maxPartitions: 2, subscription: 'all' },
      { op: 'stats' },
    ],
  },
];
