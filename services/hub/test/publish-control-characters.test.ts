import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { publish, publisherToken, startTestHub, type TestHub } from './helpers.js';

/**
 * Topics and ids with control characters are refused at publish (400), the same set the
 * subscribe side refuses in patterns: C0, DEL and C1 (docs/hub.md, publish; issue #8).
 */

const TOPIC = 'https://example.com/books/1';
const REFUSED = [
  '\u0000',
  '\u0001',
  '\t',
  '\n',
  '\r',
  '\u001b',
  '\u001f',
  '\u007f',
  '\u0080',
  '\u0085',
  '\u009b',
  '\u009f',
];
/** Neighbours of the refused ranges, and Unicode separators SSE does not split on: accepted. */
const ACCEPTED = [' ', '~', '\u00a0', '\u00ff', '\u2028', '\u2029', 'é'];

const name = (character: string) => `U+${(character.codePointAt(0) ?? 0).toString(16).padStart(4, '0')}`;

// [field, form fields with the character in that field]
const fields: readonly (readonly [string, (character: string) => [string, string][]])[] = [
  ['canonical topic', (c) => [['topic', `${TOPIC}${c}x`]]],
  [
    'alternate topic',
    (c) => [
      ['topic', TOPIC],
      ['topic', `https://example.com/users/${c}1`],
    ],
  ],
  [
    'id',
    (c) => [
      ['topic', TOPIC],
      ['id', `urn:x:${c}1`],
    ],
  ],
];

describe('control characters at publish', () => {
  let hub: TestHub;
  before(async () => {
    hub = await startTestHub('memory');
  });
  after(() => hub.close());

  for (const [field, build] of fields) {
    test(`${field}: ${REFUSED.map(name).join(' ')} → 400`, async () => {
      for (const character of REFUSED) {
        const result = await publish(hub.url, build(character), { token: publisherToken() });
        assert.equal(result.status, 400, `${field} with ${name(character)}: ${result.body}`);
        assert.match(result.body, /Control characters/);
      }
    });
    test(`${field}: ${ACCEPTED.map(name).join(' ')} → 200`, async () => {
      for (const character of ACCEPTED) {
        const result = await publish(hub.url, build(character), { token: publisherToken() });
        assert.equal(result.status, 200, `${field} with ${name(character)}: ${result.body}`);
      }
    });
  }
});
