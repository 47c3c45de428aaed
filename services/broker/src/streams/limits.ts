/**
 * Bounds of the streams API (docs/security.md, "Limits", streams table). State is client data
 * kept until the query is reset: per-shard bounds keep one (query, partition) shard readable in
 * one state/get answer, and a cycle's lists keep one cycle's Lua step short.
 */
export const STREAMS_LIMITS = {
  /** Registered queries (names): registration of one more is refused (409). */
  maxQueries: 10_000,
  /** A state key and a state/get `key_prefix` (`config_hash` is bounded as a name: 512). */
  maxStateKeyLength: 1024,
  /** One state value, serialized. */
  maxStateValueBytes: 1024 * 1024,
  /** State ops in one cycle. */
  maxStateOps: 10_000,
  /** Sink push items in one cycle. */
  maxCyclePushItems: 10_000,
  /** Keys asked for in one state/get. */
  maxStateKeysPerGet: 10_000,
  /** Rows of one (query, partition) shard: a cycle that would exceed it applies nothing. */
  maxStateRowsPerShard: 100_000,
  /** Serialized bytes (keys and values) of one shard: a cycle that would exceed it applies nothing. */
  maxStateBytesPerShard: 32 * 1024 * 1024,
  /** How long (s) a committed cycle's answer is kept, so a resent cycle is answered, not re-applied. */
  cycleMemorySeconds: 300,
} as const;
