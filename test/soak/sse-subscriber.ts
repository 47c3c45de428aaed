import { type ClientRequest, request as httpRequest, type IncomingMessage } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';

/** Per-subscriber verdicts of the hub soak. */
export interface SubscriberCounts {
  received: number;
  /** Updates received a second time. */
  duplicates: number;
  /** Updates received after a later update of the same topic (first receipt only). */
  outOfOrder: number;
  /** Reconnections (each resumed with `Last-Event-ID`). */
  resumes: number;
  /** Answers other than 200 to a (re)connection, e.g. 503 from a node not ready yet. */
  refusedConnections: number;
  /** Updates with an id the publisher never used. */
  neverPublished: number;
}

/**
 * One SSE connection that hears only event ids: `opened` at each comment (the hub's opening one
 * says the subscription is registered), `event` with each event's id. Resolves with the status
 * once the connection ended (200 for a stream that ran), rejects when it could not connect.
 */
export function streamEventIds(
  url: string,
  options: {
    readonly headers?: Record<string, string>;
    readonly lastEventId: string | undefined;
    readonly opened: () => void;
    readonly event: (id: string) => void;
    /** The request, so the caller can cut it. */
    readonly started: (request: ClientRequest) => void;
  },
): Promise<number> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { accept: 'text/event-stream', ...options.headers };
    if (options.lastEventId !== undefined) headers['last-event-id'] = options.lastEventId;
    const request = httpRequest(url, { headers });
    options.started(request);
    request.on('error', reject);
    request.on('response', (response: IncomingMessage) => {
      if (response.statusCode !== 200) {
        response.resume();
        response.on('end', () => resolve(response.statusCode ?? 0));
        return;
      }
      response.setEncoding('utf8');
      let buffer = '';
      let id: string | undefined;
      response.on('data', (chunk: string) => {
        buffer += chunk;
        let newline = buffer.indexOf('\n');
        while (newline !== -1) {
          const line = buffer.slice(0, newline);
          buffer = buffer.slice(newline + 1);
          if (line.startsWith(':')) options.opened();
          else if (line.startsWith('id: ')) id = line.slice(4);
          else if (line === '' && id !== undefined) {
            options.event(id);
            id = undefined;
          }
          newline = buffer.indexOf('\n');
        }
      });
      const end = () => resolve(200);
      response.on('end', end);
      response.on('close', end);
      response.on('error', end);
    });
    request.end();
  });
}

/**
 * An SSE subscriber that behaves like a browser's EventSource: when the stream ends or cannot
 * be opened it reconnects (to the next node) with `Last-Event-ID` set to the last id it received
 * (`earliest` before the first). Update ids are `t<topic>-<seq>`.
 */
export class ResumingSubscriber {
  private readonly seen: Uint8Array[];
  private readonly highest: Int32Array;
  private lastEventId: string | undefined;
  private request: ClientRequest | undefined;
  private stopped = false;
  private running: Promise<void> | undefined;
  readonly counts: SubscriberCounts = {
    received: 0,
    duplicates: 0,
    outOfOrder: 0,
    resumes: 0,
    refusedConnections: 0,
    neverPublished: 0,
  };

  constructor(
    private readonly urls: readonly string[],
    private readonly query: string,
    perTopic: readonly number[],
    private next: number,
  ) {
    this.seen = perTopic.map((count) => new Uint8Array(count));
    this.highest = new Int32Array(perTopic.length).fill(-1);
  }

  /** Resolves once the first stream is open (its opening comment arrived). */
  async start(): Promise<void> {
    let opened!: () => void;
    const open = new Promise<void>((resolve) => {
      opened = resolve;
    });
    this.running = this.loop(opened);
    await open;
  }

  private async loop(opened: () => void): Promise<void> {
    let backoff = 50;
    let first = true;
    while (!this.stopped) {
      if (!first) this.counts.resumes += 1;
      first = false;
      const url = `${this.urls[this.next++ % this.urls.length]}?${this.query}`;
      const status = await this.stream(url, opened).catch(() => 0);
      if (this.stopped) return;
      if (status !== 200) {
        this.counts.refusedConnections += 1;
        await sleep(backoff * (0.5 + Math.random()));
        backoff = Math.min(backoff * 2, 1000);
      } else {
        backoff = 50;
      }
      // Resume from what we have; before the first update, from the whole history.
      this.lastEventId ??= 'earliest';
    }
  }

  /** One connection; resolves with its status once it ended. */
  private stream(url: string, opened: () => void): Promise<number> {
    return streamEventIds(url, {
      headers: { 'x-forwarded-proto': 'https' },
      lastEventId: this.lastEventId,
      opened,
      event: (id) => this.receive(id),
      started: (request) => {
        this.request = request;
      },
    });
  }

  private receive(id: string): void {
    this.lastEventId = id;
    this.counts.received += 1;
    const match = /^t(\d+)-(\d+)$/.exec(id);
    const topic = Number(match?.[1]);
    const seq = Number(match?.[2]);
    const seen = this.seen[topic];
    if (!match || !seen || seq >= seen.length) {
      this.counts.neverPublished += 1;
      return;
    }
    if (seen[seq]) {
      this.counts.duplicates += 1;
      return;
    }
    seen[seq] = 1;
    if (seq < (this.highest[topic] as number)) this.counts.outOfOrder += 1;
    else this.highest[topic] = seq;
  }

  /** Whether this subscriber received update `seq` of `topic`. */
  has(topic: number, seq: number): boolean {
    return this.seen[topic]?.[seq] === 1;
  }

  /** Updates of `topic` below `end` never received. */
  missed(topic: number, end: number): number {
    const seen = this.seen[topic] as Uint8Array;
    let missed = 0;
    for (let seq = 0; seq < end; seq++) if (!seen[seq]) missed += 1;
    return missed;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.request?.destroy();
    await this.running;
  }
}
