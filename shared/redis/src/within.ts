/** A call that did not settle within its bound (`replyWithin`). */
export class DeadlineExceededError extends Error {
  override readonly name = 'DeadlineExceededError';
}

/**
 * `reply`, or a rejection `no <what> reply within <ms> ms` (a `DeadlineExceededError`) when it has
 * not settled in time: the one deadline helper for calls that must not wait for a peer that
 * stopped answering (probes, readiness, shutdown steps). The timer is cleared either way.
 */
export function replyWithin<T>(reply: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlineExceededError(`no ${what} reply within ${ms} ms`)), ms);
  });
  return Promise.race([reply, bound]).finally(() => clearTimeout(timer));
}
