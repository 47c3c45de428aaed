/*
 * What a view (message list, status view, dead letters) may keep and read of stored entries:
 * one budget per request, shared by its reads across partitions and queues
 * (redis/read-range.ts; docs/security.md, "Broker limits").
 */

/** Bytes of entries a view keeps (the first entry always comes). */
const VIEW_BYTES = 32 * 1024 * 1024;
/** Bytes of entries a view reads in all, kept or not (what Redis sends it). */
const VIEW_READ_BYTES = 256 * 1024 * 1024;

/** What a view may still keep and read: shared by its reads, so that together they stay within it. */
export class ReadBudget {
  /** Whether a read stopped for the budget: the view shows less than it would, its counts are lower bounds. */
  exhausted = false;
  private held = 0;
  private read = 0;

  constructor(
    private readonly holdBytes: number = VIEW_BYTES,
    private readonly readBytes: number = VIEW_READ_BYTES,
  ) {}

  /** Nothing more is kept. */
  get full(): boolean {
    return this.held >= this.holdBytes;
  }

  /** Nothing more is read. */
  get drained(): boolean {
    return this.read >= this.readBytes;
  }

  hold(bytes: number): void {
    this.held += bytes;
  }

  spend(bytes: number): void {
    this.read += bytes;
  }
}
