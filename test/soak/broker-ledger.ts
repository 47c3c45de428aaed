/**
 * What the broker soak's clients pushed, were delivered and had acknowledged, per partition and
 * sequence number (typed arrays: a million messages cost a few megabytes), and the verdicts
 * drawn from it. Transaction ids are `p<partition>-<seq>`; producers push each partition's
 * sequence numbers in order, one request at a time, so FIFO is defined per partition.
 */
export interface PoppedMessage {
  transactionId: string;
  partitionId: string;
  leaseId: string;
  retryCount: number;
}

export interface LedgerCounts {
  /** Deliveries seen (a message delivered twice counts twice). */
  deliveries: number;
  /** Second and later deliveries of a message whose earlier deliveries were never acknowledged. */
  duplicatesExplained: number;
  /** Second and later deliveries of a message already acknowledged with success. */
  duplicatesUnexplained: number;
  /** First deliveries carrying `retryCount > 0`: a pop whose answer never arrived leased them. */
  unseenLeaseCuts: number;
  /** A delivered batch not contiguous, or one skipping past a message never delivered. */
  fifoViolations: number;
  /** Delivered messages no producer ever sent. */
  neverPushed: number;
}

export class BrokerLedger {
  private readonly deliveries: Uint8Array[];
  private readonly completed: Uint8Array[];
  private readonly maxDelivered: Int32Array;
  /** Per partition, how many of its messages (a prefix: pushed in order) were answered 201. */
  private readonly acknowledged: Int32Array;
  /** Pushes answered 201 (queued, or a duplicate of an earlier attempt). */
  acknowledgedCount = 0;
  readonly counts: LedgerCounts = {
    deliveries: 0,
    duplicatesExplained: 0,
    duplicatesUnexplained: 0,
    unseenLeaseCuts: 0,
    fifoViolations: 0,
    neverPushed: 0,
  };
  /** Messages acknowledged with success (each once). */
  completedCount = 0;
  /** Ack answers that were not a success, by error text. */
  readonly ackRefusals = new Map<string, number>();

  constructor(readonly perPartition: readonly number[]) {
    this.deliveries = perPartition.map((count) => new Uint8Array(count));
    this.completed = perPartition.map((count) => new Uint8Array(count));
    this.maxDelivered = new Int32Array(perPartition.length).fill(-1);
    this.acknowledged = new Int32Array(perPartition.length);
  }

  /** The partition's messages up to (not including) `end` were answered 201. */
  pushed(partition: number, end: number): void {
    this.acknowledgedCount += end - (this.acknowledged[partition] as number);
    this.acknowledged[partition] = end;
  }

  get total(): number {
    return this.perPartition.reduce((sum, count) => sum + count, 0);
  }

  private locate(transactionId: string): [number, number] | undefined {
    const match = /^p(\d+)-(\d+)$/.exec(transactionId);
    if (!match) return undefined;
    const partition = Number(match[1]);
    const seq = Number(match[2]);
    const count = this.perPartition[partition];
    return count !== undefined && seq < count ? [partition, seq] : undefined;
  }

  /**
   * Records one pop answer (messages in answer order); returns, per message, the number of this
   * delivery (1 for the first), which `complete` needs, or 0 for a message never pushed.
   */
  deliver(messages: readonly PoppedMessage[]): number[] {
    const previousInBatch = new Map<string, number>();
    return messages.map((message) => {
      const located = this.locate(message.transactionId);
      this.counts.deliveries += 1;
      if (!located) {
        this.counts.neverPushed += 1;
        return 0;
      }
      const [partition, seq] = located;
      const previous = previousInBatch.get(message.partitionId);
      previousInBatch.set(message.partitionId, seq);
      const maxDelivered = this.maxDelivered[partition] as number;
      // Within a batch, consecutive; a batch may start again at an earlier message (a lease
      // ran out) but never beyond the first message not yet delivered.
      if (previous !== undefined ? seq !== previous + 1 : seq > maxDelivered + 1)
        this.counts.fifoViolations += 1;
      if (seq > maxDelivered) this.maxDelivered[partition] = seq;
      const deliveries = this.deliveries[partition] as Uint8Array;
      const before = deliveries[seq] as number;
      if (before > 0) {
        if (this.completed[partition]?.[seq]) this.counts.duplicatesUnexplained += 1;
        else this.counts.duplicatesExplained += 1;
      } else if (message.retryCount > 0) {
        this.counts.unseenLeaseCuts += 1;
      }
      deliveries[seq] = Math.min(before + 1, 255);
      return before + 1;
    });
  }

  /** An ack of delivery number `delivery` answered success. */
  complete(transactionId: string, delivery: number): void {
    const located = this.locate(transactionId);
    if (!located) return;
    const [partition, seq] = located;
    const completed = this.completed[partition] as Uint8Array;
    if (completed[seq]) return;
    completed[seq] = 1;
    this.completedCount += 1;
    // A later delivery that arrived before this success was taken for a lease cut; it was not.
    const later = (this.deliveries[partition]?.[seq] as number) - delivery;
    if (later > 0) {
      this.counts.duplicatesExplained -= later;
      this.counts.duplicatesUnexplained += later;
    }
  }

  refused(error: string): void {
    this.ackRefusals.set(error, (this.ackRefusals.get(error) ?? 0) + 1);
  }

  /** Acknowledged pushes never completed: [never delivered, delivered but never acknowledged]. */
  unfinished(): [number, number] {
    let neverDelivered = 0;
    let notCompleted = 0;
    this.acknowledged.forEach((count, partition) => {
      const deliveries = this.deliveries[partition] as Uint8Array;
      const completed = this.completed[partition] as Uint8Array;
      for (let seq = 0; seq < count; seq++) {
        if (completed[seq]) continue;
        if (deliveries[seq]) notCompleted += 1;
        else neverDelivered += 1;
      }
    });
    return [neverDelivered, notCompleted];
  }
}
