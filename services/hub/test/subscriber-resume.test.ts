/*
 * A resume across partitions (docs/hub.md, "Last-Event-ID across partitions") replays from
 * RESUME_WINDOW before the Last-Event-ID U and never sends U itself again. U can also come back
 * live: a partition the node joins for this subscriber is read from its join point, a lower bound
 * of Redis time, so an update published shortly before the subscribe (U among them) may reach
 * the subscriber through the join's fill rather than the replay. CI saw U sent twice that way
 * (partitions.test.ts, standalone). The subscriber drops U on either path.
 */
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { test } from 'node:test';
import { KeyClock } from '@herald/redis';
import { Subscriber } from '../src/subscriber.js';
import type { StoredUpdate } from '../src/update.js';

const TOPIC = 'https://example.com/resume';

/** A response that has not handed its headers to a socket yet: the subscriber writes through it. */
function recordingResponse(): { response: ServerResponse; written: string[] } {
  const written: string[] = [];
  const response = Object.assign(new EventEmitter(), {
    headersSent: false,
    socket: null,
    write(chunk: Buffer | string) {
      written.push(String(chunk));
      return true;
    },
  });
  return { response: response as unknown as ServerResponse, written };
}

function subscriberOn(response: ServerResponse): Subscriber {
  return new Subscriber({
    iri: 'urn:uuid:resume',
    matchers: [{ matchType: 'Exact', match: TOPIC, matches: (topic: string) => topic === TOPIC }],
    principal: undefined,
    response,
    requestId: 'resume',
    openedAt: 0,
    shared: {
      limits: { maxQueueBytes: 1 << 20, maxQueueEvents: 1000, dispatchTimeout: 1000 },
      clock: new KeyClock(0),
      canReceive: () => false,
      onClose: () => undefined,
      onResponseClosed: () => undefined,
    },
  });
}

function update(id: string, position: string, partition: number): StoredUpdate {
  return { id, topics: [TOPIC], data: id, private: false, position, partition };
}

test('the Last-Event-ID is not sent again when it arrives live through a joined partition', () => {
  const { response, written } = recordingResponse();
  const subscriber = subscriberOn(response);
  // Partition 1 was joined for this subscriber at 5000 ms (a lower bound of Redis time): the
  // replay covers it up to there, the join's fill delivers what follows.
  subscriber.beginReplay(['9000-0', '4999-18446744073709551615']);
  // U was published at 5200 ms in partition 1; the resume starts at 4200 ms in every partition.
  subscriber.skipThrough(['4200-0', '4200-0'], 'U');
  subscriber.deliver(update('U', '5200-0', 1));
  subscriber.deliver(update('after', '5300-0', 1));
  subscriber.endReplay();
  const ids = written.flatMap((chunk) => [...chunk.matchAll(/^id: (.*)$/gm)].map((match) => match[1]));
  assert.deepEqual(ids, ['after']);
});

test('the Last-Event-ID is not sent again by the replay either (control)', () => {
  const { response, written } = recordingResponse();
  const subscriber = subscriberOn(response);
  subscriber.beginReplay(['9000-0', '9000-0']);
  subscriber.skipThrough(['4200-0', '4200-0'], 'U');
  assert.equal(subscriber.replay(update('before', '4500-0', 0)), true);
  assert.equal(subscriber.replay(update('U', '5200-0', 1)), false);
  subscriber.endReplay();
  const ids = written.flatMap((chunk) => [...chunk.matchAll(/^id: (.*)$/gm)].map((match) => match[1]));
  assert.deepEqual(ids, ['before']);
});
