import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ChainableCommander, Command } from 'ioredis';
import type { RedisClient } from './client.js';
import { commandExpecting } from './deadline.js';

/** A Lua script from a file named `<name>-<numberOfKeys>.lua` (bullmq's convention). */
export interface LuaScript {
  readonly name: string;
  readonly numberOfKeys: number;
  readonly source: string;
  readonly sha: string;
}

export type ScriptSet = ReadonlyMap<string, LuaScript>;

const FILE_NAME = /^(?<name>[a-zA-Z][\w-]*?)-(?<keys>\d+)\.lua$/;
/** One `--@include <name>` line, its line break included (an include already inlined leaves none). */
const INCLUDE_LINE = /^--@include ([\w-]+)[ \t]*(?:\r?\n|$)/gm;

/**
 * Which clock `--@include clock` and `--@include entry-id` give a script (lua/clock-<variant>.lua,
 * lua/entry-id-<variant>.lua of this package): `redis` reads Redis TIME and lets XADD stamp
 * entries itself (production); `key` reads the milliseconds a test stores at the script's
 * `KEYS[1] + CLOCK_KEY_SUFFIX` and stamps entries with them.
 */
export type ScriptClock = 'redis' | 'key';

export interface LoadScriptsOptions {
  /** Default `redis`. */
  readonly clock?: ScriptClock;
}

/** Appended to a script's KEYS[1]: the key the `key` clock reads (lua/clock-key.lua). */
export const CLOCK_KEY_SUFFIX = '~test-clock';

/** This package's `lua/`, next to `src/` and `dist/` alike: includes every service may use. */
const SHARED_LUA_DIRECTORY = fileURLToPath(new URL('../lua/', import.meta.url));

/** The includes this package gives every service, each in one file per clock variant. */
const CLOCK_INCLUDES = new Set(['clock', 'entry-id']);

/** Where the text of `--@include <name>` comes from: this package's clock, or the directory's includes/. */
function includePath(directory: string, name: string, clock: ScriptClock): string {
  if (CLOCK_INCLUDES.has(name)) return join(SHARED_LUA_DIRECTORY, `${name}-${clock}.lua`);
  return join(directory, 'includes', `${name}.lua`);
}

/**
 * The text of `source` with its `--@include` lines expanded, depth first: an include's own
 * `--@include` lines (at its top) put its dependencies before it, and an include already
 * inlined anywhere in this script is dropped at its later occurrences, so helpers that share a
 * dependency each name it and Redis receives it once. `expanding` is the chain being expanded:
 * an include that reaches itself is an error (its text would come after its own users).
 */
function expandIncludes(
  file: string,
  source: string,
  resolve: (name: string) => string,
  inlined: Set<string>,
  expanding: readonly string[],
): string {
  return source.replace(INCLUDE_LINE, (_line, name: string) => {
    if (expanding.includes(name)) {
      throw new Error(`${file}: include cycle ${[...expanding, name].join(' -> ')}`);
    }
    if (inlined.has(name)) return '';
    inlined.add(name);
    const body = expandIncludes(file, readFileSync(resolve(name), 'utf8'), resolve, inlined, [
      ...expanding,
      name,
    ]);
    return body.endsWith('\n') ? body : `${body}\n`;
  });
}

/**
 * Reads every `<name>-<numberOfKeys>.lua` of a directory once, at boot (the naming rule:
 * README.md, "Lua scripts"). A line `--@include <name>` is replaced by `includes/<name>.lua`,
 * so logic shared by several scripts exists once (bullmq's includes); includes may include
 * others, each inlined once per script (expandIncludes). `--@include clock` (`now_ms()`) and
 * `--@include entry-id` (`new_entry_id()`, the id to give XADD) are this package's, on the clock
 * `options.clock` chooses, so a script holds no clock code of its own and tests move time
 * without touching its text.
 */
export function loadScripts(directory: string, options: LoadScriptsOptions = {}): ScriptSet {
  const clock = options.clock ?? 'redis';
  const scripts = new Map<string, LuaScript>();
  for (const file of readdirSync(directory).sort()) {
    const match = FILE_NAME.exec(file);
    if (!match?.groups) continue;
    const source = expandIncludes(
      file,
      readFileSync(join(directory, file), 'utf8'),
      (name) => includePath(directory, name, clock),
      new Set(),
      [],
    );
    const name = match.groups.name as string;
    scripts.set(name, {
      name,
      numberOfKeys: Number(match.groups.keys),
      source,
      sha: createHash('sha1').update(source).digest('hex'),
    });
  }
  return scripts;
}

/**
 * The script `name` of a set, or an error naming the file it would come from: a script missing
 * at a call site is a packaging fault (a `.lua` file left out), reported in one wording.
 */
export function scriptNamed(scripts: ScriptSet, name: string): LuaScript {
  const script = scripts.get(name);
  if (!script) throw new Error(`Lua script ${name} is not loaded: no ${name}-<numberOfKeys>.lua file`);
  return script;
}

/** Redis's reply to EVALSHA of a script its cache does not hold (after a restart or SCRIPT FLUSH). */
export function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

function checkKeys(script: LuaScript, keys: readonly string[]): void {
  if (keys.length !== script.numberOfKeys) {
    throw new Error(`script ${script.name} takes ${script.numberOfKeys} keys, got ${keys.length}`);
  }
}

/**
 * Resends: ioredis resends a command whose reply was lost, so a script may run twice with the
 * same arguments. Every state-changing script must be resend-safe (a per-request id memo, or
 * natural idempotency) and say why in its header: the rule is in this package's README.md.
 *
 * EVALSHA, falling back to EVAL on NOSCRIPT (after a Redis restart or SCRIPT FLUSH the cache is
 * empty; EVAL also reloads it, so the next call is by SHA again).
 *
 * On a Cluster both go to the primary of the keys' slot (ioredis routes EVALSHA/EVAL by the
 * KEYS they declare), so each primary loads a script on its first NOSCRIPT, a promoted replica
 * included. Every key must be declared and all in one slot (Redis answers CROSSSLOT otherwise);
 * a script declaring no keys would run on an arbitrary primary.
 */
export async function runScript<T = unknown>(
  redis: RedisClient,
  script: LuaScript,
  keys: readonly string[],
  args: readonly (string | number | Buffer)[],
  replyBytes = 0,
): Promise<T> {
  checkKeys(script, keys);
  try {
    return (await redis.sendCommand(scriptCommand('evalsha', script.sha, keys, args, replyBytes))) as T;
  } catch (error) {
    if (!isNoScript(error)) throw error;
    return (await redis.sendCommand(scriptCommand('eval', script.source, keys, args, replyBytes))) as T;
  }
}

/**
 * One EVALSHA (`body` the SHA) or EVAL (`body` the source) command, its reply as text. With
 * `replyBytes`, the command deadline allows for that much more read or answered in Redis
 * (`expectReply`: a script on a queue that holds large messages).
 */
export function scriptCommand(
  kind: 'evalsha' | 'eval',
  body: string,
  keys: readonly string[],
  args: readonly (string | number | Buffer)[],
  replyBytes = 0,
): Command {
  // One array, not spread arguments: a script call can carry 100k+ arguments (a 10,000-item
  // transaction), past what a function call's stack holds.
  return commandExpecting(kind, [body, keys.length, ...keys, ...args], replyBytes);
}

/** Queues a script on a pipeline by SHA; callers retry the pipeline with `runScript` on NOSCRIPT. */
export function pipelineScript(
  pipeline: ChainableCommander,
  script: LuaScript,
  keys: readonly string[],
  args: readonly (string | number | Buffer)[],
): ChainableCommander {
  checkKeys(script, keys);
  return pipeline.call('evalsha', [script.sha, keys.length, ...keys, ...args]);
}
