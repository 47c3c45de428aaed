import { inspect } from 'node:util';
import pino from 'pino';

/** What the logger writes lines to (pino's `DestinationStream`). */
export interface LogDestination {
  write(line: string): void;
}

const LEVELS: Record<number, string> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO',
  40: 'WARN',
  50: 'ERROR',
  60: 'FATAL',
};
const COLOURS: Record<number, string> = { 10: '90', 20: '36', 30: '32', 40: '33', 50: '31', 60: '35' };
const HIDDEN = new Set(['level', 'time', 'pid', 'hostname', 'service', 'msg', 'v']);

/**
 * One pino JSON line as a person reads it on a terminal: `14:05:09.123 INFO  broker  message
 * key=value…`, an error's stack on the lines below. A line that is not JSON is returned as is.
 */
export function prettyLogLine(line: string, colour = true): string {
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  if (record === null || typeof record !== 'object') return line;
  const level = typeof record.level === 'number' ? record.level : 30;
  const time = typeof record.time === 'number' ? new Date(record.time) : new Date();
  const clock = `${time.toTimeString().slice(0, 8)}.${String(time.getMilliseconds()).padStart(3, '0')}`;
  const name = (LEVELS[level] ?? String(level)).padEnd(5);
  const paint = (code: string | undefined, text: string) =>
    colour && code ? `\u001b[${code}m${text}\u001b[0m` : text;
  const fields: string[] = [];
  let stack = '';
  for (const [key, value] of Object.entries(record)) {
    if (HIDDEN.has(key)) continue;
    if (key === 'err' && value && typeof value === 'object' && 'stack' in value) {
      stack = `\n    ${String((value as { stack: unknown }).stack).replaceAll('\n', '\n    ')}`;
      continue;
    }
    fields.push(
      `${key}=${typeof value === 'string' ? value : inspect(value, { breakLength: Infinity, depth: 4 })}`,
    );
  }
  const service = typeof record.service === 'string' ? `${record.service.padEnd(6)} ` : '';
  const message = typeof record.msg === 'string' ? record.msg : '';
  const rest = fields.length > 0 ? ` ${paint('90', fields.join(' '))}` : '';
  return `${paint('90', clock)} ${paint(COLOURS[level], name)} ${service}${message}${rest}${stack}\n`;
}

/**
 * Where the services log: standard output, one JSON object a line, or that line made readable
 * (`prettyLogLine`) when standard output is a terminal.
 *
 * Written synchronously (pino's `sync: true`): a reader that has gone (`herald broker | head`)
 * makes the write fail with EPIPE, which pino turns into dropping every later line. The
 * asynchronous default instead flushes its buffer at exit in a loop that retries EPIPE forever
 * (sonic-boom 4's flushSync), so such a process never exited after SIGINT.
 */
export function logDestination(
  options: { readonly pretty?: boolean; readonly fd?: number } = {},
): LogDestination {
  const fd = options.fd ?? 1;
  const destination = pino.destination({ dest: fd, sync: true });
  const pretty = options.pretty ?? (fd === 1 && process.stdout.isTTY === true);
  if (!pretty) return destination;
  return { write: (line) => destination.write(prettyLogLine(line)) };
}
