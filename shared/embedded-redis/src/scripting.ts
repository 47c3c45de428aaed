/**
 * EVAL and EVALSHA: Redis's Lua 5.1 (the `wasmoon-lua5.1` build: the same number formatting,
 * `unpack`, `table.getn` and integer-valued doubles as Redis's interpreter; docs/architecture.md
 * records the choice), with Redis's conversions between replies and Lua values, `redis.call`,
 * `redis.pcall`, `redis.error_reply`, `redis.status_reply`, `redis.sha1hex` and `cjson`
 * (scripting.lua), globals protected as Redis 7 protects them. A script runs to completion
 * between two commands of the engine: the atomicity Redis gives it.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Lua } from 'wasmoon-lua5.1';
import { formatDouble, type Reply, ReplyError, Status } from './reply.js';

const LUA_REGISTRYINDEX = -10000;
const LUA_GLOBALSINDEX = -10002;
const LUA_TNIL = 0;
const LUA_TBOOLEAN = 1;
const LUA_TNUMBER = 3;
const LUA_TSTRING = 4;
const LUA_TTABLE = 5;

/** The Lua side of the `redis` and `cjson` libraries (scripting.lua, next to this file in dist/ and src/). */
const PRELUDE = readFileSync(new URL('../lua/scripting.lua', import.meta.url), 'utf8');

/**
 * The C API as wasmoon-lua5.1's emscripten module exports it, called with raw pointers: the
 * library's own wrappers convert every argument on each call (a third of a script's time in a
 * profile), so strings go through `pushText`/`text` and field names are C strings made once.
 */
interface Module {
  HEAPU8: Uint8Array;
  HEAPU32: Uint32Array;
  _malloc(size: number): number;
  _free(pointer: number): void;
  _lua_tolstring(state: number, index: number, length: number): number;
  _lua_pushlstring(state: number, pointer: number, length: number): void;
  _luaL_loadbuffer(state: number, pointer: number, length: number, name: number): number;
  _lua_gettop(state: number): number;
  _lua_settop(state: number, index: number): void;
  _lua_type(state: number, index: number): number;
  _lua_tonumber(state: number, index: number): number;
  _lua_toboolean(state: number, index: number): number;
  _lua_pushnumber(state: number, value: number): void;
  _lua_pushboolean(state: number, value: number): void;
  _lua_createtable(state: number, array: number, record: number): void;
  _lua_rawseti(state: number, index: number, n: number): void;
  _lua_rawgeti(state: number, index: number, n: number): void;
  _lua_setfield(state: number, index: number, key: number): void;
  _lua_getfield(state: number, index: number, key: number): void;
  _lua_pushcclosure(state: number, fn: number, upvalues: number): void;
  _lua_pcall(state: number, args: number, results: number, handler: number): number;
  _lua_rawset(state: number, index: number): void;
  _luaL_ref(state: number, table: number): number;
  _luaL_unref(state: number, table: number, ref: number): void;
  addFunction(implementation: (state: number) => number, signature: string): number;
}

/** Strings up to this length (keys, fields, numbers) are copied byte by byte when ASCII. */
const SHORT_TEXT = 64;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A number given to redis.call as Redis 7.0 turns it into an argument (`%.17g`, integers plain). */
function numberArgument(value: number): string {
  return Number.isInteger(value) && Math.abs(value) < 2 ** 63
    ? BigInt(value).toString()
    : formatDouble(value);
}

export type Dispatch = (args: string[]) => Reply;

/** Field names the bridge reads and writes, as NUL-terminated C strings. */
type Name = 'err' | 'ok';

export class Scripting {
  private readonly module: Module;
  private readonly state: number;
  private readonly names: Record<Name, number>;
  /** sha -> registry reference of the compiled function. */
  private readonly functions = new Map<string, number>();
  private readonly lengthSlot: number;
  /** Where pushText writes a string before Lua copies it (grown on demand). */
  private scratch: number;
  private scratchSize = 4096;

  private constructor(
    private readonly lua: Lua,
    private readonly dispatch: Dispatch,
  ) {
    this.module = (lua.luaApi as unknown as { module: Module }).module;
    this.state = lua.global.address as unknown as number;
    this.lengthSlot = this.module._malloc(4);
    this.scratch = this.module._malloc(this.scratchSize);
    this.names = { err: this.cString('err'), ok: this.cString('ok') };
    const raw = this.module.addFunction((state) => this.call(state), 'ii');
    this.pushText(this.state, '__herald_raw_call');
    this.module._lua_pushcclosure(this.state, raw, 0);
    this.module._lua_rawset(this.state, LUA_GLOBALSINDEX);
    this.evaluate(PRELUDE, '@scripting');
  }

  /** A Lua state with the `redis` and `cjson` libraries, calling `dispatch` for redis.call. */
  static async create(dispatch: Dispatch): Promise<Scripting> {
    return new Scripting(await Lua.create(), dispatch);
  }

  static sha(source: string): string {
    return createHash('sha1').update(source).digest('hex');
  }

  has(sha: string): boolean {
    return this.functions.has(sha);
  }

  /** Compiles `source` (SCRIPT LOAD, EVAL): its sha, or a ReplyError naming the compile error. */
  load(source: string): string {
    const sha = Scripting.sha(source);
    if (this.functions.has(sha)) return sha;
    const { module, state } = this;
    if (this.loadChunk(source, '@user_script') !== 0) {
      const message = this.text(state, -1);
      module._lua_settop(state, 0);
      throw new ReplyError(`ERR Error compiling script (new function): ${message}`);
    }
    this.functions.set(sha, module._luaL_ref(state, LUA_REGISTRYINDEX));
    return sha;
  }

  flush(): void {
    for (const ref of this.functions.values()) this.module._luaL_unref(this.state, LUA_REGISTRYINDEX, ref);
    this.functions.clear();
  }

  /** Runs a loaded script with KEYS and ARGV; its reply, or the ReplyError it raised. */
  run(sha: string, keys: readonly string[], args: readonly string[]): Reply {
    const ref = this.functions.get(sha);
    if (ref === undefined) return new ReplyError('NOSCRIPT No matching script. Please use EVAL.');
    const { module, state } = this;
    module._lua_settop(state, 0);
    this.setGlobalArray('KEYS', keys);
    this.setGlobalArray('ARGV', args);
    module._lua_rawgeti(state, LUA_REGISTRYINDEX, ref);
    const status = module._lua_pcall(state, 0, 1, 0);
    try {
      if (status !== 0) return this.errorOf(state, -1);
      return this.replyOf(state, -1);
    } finally {
      module._lua_settop(state, 0);
    }
  }

  close(): void {
    this.module._free(this.lengthSlot);
    for (const pointer of Object.values(this.names)) this.module._free(pointer);
    this.module._free(this.scratch);
    this.lua.global.close();
  }

  private evaluate(source: string, name: string): void {
    const { module, state } = this;
    if (this.loadChunk(source, name) !== 0 || module._lua_pcall(state, 0, 0, 0) !== 0) {
      const message = this.text(state, -1);
      module._lua_settop(state, 0);
      throw new Error(`embedded Lua: ${name}: ${message}`);
    }
  }

  private cString(text: string): number {
    const bytes = encoder.encode(`${text}\0`);
    const pointer = this.module._malloc(bytes.length);
    this.module.HEAPU8.set(bytes, pointer);
    return pointer;
  }

  private loadChunk(source: string, name: string): number {
    const bytes = encoder.encode(source);
    const nameBytes = encoder.encode(`${name}\0`);
    const pointer = this.module._malloc(bytes.length + nameBytes.length);
    this.module.HEAPU8.set(bytes, pointer);
    this.module.HEAPU8.set(nameBytes, pointer + bytes.length);
    try {
      return this.module._luaL_loadbuffer(this.state, pointer, bytes.length, pointer + bytes.length);
    } finally {
      this.module._free(pointer);
    }
  }

  /** KEYS / ARGV, set raw: past the globals' protection, as Redis sets them. */
  private setGlobalArray(name: string, values: readonly string[]): void {
    const { module, state } = this;
    this.pushText(state, name);
    module._lua_createtable(state, values.length, 0);
    values.forEach((value, index) => {
      this.pushText(state, value);
      module._lua_rawseti(state, -2, index + 1);
    });
    module._lua_rawset(state, LUA_GLOBALSINDEX);
  }

  /**
   * `__herald_raw_call(...)`: the command's reply converted to Lua (nil bulk as false), or
   * `false, {err = …}` for an error reply (scripting.lua raises it for redis.call).
   */
  private call(state: number): number {
    const { module } = this;
    const count = module._lua_gettop(state);
    const args: string[] = [];
    for (let index = 1; index <= count; index++) {
      const type = module._lua_type(state, index);
      if (type === LUA_TNUMBER) args.push(numberArgument(module._lua_tonumber(state, index)));
      else if (type === LUA_TSTRING) args.push(this.text(state, index));
      else {
        this.pushError(state, 'ERR Lua redis lib command arguments must be strings or integers');
        return 2;
      }
    }
    if (count === 0) {
      this.pushError(state, 'ERR Please specify at least one argument for this redis lib call');
      return 2;
    }
    const reply = this.dispatch(args);
    if (reply instanceof ReplyError) {
      this.pushError(state, reply.text);
      return 2;
    }
    this.pushReply(state, reply);
    return 1;
  }

  private pushError(state: number, text: string): void {
    this.module._lua_pushboolean(state, 0);
    this.pushField(state, 'err', text);
  }

  /** `{ [name] = text }` on the stack. */
  private pushField(state: number, name: Name, text: string): void {
    this.module._lua_createtable(state, 0, 1);
    this.pushText(state, text);
    this.module._lua_setfield(state, -2, this.names[name]);
  }

  /** Redis's reply -> Lua conversion (RESP2): nil as false, a status as {ok = …}. */
  private pushReply(state: number, reply: Reply): void {
    const { module } = this;
    if (reply === null) module._lua_pushboolean(state, 0);
    else if (typeof reply === 'number') module._lua_pushnumber(state, reply);
    else if (typeof reply === 'string') this.pushText(state, reply);
    else if (reply instanceof Status) this.pushField(state, 'ok', reply.text);
    else if (reply instanceof ReplyError) this.pushField(state, 'err', reply.text);
    else {
      module._lua_createtable(state, reply.length, 0);
      for (let index = 0; index < reply.length; index++) {
        this.pushReply(state, reply[index] as Reply);
        module._lua_rawseti(state, -2, index + 1);
      }
    }
  }

  /** Lua -> Redis reply (RESP2): numbers truncated to integers, true as 1, false and nil as nil. */
  private replyOf(state: number, index: number): Reply {
    const { module } = this;
    switch (module._lua_type(state, index)) {
      case LUA_TNUMBER:
        return Math.trunc(module._lua_tonumber(state, index));
      case LUA_TSTRING:
        return this.text(state, index);
      case LUA_TBOOLEAN:
        return module._lua_toboolean(state, index) ? 1 : null;
      case LUA_TTABLE:
        return this.tableReply(state, index);
      default:
        return null;
    }
  }

  private tableReply(state: number, index: number): Reply {
    const { module } = this;
    const absolute = index < 0 ? module._lua_gettop(state) + index + 1 : index;
    for (const [field, make] of [
      ['err', (text: string) => new ReplyError(text)],
      ['ok', (text: string) => new Status(text)],
    ] as const) {
      module._lua_getfield(state, absolute, this.names[field]);
      const found = module._lua_type(state, -1) === LUA_TSTRING ? this.text(state, -1) : undefined;
      module._lua_settop(state, -2);
      if (found !== undefined) return make(found);
    }
    const items: Reply[] = [];
    for (let position = 1; ; position++) {
      module._lua_rawgeti(state, absolute, position);
      if (module._lua_type(state, -1) === LUA_TNIL) {
        module._lua_settop(state, -2);
        break;
      }
      items.push(this.replyOf(state, -1));
      module._lua_settop(state, -2);
    }
    return items;
  }

  /** What a failed run raised: a redis.call error table as is, a runtime error as `ERR <message>`. */
  private errorOf(state: number, index: number): ReplyError {
    const { module } = this;
    if (module._lua_type(state, index) === LUA_TTABLE) {
      const reply = this.tableReply(state, index);
      if (reply instanceof ReplyError) return reply;
    }
    const message =
      module._lua_type(state, index) === LUA_TSTRING ? this.text(state, index) : 'unknown error';
    return new ReplyError(`ERR ${message}`);
  }

  /** The bytes of a Lua string (or number, as Lua formats it) at `index`, as UTF-8 text. */
  private text(state: number, index: number): string {
    const module = this.module;
    const pointer = module._lua_tolstring(state, index, this.lengthSlot);
    if (pointer === 0) return '';
    const length = module.HEAPU32[this.lengthSlot >> 2] as number;
    const heap = module.HEAPU8;
    // Keys, field names and numbers are short and ASCII: read them without a TextDecoder call.
    if (length <= SHORT_TEXT) {
      let text = '';
      for (let at = pointer; at < pointer + length; at++) {
        const byte = heap[at] as number;
        if (byte >= 0x80) return decoder.decode(heap.subarray(pointer, pointer + length));
        text += String.fromCharCode(byte);
      }
      return text;
    }
    return decoder.decode(heap.subarray(pointer, pointer + length));
  }

  private pushText(state: number, text: string): void {
    const module = this.module;
    const needed = text.length * 3;
    if (needed > this.scratchSize) {
      module._free(this.scratch);
      this.scratchSize = Math.max(needed, 4096);
      this.scratch = module._malloc(this.scratchSize);
    }
    const heap = module.HEAPU8;
    if (text.length <= SHORT_TEXT) {
      let at = this.scratch;
      for (let index = 0; index < text.length; index++) {
        const code = text.charCodeAt(index);
        if (code >= 0x80) {
          at = -1;
          break;
        }
        heap[at++] = code;
      }
      if (at >= 0) {
        module._lua_pushlstring(state, this.scratch, text.length);
        return;
      }
    }
    const { written } = encoder.encodeInto(
      text,
      heap.subarray(this.scratch, this.scratch + this.scratchSize),
    );
    module._lua_pushlstring(state, this.scratch, written);
  }
}
