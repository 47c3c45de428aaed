/* The request parser: commands whole whatever the chunks they arrive in. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RequestParser } from '../src/resp.js';

function request(...parts: string[]): Buffer {
  const head = `*${parts.length}\r\n`;
  return Buffer.from(head + parts.map((part) => `$${Buffer.byteLength(part)}\r\n${part}\r\n`).join(''));
}

function feedIn(parser: RequestParser, bytes: Buffer, size: number): string[][] {
  const commands: string[][] = [];
  for (let start = 0; start < bytes.length; start += size)
    commands.push(...parser.feed(bytes.subarray(start, start + size)));
  return commands;
}

test('a request split at every byte, or in large pieces, parses to the same commands', () => {
  const big = 'é'.repeat(70_000);
  const bytes = Buffer.concat([request('SET', 'k', big), request('GET', 'k'), Buffer.from('PING\r\n')]);
  const expected = [['SET', 'k', big], ['GET', 'k'], ['PING']];
  for (const size of [1, 7, 1000, 65_536, bytes.length]) {
    assert.deepEqual(feedIn(new RequestParser(), bytes, size), expected, `chunks of ${size} bytes`);
  }
});

test('a large argument is joined once its announced length has arrived, then parsing goes on', () => {
  const parser = new RequestParser();
  const bytes = Buffer.concat([request('SET', 'k', 'x'.repeat(200_000)), request('DEL', 'k')]);
  const cut = bytes.length - request('DEL', 'k').length - 10;
  assert.deepEqual(feedIn(parser, bytes.subarray(0, cut), 4096), []);
  const rest = parser.feed(bytes.subarray(cut));
  assert.deepEqual(
    rest.map((command) => command[0]),
    ['SET', 'DEL'],
  );
  assert.equal(rest[0]?.[2]?.length, 200_000);
});
