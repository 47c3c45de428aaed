/* The clocks' timers: node code waits on its clock, so a test clock decides when a timer fires. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { KeyClock, systemClock } from '../src/index.js';

test('a KeyClock timer fires when the clock reaches it, never before, earliest first', async () => {
  const clock = new KeyClock(1000);
  const fired: string[] = [];
  clock.timer(1500, () => fired.push('late'));
  clock.timer(1200, () => fired.push('early'));
  clock.timer(1200, () => fired.push('early, set second'));
  const cancel = clock.timer(1100, () => fired.push('cancelled'));
  cancel();
  await clock.advance(199);
  await nextTurn();
  assert.deepEqual(fired, []);
  await clock.advance(1);
  assert.deepEqual(fired, ['early', 'early, set second']);
  await clock.set(2000);
  assert.deepEqual(fired, ['early', 'early, set second', 'late']);
  await clock.advance(1000);
  assert.equal(fired.length, 3, 'a timer fires once');
});

test('a KeyClock timer already due fires on a later turn, not inside timer()', async () => {
  const clock = new KeyClock(1000);
  let fired = false;
  clock.timer(1000, () => {
    fired = true;
  });
  assert.equal(fired, false);
  await nextTurn();
  assert.equal(fired, true);
});

test('the system clock runs a timer by the machine time and cancels it', async () => {
  // Its timers are unref'd: this interval keeps the test's event loop alive meanwhile.
  const alive = setInterval(() => undefined, 1000);
  try {
    let cancelledFired = false;
    systemClock.timer(Date.now(), () => {
      cancelledFired = true;
    })();
    await new Promise<void>((resolve) => systemClock.timer(Date.now() + 5, resolve));
    await nextTurn();
    assert.equal(cancelledFired, false);
  } finally {
    clearInterval(alive);
  }
});

test("a system-clock timer never keeps a process alive on its own (unref'd)", () => {
  const script = `import { systemClock } from '@herald/redis';
systemClock.timer(Date.now() + 60_000, () => process.exit(3));`;
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  assert.equal(child.status, 0, child.stderr);
});
