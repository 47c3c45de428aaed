import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { decodeJwt, decodeProtectedHeader, importSPKI, jwtVerify } from 'jose';
import { runCli } from '../src/cli.js';

const directory = mkdtempSync(join(tmpdir(), 'herald-cli-'));
after(() => rmSync(directory, { recursive: true, force: true }));

async function cli(...argv: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await runCli(argv, { stdout: (text) => (stdout += text), stderr: (text) => (stderr += text) });
  const lines = stdout.trimEnd().split('\n');
  return { code, stdout, stderr, token: lines.at(-1) ?? '' };
}

test('the README example: --secret S --publish "*" gives exactly the mercure publish claim', async () => {
  const { code, token } = await cli('token', '--secret', 'S', '--publish', '*');
  assert.equal(code, 0);
  const { payload, protectedHeader } = await jwtVerify(token, new TextEncoder().encode('S'));
  assert.deepEqual(payload, { mercure: { publish: [{ match: '*' }] } });
  assert.equal(protectedHeader.alg, 'HS256');
});

test('hub claims: repeatable selectors, match type, payload, exp', async () => {
  const before = Math.floor(Date.now() / 1000);
  const { token } = await cli(
    'token',
    '--secret',
    'S',
    '--alg',
    'HS384',
    '--subscribe',
    'https://example.com/users/42/:r',
    '--subscribe',
    'https://example.com/books/:id',
    '--match-type',
    'URLPattern',
    '--payload',
    '{"user":42}',
    '--exp',
    '60',
  );
  const after = Math.ceil(Date.now() / 1000);
  const claims = decodeJwt(token);
  assert.deepEqual(claims.mercure, {
    subscribe: [
      { match: 'https://example.com/users/42/:r', matchType: 'URLPattern' },
      { match: 'https://example.com/books/:id', matchType: 'URLPattern' },
    ],
    payload: { user: 42 },
  });
  // Signed between `before` and `after`: 60 s from then, however long the command took.
  assert.ok(claims.exp !== undefined && claims.exp >= before + 60 && claims.exp <= after + 60);
  assert.equal(decodeProtectedHeader(token).alg, 'HS384');
});

test('broker claims: roles and sub', async () => {
  const { token } = await cli(
    'token',
    '--secret',
    'S',
    '--role',
    'write-only',
    '--role',
    'read-only',
    '--sub',
    'producer-7',
  );
  assert.deepEqual(decodeJwt(token), { roles: ['write-only', 'read-only'], sub: 'producer-7' });
});

test('signs with a private key file (RS256 default, EdDSA on request)', async () => {
  const cases: ['rsa' | 'ed25519', string[], string][] = [
    ['rsa', [], 'RS256'],
    ['ed25519', ['--alg', 'EdDSA'], 'EdDSA'],
  ];
  for (const [type, extra, algorithm] of cases) {
    const { privateKey, publicKey } =
      type === 'rsa' ? generateKeyPairSync('rsa', { modulusLength: 2048 }) : generateKeyPairSync('ed25519');
    const file = join(directory, `${type}.pem`);
    writeFileSync(file, privateKey.export({ type: 'pkcs8', format: 'pem' }));
    const { code, token } = await cli('token', '--key', file, ...extra, '--role', 'admin');
    assert.equal(code, 0, type);
    const verifyKey = await importSPKI(
      publicKey.export({ type: 'spki', format: 'pem' }) as string,
      algorithm,
    );
    const { payload } = await jwtVerify(token, verifyKey);
    assert.deepEqual(payload, { roles: ['admin'] });
  }
});

test('bad options exit 1 with a message and print no token', async () => {
  const cases: [string[], RegExp][] = [
    [['token', '--publish', '*'], /give --secret <s> or --key/],
    [['token', '--secret', 'S', '--key', 'k.pem'], /not both/],
    [['token', '--secret', 'S', '--alg', 'RS256'], /--secret signs with HS256/],
    [['token', '--secret', 'S', '--match-type', 'glob', '--publish', 'x'], /--match-type must be one of/],
    [['token', '--secret', 'S', '--payload', '{nope'], /--payload must be JSON/],
    [['token', '--secret', 'S', '--exp', '1.5'], /--exp takes a lifetime/],
    [['token', '--secret', 'S', '--exp=-5'], /--exp takes a lifetime/],
    [['token', '--key', join(directory, 'missing.pem')], /cannot read key file/],
    [['token', '--secret', 'S', '--bogus'], /Unknown option '--bogus'/],
    [['frobnicate'], /unknown command "frobnicate"/],
  ];
  for (const [argv, message] of cases) {
    const { code, stdout, stderr } = await cli(...argv);
    assert.equal(code, 1, argv.join(' '));
    assert.match(stderr, message, argv.join(' '));
    assert.equal(stdout, '', argv.join(' '));
  }
});
