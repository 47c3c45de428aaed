/**
 * `reply`, or a rejection `no <what> reply within <ms> ms` when it has not settled in time: for the
 * calls that must not wait for a Redis that stopped answering (probes, readiness, shutdown).
 */
export function replyWithin<T>(reply: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no ${what} reply within ${ms} ms`)), ms);
  });
  return Promise.race([reply, bound]).finally(() => clearTimeout(timer));
}
