import { Writable } from 'node:stream';

/**
 * Where a test points a pino (or fastify) logger to read what it wrote: `lines` holds each
 * JSON line as written, `records()` the lines parsed.
 */
export function logSink(): { stream: Writable; lines: string[]; records(): Record<string, unknown>[] } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line) lines.push(line);
      done();
    },
  });
  return { stream, lines, records: () => lines.map((line) => JSON.parse(line) as Record<string, unknown>) };
}
