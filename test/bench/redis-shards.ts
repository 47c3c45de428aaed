/*
 * What the Redis Cluster benchmarks (cluster-broker.bench.ts, cluster-hub.bench.ts) read from each
 * primary, and how they print it. Per shard: commands processed (`INFO stats`
 * total_commands_processed, which counts the commands a Lua script calls as well as the EVALSHA
 * itself), script calls (`INFO commandstats`, evalsha + eval) and CPU seconds (`INFO cpu`,
 * used_cpu_sys + used_cpu_user, every thread of the process), as deltas between two samples.
 */
import { Redis } from 'ioredis';

export interface ShardSample {
  readonly commands: number;
  readonly scripts: number;
  readonly cpuSeconds: number;
  /** performance.now() when the sample was taken. */
  readonly at: number;
}

export interface ShardLoad {
  readonly port: number;
  readonly opsPerSecond: number;
  readonly scriptsPerSecond: number;
  /** CPU time over wall time: 1.0 = one core busy the whole interval. */
  readonly cpuShare: number;
}

function infoFields(text: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    const separator = line.indexOf(':');
    if (separator > 0) fields.set(line.slice(0, separator), line.slice(separator + 1).trim());
  }
  return fields;
}

/** `calls=` of one `cmdstat_<name>` line, 0 when the command never ran. */
function commandCalls(fields: Map<string, string>, name: string): number {
  return Number(/calls=(\d+)/.exec(fields.get(`cmdstat_${name}`) ?? '')?.[1] ?? 0);
}

/** One plain connection per primary (INFO is per process, so no Cluster client). */
export class ShardMeter {
  private readonly connections: Map<number, Redis>;

  constructor(readonly ports: readonly number[]) {
    this.connections = new Map(ports.map((port) => [port, new Redis(port, '127.0.0.1')]));
  }

  async sample(): Promise<Map<number, ShardSample>> {
    const samples = await Promise.all(
      [...this.connections].map(async ([port, connection]): Promise<[number, ShardSample]> => {
        const fields = infoFields(await connection.info('everything'));
        return [
          port,
          {
            commands: Number(fields.get('total_commands_processed') ?? 0),
            scripts: commandCalls(fields, 'evalsha') + commandCalls(fields, 'eval'),
            cpuSeconds: Number(fields.get('used_cpu_sys') ?? 0) + Number(fields.get('used_cpu_user') ?? 0),
            at: performance.now(),
          },
        ];
      }),
    );
    return new Map(samples);
  }

  static loads(before: Map<number, ShardSample>, after: Map<number, ShardSample>): ShardLoad[] {
    return [...after].map(([port, end]) => {
      const start = before.get(port) as ShardSample;
      const seconds = (end.at - start.at) / 1000;
      return {
        port,
        // The sample's own INFO is one command per shard: not worth subtracting.
        opsPerSecond: (end.commands - start.commands) / seconds,
        scriptsPerSecond: (end.scripts - start.scripts) / seconds,
        cpuShare: (end.cpuSeconds - start.cpuSeconds) / seconds,
      };
    });
  }

  close(): void {
    for (const connection of this.connections.values()) connection.disconnect();
  }
}

/** The largest and smallest value relative to the mean, as signed fractions (+0.12 = 12 % above). */
export function spread(values: readonly number[]): { readonly above: number; readonly below: number } {
  const mean = values.reduce((sum, value) => sum + value, 0) / values.length;
  return { above: Math.max(...values) / mean - 1, below: Math.min(...values) / mean - 1 };
}

export const formatCount = (value: number): string => Math.round(value).toLocaleString('en-US');
export const formatPercent = (fraction: number): string =>
  `${fraction >= 0 ? '+' : ''}${(fraction * 100).toFixed(1)} %`;

/** Prints a Markdown table (the rows as docs/benchmarks.md quotes them). */
export function printTable(header: readonly string[], rows: readonly (readonly string[])[]): void {
  const widths = header.map((cell, column) =>
    Math.max(cell.length, ...rows.map((row) => row[column]?.length ?? 0)),
  );
  const line = (cells: readonly string[]) =>
    `| ${cells.map((cell, column) => cell.padEnd(widths[column] as number)).join(' | ')} |`;
  console.log(line(header));
  console.log(`|${widths.map((width) => '-'.repeat(width + 2)).join('|')}|`);
  for (const row of rows) console.log(line(row));
}
