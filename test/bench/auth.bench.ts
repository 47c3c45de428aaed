/**
 * Token verification throughput: our auth paths against bare `jose.jwtVerify`, measured in the
 * same run on the same tokens and keys, with a fixed workload per algorithm.
 *
 *   node --import tsx test/bench/auth.bench.ts        (from the repository root)
 *
 * Rows: the hub path (`createMercureAuthenticator().authenticate`: source precedence, HTTPS rule,
 * verification, claim parsing) and the broker path (`createBrokerAuthenticator().authenticate`:
 * Bearer parsing, algorithm dispatch, verification, roles). "uncached" disables the
 * verified-token cache, so every call checks the signature; "cached" is the reconnect-storm
 * path (same token again). Ratios are against jose in this run.
 *
 * Each measurement runs at two concurrencies: 1 (sequential awaits: per-request latency bound)
 * and 16 calls in flight (a loaded server; Web Crypto runs on libuv's thread pool, so
 * throughput grows with concurrency up to the core count).
 */
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { parseEnv } from '@herald/config';
import { jwtVerify, SignJWT } from 'jose';
import {
  brokerAuthSettings,
  createBrokerAuthenticator,
  createMercureAuthenticator,
  type MercureAuthRequest,
  mercureAuthSettings,
} from '../../shared/auth/src/index.js';

type Algorithm = 'HS256' | 'RS256' | 'EdDSA';

/** Verifications per measurement, per algorithm (HMAC is ~7x cheaper than RSA or Ed25519). */
const WORKLOAD: Record<Algorithm, number> = { HS256: 20_000, RS256: 6_000, EdDSA: 6_000 };
const CACHED_WORKLOAD = 100_000;
const CONCURRENCIES = [1, 16] as const;
const SECRET = 'benchmark-secret-benchmark-secret-0123456789';

interface Material {
  readonly signingKey: KeyObject | Uint8Array;
  readonly verifyKey: KeyObject | Uint8Array;
  /** What the services are configured with: the secret, or the public key PEM. */
  readonly configured: string;
}

function material(alg: Algorithm): Material {
  if (alg === 'HS256') {
    const bytes = new TextEncoder().encode(SECRET);
    return { signingKey: bytes, verifyKey: bytes, configured: SECRET };
  }
  const pair =
    alg === 'RS256' ? generateKeyPairSync('rsa', { modulusLength: 2048 }) : generateKeyPairSync('ed25519');
  return {
    signingKey: pair.privateKey,
    verifyKey: pair.publicKey,
    configured: pair.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
}

/** `iterations` calls spread over `concurrency` sequential loops; returns calls per second. */
async function opsPerSecond(
  iterations: number,
  concurrency: number,
  run: () => Promise<unknown>,
): Promise<number> {
  const loop = async (count: number) => {
    let remaining = count;
    const worker = async () => {
      while (remaining > 0) {
        remaining -= 1;
        await run();
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
  };
  await loop(Math.ceil(iterations / 10)); // warm-up
  const started = process.hrtime.bigint();
  await loop(iterations);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return iterations / seconds;
}

interface Row {
  path: string;
  alg: Algorithm;
  concurrency: number;
  jose: number;
  uncached: number;
  cached: number;
}

async function measure(alg: Algorithm, concurrency: number): Promise<Row[]> {
  const keys = material(alg);
  const exp = Math.floor(Date.now() / 1000) + 3600;
  const token = await new SignJWT({
    sub: 'bench',
    role: 'read-write',
    mercure: { publish: [{ match: 'https://example.com/books/:id', matchType: 'URLPattern' }] },
  })
    .setProtectedHeader({ alg })
    .setExpirationTime(exp)
    .sign(keys.signingKey);

  const jose = await opsPerSecond(WORKLOAD[alg], concurrency, () =>
    jwtVerify(token, keys.verifyKey, { algorithms: [alg] }),
  );

  const mercureConfig = parseEnv(mercureAuthSettings, {
    MERCURE_PUBLISHER_JWT_KEY: keys.configured,
    MERCURE_PUBLISHER_JWT_ALG: alg,
  });
  const request: MercureAuthRequest = {
    headers: { authorization: `Bearer ${token}` },
    transport: { encrypted: true, fromTrustedProxy: false, remoteIsLoopback: false, devMode: false },
  };
  const hubUncached = createMercureAuthenticator(mercureConfig, { cache: false });
  const hubCached = createMercureAuthenticator(mercureConfig);

  const brokerConfig = parseEnv(brokerAuthSettings, {
    JWT_ENABLED: 'true',
    JWT_ALGORITHM: alg,
    ...(alg === 'HS256' ? { JWT_SECRET: keys.configured } : { JWT_PUBLIC_KEY: keys.configured }),
  });
  const header = `Bearer ${token}`;
  const brokerUncached = createBrokerAuthenticator(brokerConfig, { cache: false });
  const brokerCached = createBrokerAuthenticator(brokerConfig);

  return [
    {
      path: 'hub',
      alg,
      concurrency,
      jose,
      uncached: await opsPerSecond(WORKLOAD[alg], concurrency, () =>
        hubUncached.authenticate(request, 'publisher'),
      ),
      cached: await opsPerSecond(CACHED_WORKLOAD, concurrency, () =>
        hubCached.authenticate(request, 'publisher'),
      ),
    },
    {
      path: 'broker',
      alg,
      concurrency,
      jose,
      uncached: await opsPerSecond(WORKLOAD[alg], concurrency, () => brokerUncached.authenticate(header)),
      cached: await opsPerSecond(CACHED_WORKLOAD, concurrency, () => brokerCached.authenticate(header)),
    },
  ];
}

function formatRate(value: number): string {
  return Math.round(value).toLocaleString('en-US');
}

async function main(): Promise<void> {
  const rows: Row[] = [];
  for (const concurrency of CONCURRENCIES) {
    for (const alg of ['HS256', 'RS256', 'EdDSA'] as const) rows.push(...(await measure(alg, concurrency)));
  }

  const table = [
    [
      'path',
      'alg',
      'in flight',
      'jose.jwtVerify/s',
      'ours uncached/s',
      'uncached/jose',
      'ours cached/s',
      'cached/jose',
    ],
    ...rows.map((row) => [
      row.path,
      row.alg,
      String(row.concurrency),
      formatRate(row.jose),
      formatRate(row.uncached),
      (row.uncached / row.jose).toFixed(2),
      formatRate(row.cached),
      (row.cached / row.jose).toFixed(1),
    ]),
  ];
  const widths =
    table[0]?.map((_, column) => Math.max(...table.map((line) => line[column]?.length ?? 0))) ?? [];
  const render = (line: string[]) =>
    line
      .map((cell, column) =>
        column < 2 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0),
      )
      .join('  ');
  process.stdout.write(
    `auth verification throughput, node ${process.version}, ${availableParallelism()} cores, workload HS256 ${WORKLOAD.HS256}, RS256 ${WORKLOAD.RS256}, EdDSA ${WORKLOAD.EdDSA}, cached ${CACHED_WORKLOAD} calls\n`,
  );
  process.stdout.write(`${render(table[0] ?? [])}\n`);
  process.stdout.write(`${widths.map((width) => '-'.repeat(width)).join('  ')}\n`);
  for (const line of table.slice(1)) process.stdout.write(`${render(line)}\n`);
}

await main();
