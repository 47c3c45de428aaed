import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { describe, it } from 'node:test';
import {
  importJwk,
  importPublicKeyPem,
  importSecret,
  isPemText,
  KeyImportError,
  normalizePem,
} from '../src/keys.js';
import { jwkOf, keys } from './support.js';

const weakRsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey;
const weakRsaPem = weakRsa.export({ type: 'spki', format: 'pem' }).toString();

/** A self-signed RSA certificate (public material only), as identity providers publish them. */
const CERTIFICATE = [
  '-----BEGIN CERTIFICATE-----',
  'MIIDDzCCAfegAwIBAgIUHIDdGPQi00R2flI4QcmZ/OEc8ocwDQYJKoZIhvcNAQEL',
  'BQAwFjEUMBIGA1UEAwwLaGVyYWxkLXRlc3QwIBcNMjYxMTMwMDIwMjQ1WhgPMjEy',
  'NjExMDYwMjAyNDVaMBYxFDASBgNVBAMMC2hlcmFsZC10ZXN0MIIBIjANBgkqhkiG',
  '9w0BAQEFAAOCAQ8AMIIBCgKCAQEAwD8qL2VKqTUDJCBuqqMwDCuIdifujtjCMjsr',
  'h9cOvNIKrq2LvZPzYudv0rtOX5jRcMkgngSc6NINopU8WYchrQEshLZcJYpdq1rA',
  'Wk1InpB4NOSBy+SFg16wmUYKS6SEkPC02520f01zme94r/kkE1uz/SypdPs95hSN',
  'RmVPFtcoKb+acrsCwVl9qShh54nXQJlXKFLcL2Iv/o42HxMI/ZvTp6EtBjuBU3Bv',
  'gzbYdpRVBymo98qgyJ1FmjasbYNa+HeICQp1gBqInJU57Cin/tkCOxhN/jpRY+Vz',
  'epO9LK8GDjemL+6HLWbwY8XgxaK68EK1yi1R/PhHx5E3Fn+LWwIDAQABo1MwUTAd',
  'BgNVHQ4EFgQUmFM13/amE7U5Jf3EtJQZQH1vAbIwHwYDVR0jBBgwFoAUmFM13/am',
  'E7U5Jf3EtJQZQH1vAbIwDwYDVR0TAQH/BAUwAwEB/zANBgkqhkiG9w0BAQsFAAOC',
  'AQEAdzNeGrvcGWvx6ClQ6ZKJMe/Dp7/TVjnnJDfJubd/D9gkEpHY/pyN8qG/YjiM',
  'lhNozvXthto9fKSEE/LDYpizK19JXFmGkqYnyuDRd+gGcxImTsw3MU66zPSpdykH',
  'BEKEQKVw/t9pWX0Sr3xjHl6oqiw15kjOCByGwA34Ez+vVSg862qZRcuuMO/4W4UT',
  'z6Uw4zKHQy/BC8MrGSLB5UUL2ucymdk6hyXdoFpuC2UiLK/tw1VnfRAa2ah0bPKC',
  '8dFInTdlI+Kw9n4JbudU2RH4Rsm3Vbh0r2fs1xqJ5vXMmBuba4RSmVKj84p02w4t',
  'ZBe+QY8Z4vUJWlB4dvEi5n7wHw==',
  '-----END CERTIFICATE-----',
].join('\n');

describe('PEM public keys', () => {
  // [name, PEM, expected family]
  // biome-ignore format: a table, one case per line
  const accepted: readonly (readonly [string, () => string, string])[] = [
    ['RSA SPKI', () => keys().rsa.publicPem, 'rsa'],
    ['RSA PKCS#1', () => keys().rsa.publicKey.export({ type: 'pkcs1', format: 'pem' }).toString(), 'rsa'],
    ['EC P-256', () => keys().ecP256.publicPem, 'ec-p256'],
    ['EC P-384', () => keys().ecP384.publicPem, 'ec-p384'],
    ['Ed25519', () => keys().ed25519.publicPem, 'ed25519'],
    ['X.509 certificate', () => CERTIFICATE, 'rsa'],
    ['newlines escaped as \\n', () => keys().rsa.publicPem.trim().replaceAll('\n', '\\n'), 'rsa'],
    ['surrounding whitespace', () => `\n  ${keys().ed25519.publicPem}  \n`, 'ed25519'],
  ];
  for (const [name, pem, family] of accepted) {
    it(`${name} → ${family}`, () => {
      assert.equal(importPublicKeyPem(pem()).family, family);
    });
  }

  // [name, PEM]
  // biome-ignore format: a table, one case per line
  const refused: readonly (readonly [string, () => string])[] = [
    ['a private key', () => keys().rsa.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()],
    ['garbage between the armour lines', () => '-----BEGIN PUBLIC KEY-----\nbm90IGEga2V5\n-----END PUBLIC KEY-----'],
    ['no armour at all', () => 'just a secret'],
    ['an unsupported PEM type', () => '-----BEGIN DH PARAMETERS-----\nAAAA\n-----END DH PARAMETERS-----'],
    ['an RSA key under 2048 bits', () => weakRsaPem],
  ];
  for (const [name, pem] of refused) {
    it(`refuses ${name} without echoing it`, () => {
      const text = pem();
      assert.throws(
        () => importPublicKeyPem(text),
        (error: unknown) =>
          error instanceof KeyImportError &&
          !error.message.includes(text.length > 60 ? text.slice(30, 60) : text),
      );
    });
  }

  it('tells a PEM from a secret by its armour line', () => {
    assert.equal(isPemText(keys().rsa.publicPem), true);
    assert.equal(isPemText('s3cr3t-with-----dashes'), false);
  });

  it('only unescapes \\n when the value has no real newline', () => {
    assert.equal(normalizePem('a\\nb'), 'a\nb');
    assert.equal(normalizePem('a\\nb\nc'), 'a\\nb\nc');
  });

  it('a secret is used as raw bytes', () => {
    const key = importSecret('ünïcode');
    assert.equal(key.family, 'hmac');
    assert.deepEqual(key.key.export(), Buffer.from('ünïcode', 'utf8'));
  });
});

describe('JWK set entries', () => {
  const all = new Set(['RSA', 'EC', 'OKP'] as const);
  // [name, entry, expected family or undefined when skipped]
  // biome-ignore format: a table, one case per line
  const cases: readonly (readonly [string, () => unknown, string | undefined])[] = [
    ['RSA', () => jwkOf(keys().rsa.publicKey, { kid: 'r' }), 'rsa'],
    ['EC P-256', () => jwkOf(keys().ecP256.publicKey), 'ec-p256'],
    ['Ed25519', () => jwkOf(keys().ed25519.publicKey), 'ed25519'],
    ['RSA with private members (only the public part is kept)', () => jwkOf(keys().rsa.publicKey, { d: 'AAAA' }), 'rsa'],
    ['use: sig', () => jwkOf(keys().rsa.publicKey, { use: 'sig' }), 'rsa'],
    ['use: enc', () => jwkOf(keys().rsa.publicKey, { use: 'enc' }), undefined],
    ['oct (symmetric)', () => ({ kty: 'oct', k: 'c2VjcmV0' }), undefined],
    ['EC secp256k1', () => ({ ...jwkOf(keys().ecP256.publicKey), crv: 'secp256k1' }), undefined],
    ['OKP X25519', () => ({ kty: 'OKP', crv: 'X25519', x: 'hSDwCYkwp1R0i33ctD73Wg2_Og0mOBr066SpjqqbTmo' }), undefined],
    ['OKP Ed25519 with a short x', () => ({ kty: 'OKP', crv: 'Ed25519', x: 'AAAA' }), undefined],
    ['RSA without e', () => ({ kty: 'RSA', n: 'AAAA' }), undefined],
    ['RSA with a garbage modulus', () => ({ kty: 'RSA', n: '!!', e: 'AQAB' }), undefined],
    ['RSA under 2048 bits', () => jwkOf(weakRsa), undefined],
    ['not an object', () => 'RSA', undefined],
    ['null', () => null, undefined],
  ];
  for (const [name, entry, family] of cases) {
    it(`${name} → ${family ?? 'skipped'}`, () => {
      assert.equal(importJwk(entry(), all)?.family, family);
    });
  }

  it('keeps kid and alg', () => {
    const key = importJwk(jwkOf(keys().rsa.publicKey, { kid: 'k1', alg: 'RS384' }), all);
    assert.deepEqual([key?.kid, key?.alg], ['k1', 'RS384']);
  });

  it('skips key types not asked for', () => {
    assert.equal(importJwk(jwkOf(keys().ecP256.publicKey), new Set(['RSA', 'OKP'] as const)), undefined);
  });
});
