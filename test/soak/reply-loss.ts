import { setTimeout as sleep } from 'node:timers/promises';
import type { ReplyLossProxy, RequestPredicate } from '@herald/testkit';

/** Operations that must succeed between two lost replies. */
const PROGRESS_BETWEEN_LOSSES = 20;

/**
 * Loses the reply of one matching request at a time while `running()`: the next only after
 * `pauseMs` and once `progress()` grew by a few operations. Without that second condition a
 * lone client retrying one request meets a fresh trap at every retry and never gets through.
 */
export async function loseRepliesWhile(
  proxy: ReplyLossProxy,
  predicate: RequestPredicate,
  running: () => boolean,
  progress: () => number,
  pauseMs: number,
): Promise<void> {
  let trap: Promise<void> | undefined;
  let fired = false;
  while (running()) {
    trap ??= proxy.loseNextReply(predicate).then(() => {
      trap = undefined;
      fired = true;
    });
    // The trap stays armed across idle spells; look at `running()` now and then.
    await Promise.race([trap, sleep(500)]);
    if (!fired) continue;
    fired = false;
    const mark = progress();
    await sleep(pauseMs);
    while (running() && progress() < mark + PROGRESS_BETWEEN_LOSSES) await sleep(50);
  }
}

/** A script call (EVALSHA or EVAL) with an argument that contains `marker` (a key's hash tag). */
export function scriptTouching(marker: string): RequestPredicate {
  return (request) =>
    (request[0] === 'evalsha' || request[0] === 'eval') &&
    request.some((argument) => argument.includes(marker));
}
