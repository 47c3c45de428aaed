/**
 * Queues whose scripts are in flight at once when one request or job works on many queues (a
 * push naming thousands of queues, a stats run over every queue). All at once, the last replies
 * waited behind thousands of commands in Redis past the command deadline (COMMAND_TIMEOUT_MS);
 * one at a time, a run paid one round trip per queue. Bounded, each command waits behind at most
 * this many others.
 */
export const QUEUES_IN_FLIGHT = 32;

/** Runs `work` on every entry, at most `limit` at once; rejects with the first failure. */
export async function forEachBounded<T>(
  entries: readonly T[],
  limit: number,
  work: (entry: T, index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, entries.length) }, async () => {
    while (next < entries.length) {
      const index = next++;
      await work(entries[index] as T, index);
    }
  });
  await Promise.all(lanes);
}
