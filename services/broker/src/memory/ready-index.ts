/**
 * The in-process counterpart of the `ready:<g>` sorted sets (lua/includes/broker.lua): the
 * partitions of one consumer group keyed by the time (ms) the group may find work there, so a
 * pop finds due partitions without scanning all of them.
 */

/**
 * Heap order: earliest first, ties by the partition's URI-encoded name, the order of the
 * Redis backend's ready set (a sorted set of encoded names), so both pick the same partitions.
 */
function readyBefore(a: [number, string], b: [number, string]): boolean {
  if (a[0] !== b[0]) return a[0] < b[0];
  return encodeURIComponent(a[1]) < encodeURIComponent(b[1]);
}

export class ReadyIndex {
  private readonly scores = new Map<string, number>();
  private heap: [number, string][] = [];

  has(partition: string): boolean {
    return this.scores.has(partition);
  }

  set(partition: string, at: number, onlyIfAbsent = false): void {
    if (onlyIfAbsent && this.scores.has(partition)) return;
    if (this.scores.get(partition) === at) return;
    this.scores.set(partition, at);
    this.push([at, partition]);
  }

  remove(partition: string): void {
    this.scores.delete(partition);
  }

  /** Up to `limit` partitions due at `now`, lowest score first; the caller re-sets or removes each. */
  due(now: number, limit: number): string[] {
    const out: string[] = [];
    const seen = new Set<string>();
    while (out.length < limit && this.heap.length > 0) {
      const top = this.heap[0] as [number, string];
      if (this.scores.get(top[1]) !== top[0] || seen.has(top[1])) {
        this.pop();
        continue;
      }
      if (top[0] > now) break;
      this.pop();
      seen.add(top[1]);
      out.push(top[1]);
    }
    // Back in the heap: a partition the caller does not touch stays due.
    for (const partition of out) this.push([this.scores.get(partition) as number, partition]);
    return out;
  }

  first(): number {
    while (this.heap.length > 0) {
      const top = this.heap[0] as [number, string];
      if (this.scores.get(top[1]) === top[0]) return top[0];
      this.pop();
    }
    return 0;
  }

  members(limit: number): string[] {
    return [...this.scores.keys()].slice(0, limit);
  }

  get size(): number {
    return this.scores.size;
  }

  private push(entry: [number, string]): void {
    const heap = this.heap;
    heap.push(entry);
    let index = heap.length - 1;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if (!readyBefore(entry, heap[parent] as [number, string])) break;
      heap[index] = heap[parent] as [number, string];
      index = parent;
    }
    heap[index] = entry;
  }

  private pop(): void {
    const heap = this.heap;
    const last = heap.pop() as [number, string];
    if (heap.length === 0) return;
    let index = 0;
    for (;;) {
      const left = index * 2 + 1;
      if (left >= heap.length) break;
      const right = left + 1;
      const child =
        right < heap.length && readyBefore(heap[right] as [number, string], heap[left] as [number, string])
          ? right
          : left;
      if (!readyBefore(heap[child] as [number, string], last)) break;
      heap[index] = heap[child] as [number, string];
      index = child;
    }
    heap[index] = last;
  }
}
