import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { JWKS_MAX_BYTES, JwksCache, type JwksCacheOptions } from '../src/jwks.js';
import { fakeClock, jwkOf, keys, recordingLogger, startServer, type TestServer } from './support.js';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.close();
});

function rsaJwk(kid: string | undefined, which: 'rsa' | 'rsa2' = 'rsa'): Record<string, unknown> {
  return jwkOf(keys()[which].publicKey, kid === undefined ? {} : { kid });
}

function cacheFor(options: Partial<JwksCacheOptions> = {}): JwksCache {
  return new JwksCache({ url: server.url, ...options });
}

/** Writes a body in pieces without Content-Length, so Node sends it chunked. */
function writeChunked(response: ServerResponse, body: string, pieces = 3): void {
  response.writeHead(200, { 'content-type': 'application/json' });
  const size = Math.ceil(body.length / pieces);
  for (let offset = 0; offset < body.length; offset += size)
    response.write(body.slice(offset, offset + size));
  response.end();
}

/** A JSON document of exactly `bytes` bytes (a padding member around a one-key set). */
function documentOfSize(bytes: number): string {
  const base = JSON.stringify({ keys: [rsaJwk('k')], padding: '' });
  return JSON.stringify({ keys: [rsaJwk('k')], padding: 'x'.repeat(bytes - base.length) });
}

describe('JWKS pre-fetch and lookups', () => {
  it('loads the set at boot and logs how many usable keys it found', async () => {
    server.serveJson({ keys: [rsaJwk('a'), rsaJwk('b', 'rsa2')] });
    const logger = recordingLogger();
    const cache = cacheFor({ logger });
    await cache.prefetch();
    assert.equal(cache.keyCount, 2);
    assert.equal((await cache.keyFor('b', 'RS256'))?.kid, 'b');
    const loaded = logger.entries.find((entry) => entry.message === 'JWKS loaded 2 usable keys');
    assert.equal(loaded?.fields.keys, 2);
    assert.equal(loaded?.fields.skipped, 0);
  });

  it('a failed pre-fetch is logged and not fatal; the first token after the throttle pays the fetch', async () => {
    server.handle((_request, response) => {
      response.writeHead(503);
      response.end();
    });
    const clock = fakeClock();
    const logger = recordingLogger();
    const cache = cacheFor({ logger, now: clock.now });
    await cache.prefetch();
    assert.equal(cache.keyCount, 0);
    assert.ok(logger.messages('warn').includes('JWKS pre-fetch failed (will retry on demand)'));
    server.serveJson({ keys: [rsaJwk('a')] });
    clock.advance(5_000);
    assert.equal((await cache.keyFor('a', 'RS256'))?.kid, 'a');
  });

  it('warns that an http:// URL makes keys forgeable', () => {
    const logger = recordingLogger();
    cacheFor({ logger });
    assert.match(logger.messages('warn')[0] ?? '', /cleartext.*forgeable/);
  });
});

describe('key rotation and the 5 s re-fetch throttle', () => {
  it('picks up a rotated key without a restart, no sooner than 5 s after the last fetch', async () => {
    server.serveJson({ keys: [rsaJwk('old')] });
    const clock = fakeClock();
    const cache = cacheFor({ now: clock.now });
    await cache.prefetch();
    const before = server.requests();
    server.serveJson({ keys: [rsaJwk('new', 'rsa2')] });

    clock.advance(4_999);
    assert.equal(await cache.keyFor('new', 'RS256'), undefined, 'throttled: no fetch within 5 s');
    assert.equal(server.requests(), before);

    clock.advance(1);
    assert.equal((await cache.keyFor('new', 'RS256'))?.kid, 'new');
    assert.equal(server.requests(), before + 1);
    // The old key is gone with the old document.
    assert.equal(await cache.keyFor('old', 'RS256'), undefined);
  });

  it('a flood of random kids costs one fetch per 5 s, counted on the server', async () => {
    server.serveJson({ keys: [rsaJwk('only')] });
    const clock = fakeClock();
    const cache = cacheFor({ now: clock.now });
    await cache.prefetch();
    const flood = () => Promise.all(Array.from({ length: 500 }, () => cache.keyFor(randomUUID(), 'RS256')));
    const start = server.requests();

    clock.advance(5_000);
    assert.ok((await flood()).every((key) => key === undefined));
    assert.equal(server.requests(), start + 1, 'one fetch for 500 concurrent misses');

    assert.ok((await flood()).every((key) => key === undefined));
    clock.advance(4_999);
    await flood();
    assert.equal(server.requests(), start + 1, 'no fetch inside the 5 s window');

    clock.advance(1);
    await flood();
    assert.equal(server.requests(), start + 2, 'one more once 5 s have passed');
    assert.equal(cache.fetchCount, 3);
  });

  it('concurrent misses share one in-flight fetch', async () => {
    server.serveJson({ keys: [] });
    const clock = fakeClock();
    const cache = cacheFor({ now: clock.now });
    await cache.prefetch();
    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let arrived: () => void = () => {};
    const requestArrived = new Promise<void>((resolve) => {
      arrived = resolve;
    });
    const body = JSON.stringify({ keys: [rsaJwk('late')] });
    server.handle((_request, response) => {
      arrived();
      void released.then(() => {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(body);
      });
    });
    clock.advance(5_000);
    const start = server.requests();
    const lookups = Array.from({ length: 50 }, () => cache.keyFor('late', 'RS256'));
    await requestArrived;
    // A later miss, after the fetch started, joins it instead of being throttled away.
    lookups.push(cache.keyFor('late', 'RS256'));
    release();
    const results = await Promise.all(lookups);
    assert.ok(results.every((key) => key?.kid === 'late'));
    assert.equal(server.requests(), start + 1);
  });

  it('re-reads the set once older than the max age, so a removed key stops verifying', async () => {
    server.serveJson({ keys: [rsaJwk('revoked'), rsaJwk('kept', 'rsa2')] });
    const clock = fakeClock();
    const cache = cacheFor({ now: clock.now, maxAgeMs: 60_000 });
    await cache.prefetch();
    server.serveJson({ keys: [rsaJwk('kept', 'rsa2')] });
    clock.advance(60_000);
    // Served from the current set at once; the refresh runs in the background.
    assert.equal((await cache.keyFor('kept', 'RS256'))?.kid, 'kept');
    await cache.refresh();
    assert.equal(await cache.keyFor('revoked', 'RS256'), undefined);
  });
});

describe('tokens without kid', () => {
  it('use the first key of the document that fits the algorithm, in document order', async () => {
    const { ed25519, ecP256 } = keys();
    server.serveJson({
      keys: [
        jwkOf(ecP256.publicKey, { kid: 'ec' }),
        jwkOf(ed25519.publicKey, { kid: 'ed' }),
        rsaJwk('first-rsa'),
        rsaJwk('second-rsa', 'rsa2'),
      ],
    });
    const cache = cacheFor();
    await cache.prefetch();
    // [kid as sent, alg, expected kid]
    // biome-ignore format: a table, one case per line
    const table: readonly (readonly [string | undefined, 'RS256' | 'EdDSA' | 'ES256', string])[] = [
      [undefined, 'RS256', 'first-rsa'],
      ['', 'RS256', 'first-rsa'],
      [undefined, 'EdDSA', 'ed'],
      [undefined, 'ES256', 'ec'],
    ];
    for (const [kid, alg, expected] of table) {
      assert.equal((await cache.keyFor(kid, alg))?.kid, expected, `${String(kid)} ${alg}`);
    }
  });

  it('an unnamed key serves kid-less tokens but not a token naming a kid', async () => {
    server.serveJson({ keys: [rsaJwk(undefined)] });
    const clock = fakeClock();
    const cache = cacheFor({ now: clock.now });
    await cache.prefetch();
    assert.ok(await cache.keyFor(undefined, 'RS256'));
    assert.equal(await cache.keyFor('named', 'RS256'), undefined);
  });
});

describe('key types', () => {
  const { ed25519, ecP256 } = keys();
  const mixed = () => [
    { kty: 'oct', k: 'c2VjcmV0', kid: 'hmac' },
    jwkOf(ecP256.publicKey, { kid: 'ec' }),
    { kty: 'OKP', crv: 'X25519', x: 'hSDwCYkwp1R0i33ctD73Wg2_Og0mOBr066SpjqqbTmo', kid: 'x25519' },
    rsaJwk('rsa'),
    jwkOf(ed25519.publicKey, { kid: 'ed' }),
    rsaJwk('encryption', 'rsa2'),
  ];

  it('the broker reads RSA and OKP/Ed25519 only, skips the rest and logs the counts', async () => {
    const document = mixed();
    (document[5] as Record<string, unknown>).use = 'enc';
    server.serveJson({ keys: document });
    const logger = recordingLogger();
    const cache = cacheFor({ logger, keyTypes: ['RSA', 'OKP'] });
    await cache.prefetch();
    assert.equal(cache.keyCount, 2);
    const loaded = logger.entries.find((entry) => entry.message.startsWith('JWKS loaded'));
    assert.deepEqual([loaded?.fields.keys, loaded?.fields.skipped], [2, 4]);
    assert.equal(await cache.keyFor('ec', 'ES256'), undefined);
  });

  it('the hub also reads EC keys', async () => {
    server.serveJson({ keys: mixed() });
    const cache = cacheFor({ keyTypes: ['RSA', 'EC', 'OKP'] });
    await cache.prefetch();
    assert.equal(cache.keyCount, 4);
    assert.equal((await cache.keyFor('ec', 'ES256'))?.family, 'ec-p256');
  });

  it('a set with only unsupported key types loads zero keys, loudly', async () => {
    server.serveJson({
      keys: [
        { kty: 'oct', k: 'c2VjcmV0' },
        { kty: 'EC', crv: 'secp256k1', x: 'a', y: 'b' },
      ],
    });
    const logger = recordingLogger();
    const cache = cacheFor({ logger, keyTypes: ['RSA', 'OKP'] });
    await cache.prefetch();
    assert.equal(cache.keyCount, 0);
    const warning = logger.entries.find((entry) => entry.message === 'JWKS loaded 0 usable keys');
    assert.equal(warning?.level, 'warn');
    assert.equal(warning?.fields.skipped, 2);
  });
});

describe('response bounds', () => {
  // [name, how the server answers, loads?]
  // biome-ignore format: a table, one case per line
  const cases: readonly (readonly [string, (response: ServerResponse) => void, boolean])[] = [
    [
      'a chunked body is accepted',
      (response) => writeChunked(response, JSON.stringify({ keys: [rsaJwk('k')] })),
      true,
    ],
    [
      'exactly 1 MiB with Content-Length is accepted',
      (response) => {
        const body = documentOfSize(JWKS_MAX_BYTES);
        response.writeHead(200, { 'content-length': Buffer.byteLength(body) });
        response.end(body);
      },
      true,
    ],
    [
      'over 1 MiB announced by Content-Length is refused',
      (response) => {
        const body = documentOfSize(JWKS_MAX_BYTES + 1);
        response.writeHead(200, { 'content-length': Buffer.byteLength(body) });
        response.end(body);
      },
      false,
    ],
    [
      'over 1 MiB sent chunked (no Content-Length) is refused',
      (response) => writeChunked(response, documentOfSize(JWKS_MAX_BYTES + 1), 64),
      false,
    ],
    ['a body that is not JSON is refused', (response) => response.end('<html>'), false],
    ['a document without "keys" is refused', (response) => response.end('{"kids":[]}'), false],
    [
      'a redirect is not followed',
      (response) => {
        response.writeHead(302, { location: '/elsewhere' });
        response.end();
      },
      false,
    ],
  ];
  for (const [name, answer, loads] of cases) {
    it(name, async () => {
      server.handle((_request, response) => {
        response.on('error', () => {});
        answer(response);
      });
      const logger = recordingLogger();
      const cache = cacheFor({ logger });
      await cache.prefetch();
      assert.equal(cache.keyCount, loads ? 1 : 0);
      assert.equal(logger.messages('warn').includes('JWKS pre-fetch failed (will retry on demand)'), !loads);
    });
  }

  it('an announced length over 1 MiB is refused before the body is read', async () => {
    server.handle((_request, response) => {
      response.on('error', () => {});
      // Announce 2 MiB, send a few bytes, never finish: only the up-front check can answer.
      response.writeHead(200, { 'content-length': 2 * JWKS_MAX_BYTES });
      response.write('{"keys":');
    });
    const logger = recordingLogger();
    const cache = cacheFor({ logger, timeoutMs: 5_000 });
    await cache.prefetch();
    const failure = logger.entries.find((entry) => entry.message.startsWith('JWKS pre-fetch failed'));
    assert.equal(failure?.fields.error, `response body exceeds ${JWKS_MAX_BYTES} bytes`);
  });

  it('gives up after the timeout', async () => {
    server.handle(() => {
      // Never answers.
    });
    const logger = recordingLogger();
    const cache = cacheFor({ logger, timeoutMs: 50 });
    await cache.prefetch();
    const failure = logger.entries.find((entry) => entry.message.startsWith('JWKS pre-fetch failed'));
    assert.equal(failure?.fields.error, 'timed out after 50 ms');
  });

  it('close() aborts a fetch in flight', async () => {
    let arrived: () => void = () => {};
    const requestArrived = new Promise<void>((resolve) => {
      arrived = resolve;
    });
    server.handle(() => arrived());
    const cache = cacheFor();
    const refreshing = cache.refresh();
    await requestArrived;
    cache.close();
    await assert.rejects(refreshing, /aborted/);
  });
});
