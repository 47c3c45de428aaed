/**
 * The engine: one keyspace, the command table of every family, scripting and the server
 * commands a client's handshake sends. `execute` runs one command to completion, so a script or
 * an EXEC batch is atomic as in Redis. Connection state (MULTI, subscriptions) lives in
 * server.ts; this file knows nothing of sockets.
 */

import { at, type Command, type CommandContext, dispatch, table } from './commands.js';
import { collectionCommands } from './commands-collections.js';
import { keyCommands } from './commands-keys.js';
import { sortedSetCommands } from './commands-sorted-sets.js';
import { streamCommands } from './commands-streams.js';
import { type Clock, Keyspace } from './keyspace.js';
import { errors, fail, integerArgument, OK, type Reply, ReplyError, Status } from './reply.js';
import { Scripting } from './scripting.js';

/** What INFO answers: enough for a client's ready check (`loading:0`) and an operator's look. */
function info(keys: Keyspace): string {
  return [
    '# Server',
    'redis_version:7.0.15',
    'redis_mode:standalone',
    'herald_embedded:1',
    '',
    '# Persistence',
    'loading:0',
    '',
    '# Replication',
    'role:master',
    'connected_slaves:0',
    '',
    '# Keyspace',
    `db0:keys=${keys.size},expires=0,avg_ttl=0`,
    '',
  ].join('\r\n');
}

export class Engine {
  readonly keys: Keyspace;
  private readonly context: CommandContext;
  /** The commands a script may call: every data command and TIME (no EVAL inside EVAL). */
  private readonly scriptCommands: Map<string, Command>;
  private readonly commands: Map<string, Command>;
  private scripting: Scripting | undefined;

  private constructor(clock: Clock) {
    this.keys = new Keyspace(clock);
    this.context = { keys: this.keys };
    this.scriptCommands = new Map([
      ...keyCommands,
      ...collectionCommands,
      ...sortedSetCommands,
      ...streamCommands,
      ...this.serverCommands(),
    ]);
    this.commands = new Map([...this.scriptCommands, ...this.scriptingCommands()]);
  }

  static async create(clock: Clock): Promise<Engine> {
    const engine = new Engine(clock);
    engine.scripting = await Scripting.create((args) =>
      dispatch(engine.scriptCommands, engine.context, args),
    );
    return engine;
  }

  /** Runs one command (name first) and returns its reply; an error is a ReplyError reply. */
  execute(args: readonly string[]): Reply {
    return dispatch(this.commands, this.context, args);
  }

  /** Whether `name` is a command this engine runs (MULTI queues only those). */
  knows(name: string): boolean {
    return this.commands.has(name.toUpperCase());
  }

  arityError(args: readonly string[]): ReplyError | undefined {
    const command = this.commands.get((args[0] ?? '').toUpperCase());
    if (!command) return undefined;
    const { arity } = command;
    if ((arity > 0 && args.length !== arity) || (arity < 0 && args.length < -arity)) {
      return errors.arity(args[0] ?? '');
    }
    return undefined;
  }

  close(): void {
    this.scripting?.close();
  }

  private serverCommands(): Map<string, Command> {
    return table([
      [
        'TIME',
        1,
        false,
        ({ keys }) => {
          const now = keys.clock.now();
          return [String(Math.floor(now / 1000)), String((now % 1000) * 1000)];
        },
      ],
      ['PING', -1, false, (_, args) => (args.length > 0 ? at(args, 0) : new Status('PONG'))],
      ['ECHO', 2, false, (_, args) => at(args, 0)],
      ['INFO', -1, false, ({ keys }) => info(keys)],
      ['WAIT', 3, false, () => 0],
    ]);
  }

  private scriptingCommands(): Map<string, Command> {
    const scripting = (): Scripting => this.scripting ?? fail(new ReplyError('ERR scripting is not ready'));
    const run = (sha: string, args: readonly string[]): Reply => {
      const count = integerArgument(at(args, 1));
      if (count < 0) fail(new ReplyError("ERR Number of keys can't be negative"));
      if (count > args.length - 2)
        fail(new ReplyError("ERR Number of keys can't be greater than number of args"));
      return scripting().run(sha, args.slice(2, 2 + count), args.slice(2 + count));
    };
    return table([
      ['EVAL', -3, true, (_, args) => run(scripting().load(at(args, 0)), args)],
      ['EVALSHA', -3, true, (_, args) => run(at(args, 0).toLowerCase(), args)],
      [
        'SCRIPT',
        -2,
        false,
        (_, args) => {
          const sub = at(args, 0).toUpperCase();
          if (sub === 'LOAD' && args.length === 2) return scripting().load(at(args, 1));
          if (sub === 'EXISTS')
            return args.slice(1).map((sha) => (scripting().has(sha.toLowerCase()) ? 1 : 0));
          if (sub === 'FLUSH') {
            scripting().flush();
            return OK;
          }
          return fail(new ReplyError(`ERR unknown subcommand '${at(args, 0)}'. Try SCRIPT HELP.`));
        },
      ],
    ]);
  }
}
