/*
 * The one error handler both services install (issue #23, item 5): what a client reads and what
 * is logged, for each kind of failure, in each wire spelling. The services' own wire tests
 * (services/broker/test/error-wire.test.ts, services/hub/test) pin their hooks.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type ErrorBodyFormat, HeraldError } from '@herald/errors';
import { logSink } from '@herald/testkit';
import Fastify from 'fastify';
import { installErrorHandler, type Refusal } from '../src/error-handler.js';

const INTERNAL = '10.0.0.7:6379';

/** A failure the test's `map` recognises, as a service recognises its storage outage. */
class OutageError extends Error {
  override readonly name = 'OutageError';
}

const outage = new HeraldError('HERALD_HUB_BACKEND_UNAVAILABLE', 503, 'Backend unavailable; retry later', {
  expose: true,
});

interface Case {
  readonly what: string;
  readonly failure: () => Error;
  readonly status: number;
  /** What the client reads, whatever the spelling. */
  readonly message: string;
  /** The refusal the service's hook is given, or undefined when the handler logs a server fault. */
  readonly refusal?: Pick<Refusal, 'code' | 'mapped'>;
}

// biome-ignore format: a table, one case per line
const CASES: readonly Case[] = [
  { what: 'a typed 4xx', failure: () => new HeraldError('HERALD_BROKER_QUEUE_FULL', 429, "Queue 'q' is full"), status: 429, message: "Queue 'q' is full", refusal: { code: 'HERALD_BROKER_QUEUE_FULL', mapped: false } },
  { what: 'an exposed typed 5xx', failure: () => new HeraldError('HERALD_HUB_DRAINING', 503, 'Shutting down', { expose: true }), status: 503, message: 'Shutting down', refusal: { code: 'HERALD_HUB_DRAINING', mapped: false } },
  { what: 'a failure the service maps', failure: () => new OutageError(`no reply from ${INTERNAL}`), status: 503, message: 'Backend unavailable; retry later', refusal: { code: 'HERALD_HUB_BACKEND_UNAVAILABLE', mapped: true } },
  { what: "fastify's own 4xx", failure: () => Object.assign(new Error('Request body is too large'), { statusCode: 413, code: 'FST_ERR_CTP_BODY_TOO_LARGE' }), status: 413, message: 'Request body is too large', refusal: { code: 'FST_ERR_CTP_BODY_TOO_LARGE', mapped: false } },
  { what: 'a typed 5xx not exposed', failure: () => new HeraldError('HERALD_CONFIG_INVALID', 500, `REDIS_URL: ${INTERNAL}`), status: 500, message: 'Internal Server Error' },
  { what: 'a bug', failure: () => new TypeError(`Cannot read properties of undefined (reading '${INTERNAL}')`), status: 500, message: 'Internal Server Error' },
];

async function answer(format: ErrorBodyFormat, failure: () => Error) {
  const { stream, lines } = logSink();
  const app = Fastify({ logger: { level: 'error', stream } });
  const refusals: Refusal[] = [];
  const answered: unknown[] = [];
  installErrorHandler(app, {
    format,
    map: (error) => (error instanceof OutageError ? outage : error),
    onAnswer: (error, reply) => {
      answered.push(error);
      reply.header('x-answered', 'yes');
    },
    logRefusal: (_request, refusal) => refusals.push(refusal),
  });
  app.get('/fail', async () => {
    throw failure();
  });
  const reply = await app.inject({ method: 'GET', url: '/fail' });
  await app.close();
  return { reply, refusals, answered, logged: lines.join('') };
}

for (const format of ['json', 'text'] as const) {
  for (const { what, failure, status, message, refusal } of CASES) {
    test(`${format}: ${what} answers ${status} "${message}"`, async () => {
      const { reply, refusals, answered, logged } = await answer(format, failure);
      assert.equal(reply.statusCode, status);
      if (format === 'json') {
        assert.match(String(reply.headers['content-type']), /^application\/json/);
        assert.deepEqual(reply.json(), { error: message });
      } else {
        assert.equal(reply.headers['content-type'], 'text/plain; charset=utf-8');
        assert.equal(reply.body, message);
      }
      assert.ok(!reply.body.includes(INTERNAL), `internal text in ${reply.body}`);
      assert.equal(reply.headers['x-answered'], 'yes', 'onAnswer runs before every answer');
      assert.equal(answered.length, 1);
      if (refusal) {
        assert.deepEqual(
          refusals.map(({ status, code, message, mapped }) => ({ status, code, message, mapped })),
          [{ status, message, ...refusal }],
        );
        assert.doesNotMatch(logged, /request failed/, 'a refusal is not a server fault');
      } else {
        assert.deepEqual(refusals, [], 'a server fault is not a refusal');
        assert.match(logged, /request failed/);
      }
    });
  }
}

test("a server fault's log line names the error's type (not pino's \"Object\") with its message and stack", async () => {
  const { logged } = await answer(
    'json',
    () => new TypeError(`Cannot read properties of undefined (reading '${INTERNAL}')`),
  );
  const line = JSON.parse(logged.trim()) as {
    msg: string;
    error?: { type: string; message: string; stack: string };
  };
  assert.equal(line.msg, 'request failed');
  assert.equal(line.error?.type, 'TypeError');
  assert.match(line.error?.message ?? '', /Cannot read properties of undefined/);
  assert.match(line.error?.stack ?? '', /\n\s+at /);
});

test('a mapped refusal carries what was thrown, for the log', async () => {
  const { refusals } = await answer('json', () => new OutageError(`no reply from ${INTERNAL}`));
  assert.equal(refusals[0]?.thrown.name, 'OutageError');
  assert.match(refusals[0]?.thrown.message ?? '', new RegExp(INTERNAL));
});

test('a server fault is logged by name, message and stack, never the command an ioredis error carries', async () => {
  const { reply, logged } = await answer('text', () =>
    Object.assign(new Error('ERR Invalid stream ID specified as stream command argument'), {
      name: 'ReplyError',
      command: { name: 'eval', args: ['--[[ the whole script ]]', '1', 'key', 'secret-payload'] },
    }),
  );
  assert.equal(reply.statusCode, 500);
  assert.match(logged, /Invalid stream ID/);
  assert.doesNotMatch(logged, /the whole script/);
  assert.doesNotMatch(logged, /secret-payload/);
});
