import { once } from 'node:events';
import { connect, type Socket } from 'node:net';

/** One command as MONITOR reports it: the name as the client sent it, then its arguments. */
export type MonitoredCommand = readonly string[];

/** The one-letter escapes of `sdscatrepr`; any other escaped character stands for itself. */
const ESCAPES: Readonly<Record<string, number>> = { n: 10, r: 13, t: 9, a: 7, b: 8 };

/**
 * Unquotes the arguments of one MONITOR line (`1796314539.228332 [0 127.0.0.1:57326] "set" "k"`),
 * which Redis writes with `sdscatrepr`: `\\ \" \n \r \t \a \b` and `\xhh` escapes.
 */
export function parseMonitorLine(line: string): MonitoredCommand {
  const args: string[] = [];
  let position = line.indexOf('] "');
  if (position === -1) return args;
  position += 2;
  while (position < line.length && line[position] === '"') {
    const bytes: number[] = [];
    position++;
    while (position < line.length && line[position] !== '"') {
      const char = line[position] as string;
      if (char !== '\\') {
        bytes.push(char.charCodeAt(0));
        position++;
        continue;
      }
      const escaped = line[position + 1];
      if (escaped === 'x') {
        bytes.push(Number.parseInt(line.slice(position + 2, position + 4), 16));
        position += 4;
        continue;
      }
      bytes.push(ESCAPES[escaped as string] ?? (escaped as string).charCodeAt(0));
      position += 2;
    }
    args.push(Buffer.from(bytes).toString('utf8'));
    position += 2; // the closing quote and the space
  }
  return args;
}

/** A command as RESP: an array of bulk strings, so any byte of a password goes through. */
function respCommand(args: readonly string[]): string {
  return `*${args.length}\r\n${args.map((arg) => `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`).join('')}`;
}

/**
 * A MONITOR connection that reports every command the server runs, from the moment `start`
 * resolves. Its own client, not ioredis's `monitor()`: that one switches to monitoring in a
 * promise callback after MONITOR's `+OK` is parsed, so a command another client runs at that
 * moment, arriving in the same read, is taken for a reply to nothing and throws "Command queue
 * state error" (seen in CI while other test files used the same Redis).
 */
export class RedisMonitor {
  private constructor(private readonly socket: Socket) {}

  static async start(url: string, onCommand: (command: MonitoredCommand) => void): Promise<RedisMonitor> {
    const { protocol, hostname, port, username, password } = new URL(url);
    if (protocol !== 'redis:') throw new Error(`RedisMonitor: plain redis:// URLs only, got ${protocol}`);
    const socket = connect(Number(port || 6379), hostname.replace(/^\[|\]$/g, ''));
    socket.setEncoding('latin1');
    await once(socket, 'connect');
    const credentials = [username, password].filter((part) => part !== '').map(decodeURIComponent);
    if (credentials.length > 0) socket.write(respCommand(['AUTH', ...credentials]));
    socket.write(respCommand(['MONITOR']));
    let okExpected = credentials.length > 0 ? 2 : 1;
    let pending = '';
    const started = new Promise<void>((resolve, reject) => {
      // Rejects while starting; later, the test waiting for a command fails on its own timeout.
      socket.on('error', reject);
      socket.on('data', (chunk: string) => {
        pending += chunk;
        let lineEnd = pending.indexOf('\r\n');
        while (lineEnd !== -1) {
          const line = pending.slice(0, lineEnd);
          pending = pending.slice(lineEnd + 2);
          lineEnd = pending.indexOf('\r\n');
          if (okExpected > 0) {
            if (line !== '+OK') {
              reject(new Error(`MONITOR on ${hostname}:${port}: ${line}`));
              socket.destroy();
              return;
            }
            if (--okExpected === 0) resolve();
            continue;
          }
          onCommand(parseMonitorLine(line.slice(1)));
        }
      });
    });
    await started;
    return new RedisMonitor(socket);
  }

  /** Closes the connection; no command is reported after this. */
  stop(): void {
    this.socket.removeAllListeners('data');
    this.socket.destroy();
  }
}
