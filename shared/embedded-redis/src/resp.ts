/**
 * RESP2, the wire of Redis clients: requests are arrays of bulk strings (what ioredis sends;
 * inline commands are read too), replies are encoded from `Reply`.
 */
import { type Reply, ReplyError, Status } from './reply.js';

const CRLF = Buffer.from('\r\n');

export function encodeReply(reply: Reply, out: Buffer[]): void {
  if (reply === null) out.push(Buffer.from('$-1\r\n'));
  else if (typeof reply === 'number') out.push(Buffer.from(`:${Math.trunc(reply)}\r\n`));
  else if (typeof reply === 'string') {
    const body = Buffer.from(reply);
    out.push(Buffer.from(`$${body.length}\r\n`), body, CRLF);
  } else if (reply instanceof Status) out.push(Buffer.from(`+${reply.text}\r\n`));
  else if (reply instanceof ReplyError) out.push(Buffer.from(`-${reply.text.replace(/[\r\n]+/g, ' ')}\r\n`));
  else {
    out.push(Buffer.from(`*${reply.length}\r\n`));
    for (const item of reply) encodeReply(item, out);
  }
}

/** Bytes in, commands out: keeps a partial request until the rest arrives. */
export class RequestParser {
  private buffer: Buffer = Buffer.alloc(0);
  /** Chunks received while a known-size request is still incomplete, and their bytes. */
  private chunks: Buffer[] = [];
  private held = 0;
  /** Bytes `buffer` must hold before the first request in it can be complete (0: unknown). */
  private needed = 0;

  /**
   * Appends `chunk` and returns every complete command it finishes (name first). A large
   * argument arrives in many chunks: they are kept aside until its announced length is there,
   * then joined and parsed once (linear in its size, not quadratic).
   */
  feed(chunk: Buffer): string[][] {
    if (this.buffer.length + this.held + chunk.length < this.needed) {
      this.chunks.push(chunk);
      this.held += chunk.length;
      return [];
    }
    this.buffer =
      this.buffer.length === 0 && this.chunks.length === 0
        ? chunk
        : Buffer.concat([this.buffer, ...this.chunks, chunk]);
    this.chunks = [];
    this.held = 0;
    this.needed = 0;
    const commands: string[][] = [];
    let offset = 0;
    for (;;) {
      const parsed = this.parse(offset);
      if (!parsed) break;
      offset = parsed.next;
      if (parsed.command.length > 0) commands.push(parsed.command);
    }
    this.buffer = this.buffer.subarray(offset);
    return commands;
  }

  private line(offset: number): { text: string; next: number } | undefined {
    const end = this.buffer.indexOf(CRLF, offset);
    if (end === -1) return undefined;
    return { text: this.buffer.toString('latin1', offset, end), next: end + 2 };
  }

  private parse(offset: number): { command: string[]; next: number } | undefined {
    if (offset >= this.buffer.length) return undefined;
    if (this.buffer[offset] !== 0x2a /* '*' */) {
      const inline = this.line(offset);
      if (!inline) return undefined;
      return { command: inline.text.split(' ').filter((part) => part !== ''), next: inline.next };
    }
    const header = this.line(offset + 1);
    if (!header) return undefined;
    const count = Number(header.text);
    if (!Number.isSafeInteger(count) || count < 0)
      throw new Error(`Protocol error: invalid multibulk length`);
    const command: string[] = [];
    let next = header.next;
    for (let index = 0; index < count; index++) {
      if (next >= this.buffer.length) return undefined;
      if (this.buffer[next] !== 0x24 /* '$' */) throw new Error(`Protocol error: expected '$'`);
      const size = this.line(next + 1);
      if (!size) return undefined;
      const length = Number(size.text);
      if (!Number.isSafeInteger(length) || length < 0) throw new Error('Protocol error: invalid bulk length');
      if (size.next + length + 2 > this.buffer.length) {
        // Counted from the request's start, where the buffer will begin once `feed` trims it.
        this.needed = size.next + length + 2 - offset;
        return undefined;
      }
      command.push(this.buffer.toString('utf8', size.next, size.next + length));
      next = size.next + length + 2;
    }
    return { command, next };
  }
}
