import assert from 'node:assert/strict';
import { test } from 'node:test';
import { redactUrl } from '../src/index.js';

test('tokens in the authorization query parameter never reach a log line', () => {
  const cases: [string, string][] = [
    [
      '/.well-known/mercure?topic=a&authorization=eyJ.x.y',
      '/.well-known/mercure?topic=a&authorization=[REDACTED]',
    ],
    [
      '/.well-known/mercure?Authorization=eyJ.x.y&topic=a',
      '/.well-known/mercure?Authorization=[REDACTED]&topic=a',
    ],
    ['/.well-known/mercure?topic=authorization', '/.well-known/mercure?topic=authorization'],
    [
      '/.well-known/mercure?topic=a&access_token=eyJ.x.y',
      '/.well-known/mercure?topic=a&access_token=[REDACTED]',
    ],
    ['/healthz', '/healthz'],
  ];
  for (const [url, expected] of cases) assert.equal(redactUrl(url), expected);
});
