/*
 * Queue and partition names up to the documented limit (LIMITS.maxNameLength, 512) are usable in
 * the path, however they are percent-encoded (issue #8: fastify's default maxParamLength of 100
 * answered 414 to a pop by path of a 101-character name). Over the limit: a clear 4xx.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { stopTestRedis } from '@herald/testkit';
import { LIMITS } from '../src/validation.js';
import { BACKENDS, brokerSuite } from './helpers.js';

after(() => stopTestRedis());

/** A unique name of exactly `length` UTF-16 units, made of `unit` (one or two units each). */
function nameOf(length: number, unit: string, tag: string): string {
  const head = `${tag}.${process.pid}.`;
  return (
    head + unit.repeat(Math.floor((length - head.length) / unit.length)).padEnd(length - head.length, 'x')
  );
}

for (const backend of BACKENDS) {
  describe(`names up to ${LIMITS.maxNameLength} characters by path (${backend})`, () => {
    const suite = brokerSuite(backend);

    // [length, unit]: ASCII, then the longest percent-encodings (a 3-byte BMP character is 9
    // characters a unit; an astral character 12 characters for its 2 units).
    // biome-ignore format: a table, one case per line
    const cases: readonly (readonly [number, string])[] = [
      [101, 'q'],
      [LIMITS.maxNameLength, 'q'],
      [LIMITS.maxNameLength, '€'],
      [LIMITS.maxNameLength, '😀'],
    ];
    for (const [length, unit] of cases) {
      test(`${length} × ${unit}: push, then pop by queue path and by partition path`, async () => {
        const queue = nameOf(length, unit, `q${length}`);
        const partition = nameOf(length, unit, `p${length}`);
        assert.equal(queue.length, length);
        assert.equal(partition.length, length);
        const pushed = await suite.api.push([
          { queue, payload: { n: 1 } },
          { queue, partition, payload: { n: 2 } },
        ]);
        assert.equal(pushed.status, 201, JSON.stringify(pushed.body));
        const byPartition = await suite.api.popPartition(queue, partition);
        assert.equal(byPartition.status, 200, JSON.stringify(byPartition.body));
        assert.deepEqual(
          byPartition.body.messages.map((message: { data: unknown }) => message.data),
          [{ n: 2 }],
        );
        const byQueue = await suite.api.pop(queue);
        assert.equal(byQueue.status, 200, JSON.stringify(byQueue.body));
        assert.deepEqual(
          byQueue.body.messages.map((message: { data: unknown }) => message.data),
          [{ n: 1 }],
        );
      });
    }

    test('a name over the limit is a 4xx with a JSON error, never a 5xx', async () => {
      for (const queue of [nameOf(513, 'q', 'long'), nameOf(513, '€', 'longe'), 'q'.repeat(5000)]) {
        const reply = await suite.api.pop(queue);
        assert.ok(reply.status >= 400 && reply.status < 500, `${queue.length}: ${reply.status}`);
        assert.equal(typeof (reply.body as { error?: unknown }).error, 'string');
      }
    });
  });
}
