import { once } from 'node:events';
import { connect, createServer, type Server, type Socket } from 'node:net';

/** One request as Redis sees it: the command name lower-cased, then its arguments as text. */
export type RedisRequest = readonly string[];

/** Decides whether the reply to a request is swallowed; `index` counts requests over all connections. */
export type RequestPredicate = (request: RedisRequest, index: number) => boolean;

interface Trap {
  readonly predicate: RequestPredicate;
  readonly resolve: (request: RedisRequest) => void;
}

/**
 * Length in bytes of the first complete RESP value in `buffer` from `start`, or -1 when more
 * bytes are needed. RESP2 plus the RESP3 scalar and aggregate types, enough to count replies.
 */
function valueEnd(buffer: Buffer, start: number): number {
  if (start >= buffer.length) return -1;
  const lineEnd = buffer.indexOf('\r\n', start);
  if (lineEnd === -1) return -1;
  const type = String.fromCharCode(buffer[start] as number);
  const header = buffer.toString('latin1', start + 1, lineEnd);
  switch (type) {
    case '$':
    case '!':
    case '=': {
      const length = Number(header);
      if (length < 0) return lineEnd + 2;
      const end = lineEnd + 2 + length + 2;
      return end <= buffer.length ? end : -1;
    }
    case '*':
    case '~':
    case '>':
    case '%':
    case '|': {
      const count = Number(header);
      if (count < 0) return lineEnd + 2;
      const elements = type === '%' || type === '|' ? count * 2 : count;
      let position = lineEnd + 2;
      for (let i = 0; i < elements; i++) {
        position = valueEnd(buffer, position);
        if (position === -1) return -1;
      }
      return position;
    }
    default:
      // + - : _ , # ( and anything else: one line.
      return lineEnd + 2;
  }
}

/** Parses one request (a RESP array of bulk strings, or an inline command) at `start`. */
function parseRequest(buffer: Buffer, start: number): { end: number; request: string[] } | undefined {
  if (buffer[start] !== 0x2a /* '*' */) {
    const lineEnd = buffer.indexOf('\r\n', start);
    if (lineEnd === -1) return undefined;
    const words = buffer.toString('utf8', start, lineEnd).trim().split(/\s+/);
    return { end: lineEnd + 2, request: words };
  }
  const end = valueEnd(buffer, start);
  if (end === -1) return undefined;
  const request: string[] = [];
  let position = buffer.indexOf('\r\n', start) + 2;
  while (position < end) {
    const lineEnd = buffer.indexOf('\r\n', position);
    const length = Number(buffer.toString('latin1', position + 1, lineEnd));
    request.push(buffer.toString('utf8', lineEnd + 2, lineEnd + 2 + length));
    position = lineEnd + 2 + length + 2;
  }
  return { end, request };
}

/**
 * A TCP proxy between a node and a (private) Redis that loses chosen replies, to drive ioredis'
 * resends deterministically: the request reaches Redis and runs, its reply is swallowed and the
 * client's connection is dropped, so ioredis reconnects and sends the command again. Replies
 * are otherwise forwarded in order, one per request (pipelining preserved); a connection that
 * subscribes becomes a plain pipe (pushed messages have no request).
 */
export class ReplyLossProxy {
  private readonly traps: Trap[] = [];
  private readonly sockets = new Set<Socket>();
  private requests = 0;
  /** Every request seen, in arrival order (for assertions on what was resent). */
  readonly seen: RedisRequest[] = [];
  /** Replies swallowed so far. */
  lost = 0;

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(target: { host?: string; port: number }): Promise<ReplyLossProxy> {
    const server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const address = server.address();
    if (!address || typeof address === 'string') throw new Error('proxy has no port');
    const proxy = new ReplyLossProxy(server, address.port);
    server.on('connection', (client) => proxy.attach(client, target.host ?? '127.0.0.1', target.port));
    return proxy;
  }

  /** `redis://127.0.0.1:<port>` of the proxy. */
  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /**
   * Swallows the reply to the next request matching `predicate` and drops that connection.
   * Resolves with the request once its reply was lost (Redis has applied it by then). An error
   * reply (e.g. NOSCRIPT) is forwarded and the trap stays armed: only a request that ran counts.
   * So does a request whose connection closed before its reply came (another trap swallowed an
   * earlier reply on it, or Redis went away): it waits for the next match, such as the resend.
   */
  loseNextReply(predicate: RequestPredicate): Promise<RedisRequest> {
    return new Promise((resolve) => this.traps.push({ predicate, resolve }));
  }

  /** Drops every client connection now (an abrupt network cut without a lost reply). */
  dropConnections(): void {
    for (const socket of this.sockets) socket.destroy();
  }

  async close(): Promise<void> {
    this.dropConnections();
    this.server.close();
    await once(this.server, 'close').catch(() => undefined);
  }

  private attach(client: Socket, host: string, port: number): void {
    const upstream = connect(port, host);
    this.sockets.add(client);
    this.sockets.add(upstream);
    // Requests awaiting a reply, in order: whether the reply is to be swallowed.
    const pending: { request: RedisRequest; trap: Trap | undefined }[] = [];
    let requestBuffer = Buffer.alloc(0);
    let replyBuffer = Buffer.alloc(0);
    let passthrough = false;
    const close = () => {
      // A trapped request whose reply never came here (the connection closed first: another
      // trap's loss, a killed Redis or node) did not fire its trap: armed again for the resend.
      const unfired = pending.splice(0).flatMap((entry) => (entry.trap ? [entry.trap] : []));
      this.traps.unshift(...unfired);
      client.destroy();
      upstream.destroy();
      this.sockets.delete(client);
      this.sockets.delete(upstream);
    };
    client.on('error', close);
    upstream.on('error', close);
    client.on('close', close);
    upstream.on('close', close);

    client.on('data', (chunk: Buffer) => {
      upstream.write(chunk);
      if (passthrough) return;
      requestBuffer = Buffer.concat([requestBuffer, chunk]);
      let start = 0;
      for (;;) {
        const parsed = parseRequest(requestBuffer, start);
        if (!parsed) break;
        start = parsed.end;
        const request = [(parsed.request[0] ?? '').toLowerCase(), ...parsed.request.slice(1)];
        this.seen.push(request);
        const index = this.requests++;
        const trapIndex = this.traps.findIndex((trap) => trap.predicate(request, index));
        const trap = trapIndex === -1 ? undefined : this.traps.splice(trapIndex, 1)[0];
        pending.push({ request, trap });
        if (request[0] === 'subscribe' || request[0] === 'psubscribe' || request[0] === 'ssubscribe') {
          passthrough = true;
          return;
        }
      }
      requestBuffer = requestBuffer.subarray(start);
    });

    upstream.on('data', (chunk: Buffer) => {
      if (passthrough) {
        client.write(chunk);
        return;
      }
      replyBuffer = Buffer.concat([replyBuffer, chunk]);
      let start = 0;
      for (;;) {
        const end = valueEnd(replyBuffer, start);
        if (end === -1) break;
        const entry = pending.shift();
        if (entry?.trap && replyBuffer[start] === 0x2d /* '-' */) {
          // An error reply (NOSCRIPT before the EVAL fallback): nothing ran, keep the trap armed.
          this.traps.unshift(entry.trap);
        } else if (entry?.trap) {
          this.lost++;
          close();
          entry.trap.resolve(entry.request);
          return;
        }
        client.write(replyBuffer.subarray(start, end));
        start = end;
      }
      replyBuffer = replyBuffer.subarray(start);
    });
  }
}

/** A predicate for a script call (EVALSHA by its SHA, or the EVAL fallback by its source). */
export function scriptCall(script: { sha: string; source: string }): RequestPredicate {
  return (request) =>
    (request[0] === 'evalsha' && request[1] === script.sha) ||
    (request[0] === 'eval' && request[1] === script.source);
}
