import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { type MonitoredCommand, parseMonitorLine, RedisMonitor, RedisServer, waitFor } from '../src/index.js';

describe('RedisMonitor', () => {
  let server: RedisServer;
  before(async () => {
    server = await RedisServer.start({ extraArguments: ['--user', 'watcher', 'on', '>s3 cr"ét', '+@all'] });
  });
  after(async () => {
    await server.destroy();
  });

  /** Starts a monitor and waits until it has reported an ECHO of `marker`. */
  async function monitorSees(url: string, marker: string): Promise<MonitoredCommand[]> {
    const seen: MonitoredCommand[] = [];
    let reached: () => void = () => undefined;
    const echoed = new Promise<void>((resolve) => {
      reached = resolve;
    });
    const monitor = await RedisMonitor.start(url, (command) => {
      seen.push(command);
      if (command[0] === 'echo' && command[1] === marker) reached();
    });
    const client = new Redis(server.url);
    try {
      await client.echo(marker);
      await echoed;
    } finally {
      client.disconnect();
      monitor.stop();
    }
    return seen;
  }

  test('starts while other clients keep Redis busy, and reports their commands', async () => {
    // ioredis's monitor() threw "Command queue state error" from its socket here, within a few
    // starts, when a busy client's command followed MONITOR's +OK in the same read.
    const busy = new Redis(server.url);
    // Connected first: at start 0 the load must already run (CI once echoed the marker while the
    // busy client was still connecting, and start 0 saw no INFO).
    await busy.info('server');
    let stopping = false;
    const load = (async () => {
      while (!stopping) await Promise.all(Array.from({ length: 20 }, () => busy.info('server')));
    })();
    try {
      for (let start = 0; start < 50; start++) {
        const seen = await monitorSees(server.url, `marker-${start}`);
        assert.ok(
          seen.some((command) => command[0] === 'info' && command[1] === 'server'),
          `start ${start} reported the busy client's INFO`,
        );
      }
    } finally {
      stopping = true;
      await load;
      busy.disconnect();
    }
  });

  test('authenticates as the URL says, whatever the password holds', async () => {
    const seen = await monitorSees(
      `redis://watcher:${encodeURIComponent('s3 cr"ét')}@127.0.0.1:${server.port}`,
      'as-watcher',
    );
    assert.ok(seen.some((command) => command.join(' ') === 'echo as-watcher'));
    await assert.rejects(
      RedisMonitor.start(`redis://watcher:wrong@127.0.0.1:${server.port}`, () => undefined),
      /MONITOR on 127\.0\.0\.1:\d+: -WRONGPASS/,
    );
  });

  test('reports arguments byte for byte, whatever they hold', async () => {
    const awkward = ['say "hi"', 'back\\slash', 'two\nlines\r\ttab', 'café ✓', '\u0007\b\u0000'];
    const client = new Redis(server.url);
    await client.ping(); // its ready check (INFO) done before the monitor starts
    const seen: MonitoredCommand[] = [];
    const monitor = await RedisMonitor.start(server.url, (command) => seen.push(command));
    try {
      await client.call('echo', awkward.join('|'));
      await client.call('mset', 'a', awkward[0] as string, 'b', awkward[3] as string);
      await client.echo('done');
      await waitFor(() => seen.some((command) => command[1] === 'done'), {
        what: 'the monitor to report ECHO done',
      });
    } finally {
      monitor.stop();
      client.disconnect();
    }
    assert.deepEqual(
      seen.filter((command) => command[0] !== 'echo' || command[1] !== 'done'),
      [
        ['echo', awkward.join('|')],
        ['mset', 'a', awkward[0], 'b', awkward[3]],
      ],
    );
  });
});

test('parseMonitorLine: the time and client are dropped, an empty argument kept', () => {
  assert.deepEqual(parseMonitorLine('1796314539.228332 [0 127.0.0.1:57326] "set" "" "\\x00\\xc3\\xa9"'), [
    'set',
    '',
    '\u0000é',
  ]);
  assert.deepEqual(parseMonitorLine('1796314539.228332 [0 lua] "get" "k"'), ['get', 'k']);
});
