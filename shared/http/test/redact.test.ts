import assert from 'node:assert/strict';
import { test } from 'node:test';
import { redactText, redactUrl } from '../src/index.js';

const JWT = 'eyJhbGciOiJIUzI1NiJ9.eyJtZXJjdXJlIjp7fX0.c2lnbmF0dXJl';

test('tokens in query parameters never reach a log line, whatever the spelling of the name', () => {
  const cases: [string, string][] = [
    [
      `/.well-known/mercure?topic=a&authorization=${JWT}`,
      '/.well-known/mercure?topic=a&authorization=[REDACTED]',
    ],
    [
      `/.well-known/mercure?Authorization=${JWT}&topic=a`,
      '/.well-known/mercure?Authorization=[REDACTED]&topic=a',
    ],
    [
      `/.well-known/mercure?topic=a&access_token=${JWT}`,
      '/.well-known/mercure?topic=a&access_token=[REDACTED]',
    ],
    // Issue #8: the hub decodes parameter names, so these are tokens too.
    [`/.well-known/mercure?%61uthorization=${JWT}`, '/.well-known/mercure?%61uthorization=[REDACTED]'],
    [`/.well-known/mercure?access%5Ftoken=${JWT}`, '/.well-known/mercure?access%5Ftoken=[REDACTED]'],
    [`/.well-known/mercure?%41CCESS%5f%54OKEN=${JWT}`, '/.well-known/mercure?%41CCESS%5f%54OKEN=[REDACTED]'],
    [`/?authorization+=${JWT}`, '/?authorization+=[REDACTED]'],
    // Repeated parameters: every occurrence.
    [`/?authorization=${JWT}&authorization=${JWT}`, '/?authorization=[REDACTED]&authorization=[REDACTED]'],
    // `;` is a separator for some parsers: the value after it is hidden as well.
    [`/?topic=a;access_token=${JWT}`, '/?topic=a;access_token=[REDACTED]'],
    // URLSearchParams does not stop at `#`: neither does redaction.
    [`/?topic=a#x&authorization=${JWT}`, '/?topic=a#x&authorization=[REDACTED]'],
    // A name that does not decode cleanly is treated as a credential rather than leaked.
    [`/?%E0%61uthorization=${JWT}`, '/?%E0%61uthorization=[REDACTED]'],
    [`/?authorization%=${JWT}`, '/?authorization%=[REDACTED]'],
    // Absolute-form request targets.
    [
      `http://x/.well-known/mercure?authorization=${JWT}`,
      'http://x/.well-known/mercure?authorization=[REDACTED]',
    ],
    // Values and names that are not credentials stay readable.
    ['/.well-known/mercure?topic=authorization', '/.well-known/mercure?topic=authorization'],
    [
      '/.well-known/mercure?topic=a&topic=b&lastEventID=c',
      '/.well-known/mercure?topic=a&topic=b&lastEventID=c',
    ],
    ['/?authorization', '/?authorization'],
    ['/healthz', '/healthz'],
    ['/?', '/?'],
  ];
  for (const [url, expected] of cases) assert.equal(redactUrl(url), expected, url);
});

test('no query parameter that URLSearchParams reads as a token name survives redaction', () => {
  const names = [
    'authorization',
    'access_token',
    'AUTHORIZATION',
    '%61uthorization',
    'access%5Ftoken',
    'a%75thorization',
  ];
  for (const name of names) {
    const url = `/.well-known/mercure?x=1&${name}=${JWT}&y=2`;
    const redacted = redactUrl(url);
    assert.ok(!redacted.includes(JWT), `${url} → ${redacted}`);
    const parsed = new URLSearchParams(redacted.slice(redacted.indexOf('?') + 1));
    for (const [key, value] of parsed) assert.ok(value !== JWT, `${key} kept the token`);
  }
});

test('URLs embedded in log text lose their credentials, the rest of the line stays', () => {
  const cases: [string, string][] = [
    [
      `Route GET:/nowhere?authorization=${JWT} not found`,
      'Route GET:/nowhere?authorization=[REDACTED] not found',
    ],
    [
      `{"msg":"Route GET:/x?a=1&access%5Ftoken=${JWT} not found","q":"?"}`,
      '{"msg":"Route GET:/x?a=1&access%5Ftoken=[REDACTED] not found","q":"?"}',
    ],
    ['{"msg":"is it? yes","topic":"a?b=c"}', '{"msg":"is it? yes","topic":"a?b=c"}'],
    ['no query here', 'no query here'],
  ];
  for (const [text, expected] of cases) assert.equal(redactText(text), expected, text);
});
