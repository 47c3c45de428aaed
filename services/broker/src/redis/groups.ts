/*
 * Consumer groups on Redis (the GroupStore role): listing (the `groups` hash), per-partition
 * state (lua/partitions-1.lua, bounded by LIMITS), lua/seek-1.lua and lua/delete-group-1.lua.
 */
import { positionBefore } from '../identifiers.js';
import type { GroupStore, PartitionState, SeekTarget } from '../storage.js';
import { LIMITS } from '../validation.js';
import { decode, encode, type RedisBackend } from './context.js';

type PartitionsReply = [
  string,
  string,
  number,
  string,
  string,
  number,
  [string, number, string, number, number][],
][];

export class RedisGroups implements GroupStore {
  constructor(private readonly backend: RedisBackend) {}

  async list(queue: string): Promise<string[]> {
    return (await this.backend.redis.hkeys(`${this.backend.base(queue)}groups`)).map(decode).sort();
  }

  async partitions(queue: string): Promise<PartitionState[]> {
    const rows = await this.backend.run<PartitionsReply>(
      'partitions',
      [this.backend.base(queue)],
      [
        LIMITS.maxDetailedPartitions,
        LIMITS.partitionLagCount,
        LIMITS.partitionDeadLettersRead,
        LIMITS.detailedViewCountBudget,
      ],
    );
    return rows.map(([partition, partitionId, retained, oldestAt, newestAt, deadLetters, groups]) => ({
      partition: decode(partition),
      partitionId,
      retained: Number(retained),
      oldestAt: Number(oldestAt),
      newestAt: Number(newestAt),
      deadLetters: Number(deadLetters),
      groups: groups.map(([group, lag, oldestPendingAt, leaseActive, leased]) => ({
        group: decode(group),
        lag: Number(lag),
        oldestPendingAt: Number(oldestPendingAt),
        leaseActive: Number(leaseActive) === 1,
        leased: Number(leased),
      })),
    }));
  }

  /** Moves a group's position in one partition or all (its leases are dropped); returns how many. */
  async seek(
    queue: string,
    group: string,
    partition: string | undefined,
    target: SeekTarget,
  ): Promise<number> {
    const position = 'toEnd' in target ? 'end' : positionBefore(target.timestamp);
    const moved = await this.backend.run<number>(
      'seek',
      [this.backend.base(queue)],
      [encode(group), partition === undefined ? '' : encode(partition), position],
    );
    this.backend.notifications.notify([queue]);
    return moved;
  }

  async delete(queue: string, group: string): Promise<boolean> {
    const base = this.backend.base(queue);
    // Read first as well: a resent script (its first reply lost) finds no group and answers 0.
    const existed = await this.backend.redis.hexists(`${base}groups`, encode(group));
    return (await this.backend.run<number>('delete-group', [base], [encode(group)])) === 1 || existed === 1;
  }
}
