import assert from 'node:assert/strict';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { logDestination, prettyLogLine } from '../src/log-destination.js';

test('prettyLogLine: time, level, service, message, fields; an error stack below; non-JSON as is', () => {
  const time = new Date(2026, 0, 2, 3, 4, 5, 6).getTime();
  const line = JSON.stringify({
    level: 40,
    time,
    pid: 1,
    hostname: 'h',
    service: 'broker',
    msg: 'slow',
    queue: 'q',
  });
  assert.equal(prettyLogLine(line, false), '03:04:05.006 WARN  broker slow queue=q\n');
  const error = JSON.stringify({
    level: 50,
    time,
    service: 'hub',
    msg: 'boom',
    err: { type: 'Error', stack: 'Error: x\n  at y' },
  });
  assert.equal(prettyLogLine(error, false), '03:04:05.006 ERROR hub    boom\n    Error: x\n      at y\n');
  assert.ok(prettyLogLine(line, true).includes('\u001b[33mWARN'));
  assert.equal(prettyLogLine('not json\n'), 'not json\n');
});

test('logDestination: JSON lines as given unless pretty; pretty formats each line', () => {
  const directory = mkdtempSync(join(tmpdir(), 'herald-log-'));
  try {
    const line = `${JSON.stringify({ level: 30, time: 0, service: 'hub', msg: 'hub listening', port: 1 })}\n`;
    for (const pretty of [false, true]) {
      const file = join(directory, `${pretty}.log`);
      const fd = openSync(file, 'w');
      logDestination({ fd, pretty }).write(line);
      closeSync(fd);
      const written = readFileSync(file, 'utf8');
      if (pretty) assert.match(written, /INFO .*hub +hub listening .*port=1/);
      else assert.equal(written, line);
    }
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
});
