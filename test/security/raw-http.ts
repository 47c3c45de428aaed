import { connect } from 'node:net';

export interface RawResponse {
  readonly status: number;
  /** Lower-cased header names; repeated headers joined with `, `. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

export interface RawRequest {
  readonly method: string;
  /** Sent byte for byte: absolute-form, `//`, `%2F`… reach the server unnormalised. */
  readonly target: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string | Buffer;
}

function parseHead(head: string): { status: number; headers: Record<string, string> } {
  const [statusLine = '', ...lines] = head.split('\r\n');
  const status = Number(statusLine.split(' ')[1]);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
  }
  return { status, headers };
}

function dechunk(raw: Buffer): Buffer | undefined {
  const parts: Buffer[] = [];
  let offset = 0;
  for (;;) {
    const lineEnd = raw.indexOf('\r\n', offset);
    if (lineEnd === -1) return undefined;
    const size = Number.parseInt(raw.subarray(offset, lineEnd).toString(), 16);
    if (Number.isNaN(size)) return raw;
    if (size === 0) return Buffer.concat(parts);
    const start = lineEnd + 2;
    if (raw.length < start + size + 2) return undefined;
    parts.push(raw.subarray(start, start + size));
    offset = start + size + 2;
  }
}

/** The body once complete (an event stream counts as complete at its head), else undefined. */
function completeBody(
  method: string,
  head: { status: number; headers: Record<string, string> },
  rest: Buffer,
  ended: boolean,
): string | undefined {
  if ((head.headers['content-type'] ?? '').startsWith('text/event-stream')) return '';
  const length = head.headers['content-length'];
  if (length !== undefined) {
    if (rest.length >= Number(length)) return rest.subarray(0, Number(length)).toString();
  } else if (/chunked/i.test(head.headers['transfer-encoding'] ?? '')) {
    const decoded = dechunk(rest);
    if (decoded) return decoded.toString();
  } else if (method === 'HEAD' || head.status === 204 || head.status === 304) {
    return '';
  }
  return ended ? rest.toString() : undefined;
}

/**
 * One HTTP/1.1 request over a fresh TCP connection, written verbatim (fetch and node:http
 * normalise or refuse the targets these tests need). An event stream resolves once its head
 * arrived; anything else once its body is complete or the server closed the connection.
 */
export function rawRequest(port: number, request: RawRequest, timeoutMs = 15_000): Promise<RawResponse> {
  const body = request.body === undefined ? undefined : Buffer.from(request.body);
  const headers: Record<string, string> = {
    host: `127.0.0.1:${port}`,
    connection: 'close',
    ...request.headers,
  };
  if (body !== undefined && headers['content-length'] === undefined)
    headers['content-length'] = String(body.length);
  const head = `${request.method} ${request.target} HTTP/1.1\r\n${Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('')}\r\n`;
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let received = Buffer.alloc(0);
    let settled = false;
    const timer = setTimeout(
      () =>
        finish(
          new Error(
            `no complete answer within ${timeoutMs} ms to ${request.method} ${request.target.slice(0, 200)}`,
          ),
        ),
      timeoutMs,
    );
    function finish(error?: Error, response?: RawResponse): void {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (response) resolve(response);
      else reject(error);
    }
    function tryParse(ended: boolean): void {
      const headEnd = received.indexOf('\r\n\r\n');
      if (headEnd === -1) {
        if (ended)
          finish(
            new Error(
              `connection closed without a response to ${request.method} ${request.target.slice(0, 200)} (${received.length} bytes)`,
            ),
          );
        return;
      }
      const parsed = parseHead(received.subarray(0, headEnd).toString('latin1'));
      // An interim 100 Continue precedes the real answer.
      if (parsed.status === 100) {
        received = received.subarray(headEnd + 4);
        tryParse(ended);
        return;
      }
      const body = completeBody(request.method, parsed, received.subarray(headEnd + 4), ended);
      if (body !== undefined) finish(undefined, { ...parsed, body });
    }
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      tryParse(false);
    });
    socket.on('end', () => tryParse(true));
    socket.on('close', () => tryParse(true));
    // A server may answer and close before reading a large body (EPIPE, ECONNRESET): 'close'
    // follows and parses whatever arrived.
    socket.on('error', () => {});
    socket.write(head);
    if (body === undefined) return;
    // No half-close: node's server aborts a request whose client ended its side early. A large
    // body waits a moment after the head: a server that refuses it from Content-Length (413)
    // answers and closes, and bytes still arriving would turn that close into a reset that
    // discards its answer.
    if (body.length <= 64 * 1024) socket.write(body);
    else
      setTimeout(() => {
        if (!settled && received.length === 0) socket.write(body);
      }, 100);
  });
}
