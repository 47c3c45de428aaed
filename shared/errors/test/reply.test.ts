import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { HeraldError, sendError } from '../src/index.js';

const INTERNAL = 'redis at 10.0.0.7:6379: LOADING Redis is loading the dataset in memory';

describe('sendError on a fastify reply', () => {
  let app: FastifyInstance;
  before(async () => {
    app = Fastify({ logger: false });
    const failures: Record<string, unknown> = {
      full: new HeraldError('HERALD_BROKER_QUEUE_FULL', 429, "Queue 'q' is full"),
      limited: new HeraldError('HERALD_BROKER_LIMIT', 429, 'over the limit', { retryAfterMs: 1200 }),
      soon: new HeraldError('HERALD_BROKER_LIMIT', 429, 'over the limit', { retryAfterMs: 3 }),
      unavailable: new HeraldError('HERALD_REDIS_UNAVAILABLE', 503, INTERNAL),
      raw: new Error(INTERNAL),
    };
    app.get('/json/:failure', async (request, reply) =>
      sendError(reply, failures[(request.params as { failure: string }).failure]),
    );
    app.get('/text/:failure', async (request, reply) =>
      sendError(reply, failures[(request.params as { failure: string }).failure], 'text'),
    );
    await app.ready();
  });
  after(() => app.close());

  // [path, status, body]
  // biome-ignore format: a table, one case per line
  const cases: readonly (readonly [string, number, string])[] = [
    ['/json/full', 429, '{"error":"Queue \'q\' is full"}'],
    ['/json/unavailable', 503, '{"error":"Service Unavailable"}'],
    ['/json/raw', 500, '{"error":"Internal Server Error"}'],
    ['/text/full', 429, "Queue 'q' is full"],
    ['/text/unavailable', 503, 'Service Unavailable'],
    ['/text/raw', 500, 'Internal Server Error'],
  ];
  for (const [url, status, body] of cases) {
    it(`${url} → ${status} ${body}`, async () => {
      const reply = await app.inject({ method: 'GET', url });
      assert.equal(reply.statusCode, status);
      assert.equal(reply.body, body);
      assert.ok(!reply.body.includes('10.0.0.7'), 'internal text reached the client');
    });
  }

  it('an error that says when to retry sets Retry-After in whole seconds, rounded up, at least 1', async () => {
    const limited = await app.inject({ method: 'GET', url: '/json/limited' });
    assert.equal(limited.statusCode, 429);
    assert.equal(limited.headers['retry-after'], '2');
    assert.equal((await app.inject({ method: 'GET', url: '/text/soon' })).headers['retry-after'], '1');
    assert.equal((await app.inject({ method: 'GET', url: '/json/full' })).headers['retry-after'], undefined);
  });

  it('plain text is labelled as such', async () => {
    const reply = await app.inject({ method: 'GET', url: '/text/full' });
    assert.equal(reply.headers['content-type'], 'text/plain; charset=utf-8');
  });
});
