/* ackRuns (redis/transactions.ts): ack-1.lua's arguments, one run per stretch of acks that share all but their transactionId. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ackRuns } from '../src/redis/transactions.js';
import type { AckInput } from '../src/storage.js';

const ack = (transactionId: string, changes: Partial<AckInput> = {}): AckInput => ({
  transactionId,
  partitionId: 'pid',
  status: 'completed',
  group: '__QUEUE_MODE__',
  leaseId: 'lease-1',
  error: null,
  ...changes,
});

test('ackRuns: one run for a lease, a new one at any difference, in the order given; names URI-encoded', () => {
  assert.deepEqual(ackRuns([]), []);
  assert.deepEqual(
    ackRuns([
      { ack: ack('t1'), partition: 'p 1' },
      { ack: ack('t2'), partition: 'p 1' },
      { ack: ack('t3', { status: 'failed', error: 'boom' }), partition: 'p 1' },
      { ack: ack('t4'), partition: 'p 1' },
      { ack: ack('t5'), partition: 'p2' },
      { ack: ack('t6', { group: 'g/1', leaseId: null }), partition: 'p2' },
    ]),
    [
      ['p%201', '__QUEUE_MODE__', 'completed', 'lease-1', '', '2', 't1', 't2'],
      ['p%201', '__QUEUE_MODE__', 'failed', 'lease-1', 'boom', '1', 't3'],
      ['p%201', '__QUEUE_MODE__', 'completed', 'lease-1', '', '1', 't4'],
      ['p2', '__QUEUE_MODE__', 'completed', 'lease-1', '', '1', 't5'],
      ['p2', 'g%2F1', 'completed', '', '', '1', 't6'],
    ].flat(),
  );
});
