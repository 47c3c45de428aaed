/*
 * An unexpected error is logged by name, message and stack only (issue #8, defect 7): ioredis
 * attaches the failed command to its errors, and for EVAL that is a whole Lua script plus
 * every argument (payloads included).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { logSink } from '@herald/testkit';
import Fastify from 'fastify';
import { registerConventions } from '../src/routes/common.js';

test('a 500 logs the error message, never the command (script, arguments) it carries', async () => {
  const { stream, lines } = logSink();
  const app = Fastify({ logger: { level: 'error', stream } });
  registerConventions(app);
  const script = `--[[ the whole script ]] ${'redis.call("XADD") '.repeat(200)}`;
  app.get('/boom', async () => {
    // The shape of an ioredis ReplyError for a failed EVAL.
    throw Object.assign(new Error('ERR Invalid stream ID specified as stream command argument'), {
      name: 'ReplyError',
      command: { name: 'eval', args: [script, '1', 'key', 'secret-payload'] },
    });
  });
  const reply = await app.inject({ method: 'GET', url: '/boom' });
  await app.close();
  assert.equal(reply.statusCode, 500);
  const logged = lines.join('');
  assert.match(logged, /Invalid stream ID/);
  assert.doesNotMatch(logged, /the whole script/);
  assert.doesNotMatch(logged, /secret-payload/);
});
