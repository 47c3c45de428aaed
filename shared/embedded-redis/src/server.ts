/**
 * The embedded Redis as a server on a Unix socket of a private directory, so that any Redis
 * client (ioredis, BullMQ) talks to it as to a real one: the storage code of a service runs
 * unchanged on the single-node embedded default. Per connection: MULTI/EXEC, pub/sub
 * (SUBSCRIBE, SSUBSCRIBE, PUBLISH, SPUBLISH), CLIENT and SELECT 0 for the handshake.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Engine } from './engine.js';
import { type Clock, systemClock } from './keyspace.js';
import { OK, type Reply, ReplyError, Status } from './reply.js';
import { encodeReply, RequestParser } from './resp.js';

/** How often keys whose time has come are deleted (lookups expire them at once anyway). */
const EXPIRY_SWEEP_MS = 1000;

/** Served here, not by the engine: they reach this server's subscribers (also from MULTI). */
const PUBLISHING = new Set(['PUBLISH', 'SPUBLISH']);

const PUBSUB_ALLOWED = new Set([
  'SUBSCRIBE',
  'UNSUBSCRIBE',
  'SSUBSCRIBE',
  'SUNSUBSCRIBE',
  'PING',
  'QUIT',
  'RESET',
]);

interface Connection {
  readonly socket: Socket;
  name: string | null;
  /** Commands queued since MULTI; `failed` once one was refused (EXEC then aborts). */
  transaction: { queued: string[][]; failed: boolean } | undefined;
  readonly channels: Set<string>;
  readonly shardChannels: Set<string>;
}

export interface EmbeddedRedisOptions {
  /** The clock of TIME, expiry and stream ids (default: the system clock). */
  readonly clock?: Clock;
}

export class EmbeddedRedis {
  private readonly connections = new Set<Connection>();
  private readonly subscribers = new Map<string, Set<Connection>>();
  private readonly shardSubscribers = new Map<string, Set<Connection>>();
  private readonly sweep: NodeJS.Timeout;

  private readonly server: Server;

  private constructor(
    readonly engine: Engine,
    private readonly directory: string,
    /** The socket's path: what a client connects to (ioredis: `new Redis(path)`). */
    readonly path: string,
  ) {
    this.server = createServer((socket) => this.accept(socket));
    this.sweep = setInterval(() => engine.keys.expireDue(), EXPIRY_SWEEP_MS);
    this.sweep.unref();
  }

  /** Starts an engine and listens on `<tmpdir>/herald-redis-XXXX/redis.sock` (mkdtemp: mode 0700). */
  static async start(options: EmbeddedRedisOptions = {}): Promise<EmbeddedRedis> {
    const engine = await Engine.create(options.clock ?? systemClock);
    const directory = mkdtempSync(join(tmpdir(), 'herald-redis-'));
    const embedded = new EmbeddedRedis(engine, directory, join(directory, 'redis.sock'));
    const { server } = embedded;
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(embedded.path, () => {
          server.off('error', reject);
          resolve();
        });
      });
    } catch (error) {
      await embedded.close();
      throw error;
    }
    return embedded;
  }

  async close(): Promise<void> {
    clearInterval(this.sweep);
    for (const connection of this.connections) connection.socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.engine.close();
    rmSync(this.directory, { recursive: true, force: true });
  }

  private accept(socket: Socket): void {
    const connection: Connection = {
      socket,
      name: null,
      transaction: undefined,
      channels: new Set(),
      shardChannels: new Set(),
    };
    this.connections.add(connection);
    const parser = new RequestParser();
    socket.on('data', (chunk: Buffer) => {
      let commands: string[][];
      try {
        commands = parser.feed(chunk);
      } catch (error) {
        socket.end(`-ERR ${error instanceof Error ? error.message : String(error)}\r\n`);
        return;
      }
      const out: Buffer[] = [];
      for (const command of commands) {
        for (const reply of this.handle(connection, command)) encodeReply(reply, out);
        if ((command[0] ?? '').toUpperCase() === 'QUIT') {
          socket.end(Buffer.concat(out));
          return;
        }
      }
      if (out.length > 0) socket.write(out.length === 1 ? (out[0] as Buffer) : Buffer.concat(out));
    });
    socket.on('error', () => undefined);
    socket.on('close', () => this.forget(connection));
  }

  private forget(connection: Connection): void {
    this.connections.delete(connection);
    for (const channel of connection.channels) this.subscribers.get(channel)?.delete(connection);
    for (const channel of connection.shardChannels) this.shardSubscribers.get(channel)?.delete(connection);
  }

  /** The replies to one command: several for (UN)SUBSCRIBE, which answer once per channel. */
  private handle(connection: Connection, args: string[]): Reply[] {
    const name = (args[0] ?? '').toUpperCase();
    const subscribed = connection.channels.size + connection.shardChannels.size > 0;
    if (subscribed && !PUBSUB_ALLOWED.has(name)) {
      return [
        new ReplyError(
          `ERR Can't execute '${args[0]?.toLowerCase()}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context`,
        ),
      ];
    }
    if (connection.transaction && !['EXEC', 'DISCARD', 'MULTI', 'WATCH', 'QUIT'].includes(name)) {
      const refused = PUBLISHING.has(name)
        ? args.length === 3
          ? undefined
          : errorOfArity(name)
        : this.engine.knows(name)
          ? this.engine.arityError(args)
          : new ReplyError(`ERR unknown command '${args[0] ?? ''}'`);
      if (refused) {
        connection.transaction.failed = true;
        return [refused];
      }
      connection.transaction.queued.push(args);
      return [new Status('QUEUED')];
    }
    switch (name) {
      case 'MULTI':
        if (connection.transaction) return [new ReplyError('ERR MULTI calls can not be nested')];
        connection.transaction = { queued: [], failed: false };
        return [OK];
      case 'EXEC': {
        const transaction = connection.transaction;
        connection.transaction = undefined;
        if (!transaction) return [new ReplyError('ERR EXEC without MULTI')];
        if (transaction.failed) {
          return [new ReplyError('EXECABORT Transaction discarded because of previous errors.')];
        }
        return [transaction.queued.map((queued) => this.run(queued))];
      }
      case 'DISCARD':
        if (!connection.transaction) return [new ReplyError('ERR DISCARD without MULTI')];
        connection.transaction = undefined;
        return [OK];
      case 'WATCH':
      case 'UNWATCH':
        return [OK];
      case 'QUIT':
        return [OK];
      case 'SELECT':
        return [args[1] === '0' ? OK : new ReplyError('ERR DB index is out of range')];
      case 'CLIENT':
        return [this.client(connection, args)];
      case 'PING':
        return subscribed ? [['pong', args[1] ?? '']] : [this.run(args)];
      case 'SUBSCRIBE':
        return this.subscribe(connection, args.slice(1), 'subscribe', connection.channels, this.subscribers);
      case 'SSUBSCRIBE':
        return this.subscribe(
          connection,
          args.slice(1),
          'ssubscribe',
          connection.shardChannels,
          this.shardSubscribers,
        );
      case 'UNSUBSCRIBE':
        return this.unsubscribe(
          connection,
          args.slice(1),
          'unsubscribe',
          connection.channels,
          this.subscribers,
        );
      case 'SUNSUBSCRIBE':
        return this.unsubscribe(
          connection,
          args.slice(1),
          'sunsubscribe',
          connection.shardChannels,
          this.shardSubscribers,
        );
      case 'PUBLISH':
        return [args.length === 3 ? this.publish(this.subscribers, 'message', args) : errorOfArity(name)];
      case 'SPUBLISH':
        return [
          args.length === 3 ? this.publish(this.shardSubscribers, 'smessage', args) : errorOfArity(name),
        ];
      default:
        return [this.run(args)];
    }
  }

  private run(args: readonly string[]): Reply {
    const name = (args[0] ?? '').toUpperCase();
    if (name === 'PUBLISH' || name === 'SPUBLISH') {
      return this.publish(
        name === 'PUBLISH' ? this.subscribers : this.shardSubscribers,
        name === 'PUBLISH' ? 'message' : 'smessage',
        args,
      );
    }
    return this.engine.execute(args);
  }

  private client(connection: Connection, args: readonly string[]): Reply {
    const sub = (args[1] ?? '').toUpperCase();
    if (sub === 'SETNAME' && args.length === 3) {
      connection.name = args[2] ?? null;
      return OK;
    }
    if (sub === 'GETNAME') return connection.name;
    if (sub === 'SETINFO' || sub === 'NO-EVICT' || sub === 'NO-TOUCH') return OK;
    if (sub === 'ID') return [...this.connections].indexOf(connection) + 1;
    if (sub === 'LIST') {
      return [...this.connections].map((each, index) => `id=${index + 1} name=${each.name ?? ''}`).join('\n');
    }
    return new ReplyError(`ERR unknown subcommand '${args[1] ?? ''}'. Try CLIENT HELP.`);
  }

  private subscribe(
    connection: Connection,
    channels: readonly string[],
    kind: string,
    own: Set<string>,
    registry: Map<string, Set<Connection>>,
  ): Reply[] {
    if (channels.length === 0) return [errorOfArity(kind)];
    return channels.map((channel) => {
      own.add(channel);
      let members = registry.get(channel);
      if (!members) {
        members = new Set();
        registry.set(channel, members);
      }
      members.add(connection);
      return [kind, channel, connection.channels.size + connection.shardChannels.size];
    });
  }

  private unsubscribe(
    connection: Connection,
    channels: readonly string[],
    kind: string,
    own: Set<string>,
    registry: Map<string, Set<Connection>>,
  ): Reply[] {
    const leaving = channels.length > 0 ? channels : [...own];
    if (leaving.length === 0) return [[kind, null, 0]];
    return leaving.map((channel) => {
      own.delete(channel);
      registry.get(channel)?.delete(connection);
      if (registry.get(channel)?.size === 0) registry.delete(channel);
      return [kind, channel, connection.channels.size + connection.shardChannels.size];
    });
  }

  private publish(registry: Map<string, Set<Connection>>, kind: string, args: readonly string[]): number {
    const channel = args[1] as string;
    const members = registry.get(channel);
    if (!members) return 0;
    const out: Buffer[] = [];
    encodeReply([kind, channel, args[2] as string], out);
    const message = Buffer.concat(out);
    for (const member of members) member.socket.write(message);
    return members.size;
  }
}

function errorOfArity(name: string): ReplyError {
  return new ReplyError(`ERR wrong number of arguments for '${name.toLowerCase()}' command`);
}
