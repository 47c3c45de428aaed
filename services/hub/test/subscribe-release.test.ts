/*
 * An open stream does not keep fastify's per-request objects (issue #14, docs/benchmarks.md: about
 * 1.15 KB of heap per idle subscriber): after the hijack, fastify's Request of a subscribe can be
 * collected while its stream stays open, and the stream's end still records one
 * http_request_duration_seconds sample, as fastify's onResponse hook did.
 */
import assert from 'node:assert/strict';
import diagnostics from 'node:diagnostics_channel';
import { after, test } from 'node:test';
import { setImmediate as turn } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { waitFor } from '@herald/testkit';
import { cleanupRedis, publishOk, SseStream, startTestHub, subscribeUrl } from './helpers.js';

after(cleanupRedis);

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const TOPIC = 'https://example.com/release';
const STREAMS = 5;

/** The count of the subscribe route's request-duration samples, from /metrics. */
async function subscribeSamples(origin: string): Promise<number> {
  const text = await (await fetch(`${origin}/metrics`)).text();
  const line = text
    .split('\n')
    .find(
      (candidate) =>
        candidate.startsWith('http_request_duration_seconds_count{') &&
        candidate.includes('route="/.well-known/mercure"') &&
        candidate.includes('method="GET"') &&
        candidate.includes('status_code="200"'),
    );
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}

test("an open stream lets fastify's Request go; its end records one duration sample", async () => {
  const hub = await startTestHub('memory', { MERCURE_ANONYMOUS: '1', MERCURE_HEARTBEAT: '0' });
  const requests: WeakRef<object>[] = [];
  const onStart = (message: unknown) => {
    const { request } = message as { request: { method: string; url: string } };
    if (request.method === 'GET' && request.url.startsWith('/.well-known/mercure?')) {
      requests.push(new WeakRef(request));
    }
  };
  const handlerStart = diagnostics.channel('tracing:fastify.request.handler:start');
  handlerStart.subscribe(onStart);
  const streams: SseStream[] = [];
  try {
    for (let index = 0; index < STREAMS; index++) {
      const stream = await SseStream.open(subscribeUrl(hub.url, [['match', TOPIC]]));
      assert.equal(stream.status, 200, stream.body);
      streams.push(stream);
    }
    handlerStart.unsubscribe(onStart);
    assert.equal(requests.length, STREAMS, 'every subscribe went through the handler');
    const before = await subscribeSamples(hub.origin);

    for (let round = 0; round < 5 && requests.some((reference) => reference.deref()); round++) {
      await turn();
      gc();
    }
    const kept = requests.filter((reference) => reference.deref() !== undefined).length;
    assert.equal(
      kept,
      0,
      `${kept} of ${STREAMS} fastify requests still reachable while their streams are open`,
    );

    // The streams are alive: an update reaches each.
    const id = await publishOk(hub.url, { topic: TOPIC, data: 'after gc' });
    for (const stream of streams) await stream.until(() => stream.events.some((event) => event.id === id));

    for (const stream of streams) stream.close();
    await waitFor(async () => (await subscribeSamples(hub.origin)) >= before + STREAMS);
    await turn();
    assert.equal(await subscribeSamples(hub.origin), before + STREAMS, 'one sample per stream, not two');
  } finally {
    handlerStart.unsubscribe(onStart);
    for (const stream of streams) stream.close();
    await hub.close();
  }
});

test("a stream's end logs 'request completed' with its request id and status, once", async () => {
  const hub = await startTestHub('memory', { MERCURE_ANONYMOUS: '1', MERCURE_HEARTBEAT: '0' });
  const completed: { reqId?: unknown; res?: { statusCode?: unknown } }[] = [];
  const log = hub.server.app.log;
  const info = log.info;
  // The hub logs through the server's logger, whose level here is 'silent': record the calls.
  log.info = ((details: unknown, message?: unknown) => {
    if (message === 'request completed') completed.push(details as (typeof completed)[number]);
  }) as typeof log.info;
  try {
    const stream = await SseStream.open(subscribeUrl(hub.url, [['match', TOPIC]]), {
      'x-request-id': 'stream-end-1',
    });
    assert.equal(stream.status, 200, stream.body);
    assert.equal(stream.headers['x-request-id'], 'stream-end-1');
    assert.equal(completed.length, 0, 'nothing is logged while the stream is open');
    stream.close();
    await waitFor(() => completed.length > 0);
    await turn();
    assert.equal(completed.length, 1, 'one line per stream');
    assert.equal(completed[0]?.reqId, 'stream-end-1');
    assert.equal(completed[0]?.res?.statusCode, 200);
  } finally {
    log.info = info;
    await hub.close();
  }
});
