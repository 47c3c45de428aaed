import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseHubConfig } from '../src/config.js';
import { HubIdentity } from '../src/identity.js';

/** MERCURE_PUBLIC_URL is the hub's identity (docs/hub.md, "The hub's URL"). */

const KEYS = { MERCURE_PUBLISHER_JWT_KEY: 'k'.repeat(32) };

describe('MERCURE_PUBLIC_URL', () => {
  // [value, accepted]
  // biome-ignore format: a table, one case per line
  const values: readonly (readonly [string, boolean])[] = [
    ['https://hub.example.com/.well-known/mercure', true],
    ['http://localhost:3000/.well-known/mercure', true],
    ['https://example.com/prefix/.well-known/mercure', true],
    ['https://hub.example.com', false],
    ['https://hub.example.com/', false],
    ['https://hub.example.com/.well-known/mercure/', false],
    ['https://hub.example.com/.well-known/mercure?x=1', false],
    ['https://hub.example.com/.well-known/mercure#f', false],
    ['ftp://hub.example.com/.well-known/mercure', false],
  ];
  for (const [value, accepted] of values) {
    test(`${value} → ${accepted ? 'accepted' : 'refused at start, naming the variable'}`, () => {
      const parse = () => parseHubConfig({ ...KEYS, MERCURE_PUBLIC_URL: value });
      if (accepted) assert.equal(parse().MERCURE_PUBLIC_URL?.href, value);
      else assert.throws(parse, /MERCURE_PUBLIC_URL/);
    });
  }
});

describe('the identity derived from it', () => {
  // [public URL, hub URL, metadata URL, subscriptions resource]
  // biome-ignore format: a table, one case per line
  const cases: readonly (readonly [string | undefined, string, string, string])[] = [
    [undefined, 'http://mercure.invalid/.well-known/mercure', 'http://mercure.invalid/.well-known/oauth-protected-resource/.well-known/mercure', 'http://mercure.invalid/.well-known/mercure/subscriptions/Exact'],
    ['https://hub.example.com/.well-known/mercure', 'https://hub.example.com/.well-known/mercure', 'https://hub.example.com/.well-known/oauth-protected-resource/.well-known/mercure', 'https://hub.example.com/.well-known/mercure/subscriptions/Exact'],
    ['https://example.com/p/.well-known/mercure', 'https://example.com/p/.well-known/mercure', 'https://example.com/.well-known/oauth-protected-resource/p/.well-known/mercure', 'https://example.com/p/.well-known/mercure/subscriptions/Exact'],
  ];
  for (const [publicUrl, hubUrl, metadataUrl, resource] of cases) {
    test(`${publicUrl ?? 'unset'}`, () => {
      const identity = new HubIdentity(publicUrl === undefined ? undefined : new URL(publicUrl));
      assert.equal(identity.hubUrl, hubUrl);
      assert.equal(identity.resourceMetadataUrl, metadataUrl);
      assert.equal(identity.absolute('/.well-known/mercure/subscriptions/Exact'), resource);
      assert.equal(identity.linkTarget, publicUrl ?? '/.well-known/mercure');
      assert.throws(() => identity.absolute('/elsewhere'), TypeError);
    });
  }
});
