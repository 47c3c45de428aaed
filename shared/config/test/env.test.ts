import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  boolean,
  ConfigError,
  duration,
  enumOf,
  hexBytes,
  hexBytesList,
  integer,
  list,
  parseEnv,
  port,
  string,
  url,
} from '../src/index.js';

const spec = {
  PORT: port({ default: 8080 }),
  NAME: string({ required: true }),
  NICKNAME: string(),
  DEBUG: boolean({ default: false }),
  HEARTBEAT: duration({ default: 40_000 }),
  WORKERS: integer({ default: 2, min: 1, max: 64 }),
  MODE: enumOf(['fast', 'safe'] as const, { default: 'safe' }),
  ORIGINS: list({ default: [] }),
  UPSTREAM: url({ protocols: ['http:', 'https:'] }),
};

function errorFor(environment: Record<string, string>): ConfigError {
  try {
    parseEnv(spec, environment, { ownedPrefixes: ['APP_'] });
  } catch (error) {
    assert.ok(error instanceof ConfigError, `expected ConfigError, got ${error}`);
    return error;
  }
  assert.fail('expected a configuration error');
}

test('parses a valid environment into typed values with defaults', () => {
  const config = parseEnv(spec, {
    NAME: 'herald',
    DEBUG: 'TRUE',
    HEARTBEAT: '15s',
    ORIGINS: 'https://a.example, https://b.example,,',
    UPSTREAM: 'https://idp.example/jwks',
  });
  assert.equal(config.PORT, 8080);
  assert.equal(config.NAME, 'herald');
  assert.equal(config.NICKNAME, undefined);
  assert.equal(config.DEBUG, true);
  assert.equal(config.HEARTBEAT, 15_000);
  assert.equal(config.WORKERS, 2);
  assert.equal(config.MODE, 'safe');
  assert.deepEqual(config.ORIGINS, ['https://a.example', 'https://b.example']);
  assert.equal(config.UPSTREAM?.host, 'idp.example');
});

test('an empty value counts as unset', () => {
  const config = parseEnv(spec, { NAME: 'x', PORT: '', NICKNAME: '  ' });
  assert.equal(config.PORT, 8080);
  assert.equal(config.NICKNAME, undefined);
});

test('each bad value is an error naming its variable', () => {
  const cases: [Record<string, string>, string, RegExp][] = [
    [{}, 'NAME', /required/],
    [{ NAME: 'x', PORT: '70000' }, 'PORT', /integer in \[0, 65535\]/],
    [{ NAME: 'x', PORT: '80a' }, 'PORT', /integer/],
    [{ NAME: 'x', DEBUG: 'yes' }, 'DEBUG', /true, false, 1 or 0/],
    [{ NAME: 'x', HEARTBEAT: 'soon' }, 'HEARTBEAT', /duration/],
    [{ NAME: 'x', WORKERS: '0' }, 'WORKERS', /\[1, 64\]/],
    [{ NAME: 'x', MODE: 'turbo' }, 'MODE', /one of fast, safe/],
    [{ NAME: 'x', UPSTREAM: 'ftp://x' }, 'UPSTREAM', /URL/],
    [{ NAME: 'x', APP_TYPO: '1' }, 'APP_TYPO', /unknown setting/],
  ];
  for (const [environment, variable, reason] of cases) {
    const error = errorFor(environment);
    assert.equal(error.variable, variable, JSON.stringify(environment));
    assert.match(error.message, new RegExp(`^${variable}: `));
    assert.match(error.message, reason);
  }
});

test('unknown variables outside the owned prefixes are ignored', () => {
  assert.doesNotThrow(() =>
    parseEnv(spec, { NAME: 'x', HOME: '/root', OTHER_THING: '1' }, { ownedPrefixes: ['APP_'] }),
  );
});

test('an unknown owned variable names the closest known one when it is close', () => {
  const spec = {
    BROKER_KEY_PREFIX: string(),
    DEFAULT_TIMEOUT: duration({ default: 1 }),
    PORT: port({ default: 1 }),
  };
  const message = (name: string) => {
    try {
      parseEnv(spec, { [name]: '1' }, { ownedPrefixes: ['BROKER_'] });
    } catch (error) {
      return (error as Error).message;
    }
    return assert.fail(`${name} accepted`);
  };
  assert.equal(
    message('BROKER_KEY_PREFX'),
    'BROKER_KEY_PREFX: unknown setting (check the spelling; did you mean BROKER_KEY_PREFIX?)',
  );
  assert.match(message('BROKER_DEFAULT_TIMEOUT'), /did you mean DEFAULT_TIMEOUT\?/);
  assert.match(message('BROKER_PORT'), /did you mean PORT\?/);
  assert.equal(
    message('BROKER_SOMETHING_ELSE'),
    'BROKER_SOMETHING_ELSE: unknown setting (check the spelling)',
  );
});

test('the variables Kubernetes injects for a Service named like an owned prefix are not refused', () => {
  // A Service `broker` (ports 6632/TCP named http, 9000/UDP) and a Service `broker-redis`.
  const injected = {
    BROKER_SERVICE_HOST: '10.0.0.7',
    BROKER_SERVICE_PORT: '6632',
    BROKER_SERVICE_PORT_HTTP: '6632',
    BROKER_PORT: 'tcp://10.0.0.7:6632',
    BROKER_PORT_6632_TCP: 'tcp://10.0.0.7:6632',
    BROKER_PORT_6632_TCP_PROTO: 'tcp',
    BROKER_PORT_6632_TCP_PORT: '6632',
    BROKER_PORT_6632_TCP_ADDR: '10.0.0.7',
    BROKER_PORT_9000_UDP: 'udp://10.0.0.7:9000',
    BROKER_REDIS_SERVICE_HOST: '10.0.0.8',
    BROKER_REDIS_PORT: 'tcp://10.0.0.8:6379',
  };
  assert.doesNotThrow(() => parseEnv(spec, { NAME: 'x', ...injected }, { ownedPrefixes: ['BROKER_'] }));
  // A BROKER_PORT meant as a port number is not Kubernetes' form: still refused.
  assert.throws(
    () => parseEnv(spec, { NAME: 'x', BROKER_PORT: '7000' }, { ownedPrefixes: ['BROKER_'] }),
    /BROKER_PORT: unknown setting .*did you mean PORT\?/,
  );
});

test('several problems are reported together', () => {
  const error = errorFor({ PORT: 'x', DEBUG: 'maybe' });
  assert.match(error.message, /PORT/);
  assert.match(error.message, /NAME/);
  assert.match(error.message, /DEBUG/);
});

test('loadConfig stops the process with exit 1 and a message naming the variable', () => {
  const script = fileURLToPath(new URL('./fixtures/load-config.ts', import.meta.url));
  const result = spawnSync(process.execPath, ['--import', 'tsx', script], {
    env: { ...process.env, FIXTURE_PORT: 'nope' },
    encoding: 'utf8',
  });
  assert.equal(result.status, 1);
  assert.match(result.stderr, /configuration error: FIXTURE_PORT: expected an integer/);
  assert.doesNotMatch(result.stdout, /bound/);
});

test('hex keys: exact length, list of keys, and a bad key is never echoed in the error', () => {
  const keys = {
    KEY: hexBytes(32),
    OLD_KEYS: hexBytesList(32),
  };
  const good = 'ab'.repeat(32);
  const config = parseEnv(keys, { KEY: good, OLD_KEYS: ` ${'01'.repeat(32)}, ,${'FF'.repeat(32)}` });
  assert.deepEqual(config.KEY, Buffer.from(good, 'hex'));
  assert.deepEqual(
    config.OLD_KEYS.map((key) => key.toString('hex')),
    ['01'.repeat(32), 'ff'.repeat(32)],
  );
  assert.deepEqual(parseEnv(keys, {}), { KEY: undefined, OLD_KEYS: [] });
  const secretish = `${'cd'.repeat(31)}zz`;
  for (const environment of [
    { KEY: secretish },
    { KEY: 'ab'.repeat(31) },
    { OLD_KEYS: `${good},${secretish}` },
  ]) {
    assert.throws(
      () => parseEnv(keys, environment),
      (error: Error) => /64.hexadecimal/.test(error.message) && !error.message.includes('cdcd'),
    );
  }
});
