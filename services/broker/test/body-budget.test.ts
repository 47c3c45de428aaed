/*
 * The node's budget of large request bodies in flight (src/body-budget.ts; docs/security.md,
 * "Broker limits"). Eight concurrent pushes of 16 MiB took one node to 940 MB before it: a body
 * costs 7–8× its size while it is handled. The class under a test clock, then the route: a body
 * that finds no room waits unread, goes when room comes back, and is answered 503 with
 * Retry-After once its wait runs out, nothing of it stored.
 */
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { KeyClock } from '@herald/redis';
import { waitFor } from '@herald/testkit';
import { BodyBudget, LARGE_BODY_BYTES, largeBodyBytes, popAnswerBytes } from '../src/body-budget.js';
import type { Broker } from '../src/index.js';
import { type BrokerClient, client, queueName, startTestBroker } from './helpers.js';

const MIB = 1024 * 1024;

/** A settled flag for a promise, read without awaiting it. */
function track(promise: Promise<boolean>): { settled: boolean; value: boolean | undefined } {
  const state: { settled: boolean; value: boolean | undefined } = { settled: false, value: undefined };
  promise.then((value) => {
    state.settled = true;
    state.value = value;
  });
  return state;
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('BodyBudget', () => {
  test('bodies that fit go at once; the next waits, and goes in arrival order as room comes back', async () => {
    const budget = new BodyBudget(10 * MIB, 1000, new KeyClock(0));
    const a = budget.request(6 * MIB);
    const b = budget.request(4 * MIB);
    assert.equal(await a.admitted, true);
    assert.equal(await b.admitted, true);
    assert.equal(budget.bytesInFlight, 10 * MIB);
    const c = track(budget.request(5 * MIB).admitted);
    // Fits now, but c came first: no overtaking (a large body would starve behind small ones).
    const d = track(budget.request(2 * MIB).admitted);
    await turn();
    assert.deepEqual([c.settled, d.settled, budget.waiting], [false, false, 2]);
    b.release();
    await turn();
    assert.deepEqual([c.settled, d.settled], [false, false], '4 MiB back: c (5 MiB) still does not fit');
    a.release();
    await turn();
    assert.deepEqual([c.value, d.value, budget.bytesInFlight, budget.waiting], [true, true, 7 * MIB, 0]);
  });

  test('a body larger than the whole budget goes alone', async () => {
    const budget = new BodyBudget(10 * MIB, 1000, new KeyClock(0));
    const small = budget.request(2 * MIB);
    const large = track(budget.request(64 * MIB).admitted);
    await turn();
    assert.equal(large.settled, false);
    small.release();
    await turn();
    assert.equal(large.value, true);
    assert.equal(budget.bytesInFlight, 64 * MIB);
  });

  test('a wait that runs out answers false and lets the ones behind it in; releases are idempotent', async () => {
    const clock = new KeyClock(0);
    const budget = new BodyBudget(10 * MIB, 1000, clock);
    const holder = budget.request(8 * MIB);
    const first = budget.request(8 * MIB);
    const firstState = track(first.admitted);
    await clock.advance(500);
    const second = track(budget.request(2 * MIB).admitted);
    await turn();
    assert.deepEqual([firstState.settled, second.settled], [false, false]);
    await clock.advance(500);
    await turn();
    assert.equal(firstState.value, false, 'the first waited its 1000 ms');
    assert.equal(second.value, true, 'then the second fits beside the holder');
    first.release();
    holder.release();
    holder.release();
    assert.equal(budget.bytesInFlight, 2 * MIB);
  });

  test('a body that leaves while waiting (its client went away) frees its place', async () => {
    const budget = new BodyBudget(10 * MIB, 1000, new KeyClock(0));
    const holder = budget.request(9 * MIB);
    const gone = budget.request(5 * MIB);
    const goneState = track(gone.admitted);
    const next = track(budget.request(1 * MIB).admitted);
    gone.release();
    await turn();
    assert.deepEqual([goneState.value, next.value, budget.waiting], [false, true, 0]);
    holder.release();
    assert.equal(budget.bytesInFlight, 1 * MIB);
  });

  test("what a pop's answer holds: its batch of the queue's largest record, at most a pop's 16 MiB unless one is larger", () => {
    assert.equal(popAnswerBytes(0, 100), 0, 'no large record known');
    assert.equal(popAnswerBytes(LARGE_BODY_BYTES, 100), 0);
    assert.equal(popAnswerBytes(2 * MIB, 1), 2 * MIB);
    assert.equal(popAnswerBytes(2 * MIB, 5), 10 * MIB);
    assert.equal(popAnswerBytes(2 * MIB, 100), 16 * MIB);
    assert.equal(popAnswerBytes(64 * MIB, 100), 64 * MIB, 'a larger record comes alone');
  });

  test('what a request holds: by Content-Length, over 1 MiB, within the body limit', () => {
    const limit = 256 * MIB;
    assert.equal(largeBodyBytes({}, limit, 32 * MIB), 0, 'no body');
    assert.equal(largeBodyBytes({ 'content-length': String(LARGE_BODY_BYTES) }, limit, 32 * MIB), 0);
    assert.equal(
      largeBodyBytes({ 'content-length': String(LARGE_BODY_BYTES + 1) }, limit, 32 * MIB),
      MIB + 1,
    );
    assert.equal(
      largeBodyBytes({ 'content-length': String(limit + 1) }, limit, 32 * MIB),
      0,
      'refused 413 at once',
    );
    assert.equal(largeBodyBytes({ 'content-length': 'x' }, limit, 32 * MIB), 0, 'refused 400 by node');
    assert.equal(
      largeBodyBytes({ 'transfer-encoding': 'chunked' }, limit, 32 * MIB),
      32 * MIB,
      'unknown: alone',
    );
    assert.equal(largeBodyBytes({ 'transfer-encoding': 'chunked' }, 4 * MIB, 32 * MIB), 4 * MIB);
  });
});

/** A push whose body the test sends in two parts: headers and all but the last byte, then the rest. */
class HeldPush {
  private readonly socket: Socket;
  private readonly answer: Promise<string>;
  private readonly tail: string;
  /** The body's Content-Length: what it holds of the budget. */
  readonly bytes: number;

  constructor(port: number, queue: string, blobBytes: number, label: string) {
    const body = JSON.stringify({
      items: [{ queue, partition: 'p', transactionId: label, payload: { blob: 'x'.repeat(blobBytes) } }],
    });
    this.tail = body.slice(-1);
    this.bytes = Buffer.byteLength(body);
    this.socket = connect(port, '127.0.0.1');
    this.socket.write(
      `POST /api/v1/push HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${this.bytes}\r\nconnection: close\r\n\r\n`,
    );
    this.socket.write(body.slice(0, -1));
    this.answer = new Promise((resolve, reject) => {
      let text = '';
      this.socket.setEncoding('utf8');
      this.socket.on('data', (chunk) => {
        text += chunk;
      });
      this.socket.on('end', () => resolve(text));
      this.socket.on('error', reject);
    });
  }

  /** Sends the last byte and resolves with the raw HTTP answer. */
  finish(): Promise<string> {
    this.socket.write(this.tail);
    return this.answer;
  }

  /** The answer, for a push refused before its body was read. */
  get reply(): Promise<string> {
    return this.answer;
  }
}

async function metric(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((row) => row.startsWith(`${name}{`) || row.startsWith(`${name} `));
  assert.ok(line, `${name} in /metrics`);
  return Number(line.split(' ').pop());
}

describe('the body budget on the push route (memory)', () => {
  const clock = new KeyClock(Date.now());
  let broker: Broker;
  let api: BrokerClient;
  let port: number;
  before(async () => {
    broker = await startTestBroker(
      'memory',
      { BROKER_BODY_BUDGET_BYTES: String(3 * MIB), BROKER_BODY_BUDGET_WAIT: '5000' },
      clock,
    );
    api = client(broker.url);
    port = Number(new URL(broker.url).port);
  });
  after(() => broker.close());

  /** Waits for the node to see what the test's sockets sent (the metric follows the hook). */
  async function waitForMetric(name: string, value: number): Promise<void> {
    await waitFor(async () => (await metric(broker.url, name)) === value, { what: `${name} ${value}` });
  }

  test('a body with no room waits unread and is stored once the first is done', async () => {
    const queue = queueName('budget');
    const first = new HeldPush(port, queue, 2 * MIB, 'first');
    await waitForMetric('herald_broker_body_bytes_in_flight', first.bytes);
    const second = new HeldPush(port, queue, 2 * MIB, 'second');
    await waitForMetric('herald_broker_bodies_waiting', 1);
    assert.match(await first.finish(), /^HTTP\/1\.1 201 /);
    assert.match(await second.finish(), /^HTTP\/1\.1 201 /);
    await waitForMetric('herald_broker_body_bytes_in_flight', 0);
    const popped = await api.pop(queue, 'batch=10&wait=false');
    assert.equal((popped.body as { messages: unknown[] }).messages.length, 2);
  });

  test('past its wait, a body is answered 503 with Retry-After, and nothing of it is stored', async () => {
    const queue = queueName('budget-refused');
    const first = new HeldPush(port, queue, 2 * MIB, 'first');
    await waitForMetric('herald_broker_body_bytes_in_flight', first.bytes);
    const refusalsBefore = await metric(broker.url, 'herald_broker_body_budget_refusals_total');
    const second = new HeldPush(port, queue, 2 * MIB, 'second');
    await waitForMetric('herald_broker_bodies_waiting', 1);
    await clock.advance(5000);
    const refused = await second.reply;
    assert.match(refused, /^HTTP\/1\.1 503 /);
    assert.match(refused, /\r\nretry-after: 1\r\n/i);
    assert.match(refused, /"error":"Broker node busy: request bodies in flight fill its 3145728-byte budget/);
    assert.equal(await metric(broker.url, 'herald_broker_body_budget_refusals_total'), refusalsBefore + 1);
    assert.match(await first.finish(), /^HTTP\/1\.1 201 /);
    const popped = await api.pop(queue, 'batch=10&wait=false');
    assert.deepEqual(
      (popped.body as { messages: { transactionId: string }[] }).messages.map(
        (message) => message.transactionId,
      ),
      ['first'],
    );
  });

  test("a pop of large messages waits for its answer's room; past its wait, 503 and nothing leased", async () => {
    const queue = queueName('budget-pop');
    assert.equal(
      (await api.push([{ queue, transactionId: 'large', payload: { blob: 'y'.repeat(2 * MIB) } }])).status,
      201,
    );
    await waitForMetric('herald_broker_body_bytes_in_flight', 0);
    // A held push takes 2 MiB of the 3 MiB budget; the pop's answer, one record of 2 MiB, does not fit.
    const holder = new HeldPush(port, queueName('budget-holder'), 2 * MIB, 'holder');
    await waitForMetric('herald_broker_body_bytes_in_flight', holder.bytes);
    const refusalsBefore = await metric(broker.url, 'herald_broker_body_budget_refusals_total');
    const refused = api.pop(queue, 'batch=1&wait=false');
    await waitForMetric('herald_broker_bodies_waiting', 1);
    await clock.advance(5000);
    assert.equal((await refused).status, 503);
    assert.equal(await metric(broker.url, 'herald_broker_body_budget_refusals_total'), refusalsBefore + 1);
    const waiting = api.pop(queue, 'batch=1&wait=false');
    await waitForMetric('herald_broker_bodies_waiting', 1);
    assert.match(await holder.finish(), /^HTTP\/1\.1 201 /);
    const popped = await waiting;
    assert.equal(popped.status, 200);
    assert.deepEqual(
      (popped.body as { messages: { transactionId: string; retryCount: number }[] }).messages.map(
        (message) => [message.transactionId, message.retryCount],
      ),
      [['large', 0]],
      'the refused pop leased nothing',
    );
    await waitForMetric('herald_broker_body_bytes_in_flight', 0);
  });
});
