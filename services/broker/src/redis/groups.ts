/*
 * Consumer groups on the Redis backend: listing (the `groups` hash), lua/seek-1.lua and
 * lua/delete-group-1.lua.
 */
import { positionBefore } from '../identifiers.js';
import type { SeekTarget } from '../storage.js';
import { decode, encode, type RedisBackend } from './context.js';

export async function groupsOf(backend: RedisBackend, queue: string): Promise<string[]> {
  return (await backend.redis.hkeys(`${backend.base(queue)}groups`)).map(decode).sort();
}

/** Moves a group's position in one partition or all (its leases are dropped); returns how many. */
export async function seek(
  backend: RedisBackend,
  queue: string,
  group: string,
  partition: string | undefined,
  target: SeekTarget,
): Promise<number> {
  const base = backend.base(queue);
  const position = 'toEnd' in target ? 'end' : positionBefore(target.timestamp);
  const moved = await backend.run<number>(
    'seek',
    [base],
    [encode(group), partition === undefined ? '' : encode(partition), position],
  );
  backend.notify([queue]);
  return moved;
}

export async function deleteGroup(backend: RedisBackend, queue: string, group: string): Promise<boolean> {
  const base = backend.base(queue);
  // Read first as well: a resent script (its first reply lost) finds no group and answers 0.
  const existed = await backend.redis.hexists(`${base}groups`, encode(group));
  return (await backend.run<number>('delete-group', [base], [encode(group)])) === 1 || existed === 1;
}
