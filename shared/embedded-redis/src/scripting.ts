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

/** The emscripten exports used here (wasmoon-lua5.1's module, called with raw pointers). */
interface Module {
  HEAPU8: Uint8Array;
  HEAPU32: Uint32Array;
  _malloc(size: number): number;
  _free(pointer: number): void;
  _lua_tolstring(state: number, index: number, length: number): number;
  _lua_pushlstring(state: number, pointer: number, length: number): void;
  _luaL_loadbuffer(state: number, pointer: number, length: number, name: number): number;
  addFunction(implementation: (state: number) => number, signature: string): number;
}

interface Api {
  module: Module;
  lua_gettop(state: number): number;
  lua_settop(state: number, index: number): void;
  lua_type(state: number, index: number): number;
  lua_tonumber(state: number, index: number): number;
  lua_toboolean(state: number, index: number): number;
  lua_pushnumber(state: number, value: number): void;
  lua_pushboolean(state: number, value: number): void;
  lua_pushnil(state: number): void;
  lua_createtable(state: number, array: number, record: number): void;
  lua_rawseti(state: number, index: number, n: number): void;
  lua_rawgeti(state: number, index: number, n: number): number;
  lua_setfield(state: number, index: number, key: string): void;
  lua_getfield(state: number, index: number, key: string): void;
  lua_pushcclosure(state: number, fn: number, upvalues: number): void;
  lua_setglobal(state: number, name: string): void;
  lua_pcall(state: number, args: number, results: number, handler: number): number;
  lua_rawset(state: number, index: number): void;
  luaL_ref(state: number, table: number): number;
  luaL_unref(state: number, table: number, ref: number): void;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A number given to redis.call as Redis 7.0 turns it into an argument (`%.17g`, integers plain). */
function numberArgument(value: number): string {
  return Number.isInteger(value) && Math.abs(value) < 2 ** 63
    ? BigInt(value).toString()
    : formatDouble(value);
}

export type Dispatch = (args: string[]) => Reply;

export class Scripting {
  private readonly module: Module;
  private readonly state: number;
  /** sha -> registry reference of the compiled function. */
  private readonly functions = new Map<string, number>();
  private readonly lengthSlot: number;
  private scratch = 0;
  private scratchSize = 0;

  private constructor(
    private readonly lua: Lua,
    private readonly api: Api,
    private readonly dispatch: Dispatch,
  ) {
    this.module = api.module;
    this.state = lua.global.address as unknown as number;
    this.lengthSlot = this.module._malloc(4);
    const raw = this.module.addFunction((state) => this.call(state), 'ii');
    api.lua_pushcclosure(this.state, raw, 0);
    api.lua_setglobal(this.state, '__herald_raw_call');
    this.evaluate(PRELUDE, '@scripting');
  }

  /** A Lua state with the `redis` and `cjson` libraries, calling `dispatch` for redis.call. */
  static async create(dispatch: Dispatch): Promise<Scripting> {
    const lua = await Lua.create();
    return new Scripting(lua, lua.luaApi as unknown as Api, dispatch);
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
    const { api, state } = this;
    if (this.loadChunk(source, '@user_script') !== 0) {
      const message = this.text(state, -1);
      api.lua_settop(state, 0);
      throw new ReplyError(`ERR Error compiling script (new function): ${message}`);
    }
    this.functions.set(sha, api.luaL_ref(state, LUA_REGISTRYINDEX));
    return sha;
  }

  flush(): void {
    for (const ref of this.functions.values()) this.api.luaL_unref(this.state, LUA_REGISTRYINDEX, ref);
    this.functions.clear();
  }

  /** Runs a loaded script with KEYS and ARGV; its reply, or the ReplyError it raised. */
  run(sha: string, keys: readonly string[], args: readonly string[]): Reply {
    const ref = this.functions.get(sha);
    if (ref === undefined) return new ReplyError('NOSCRIPT No matching script. Please use EVAL.');
    const { api, state } = this;
    api.lua_settop(state, 0);
    this.setGlobalArray('KEYS', keys);
    this.setGlobalArray('ARGV', args);
    api.lua_rawgeti(state, LUA_REGISTRYINDEX, ref);
    const status = api.lua_pcall(state, 0, 1, 0);
    try {
      if (status !== 0) return this.errorOf(state, -1);
      return this.replyOf(state, -1);
    } finally {
      api.lua_settop(state, 0);
    }
  }

  close(): void {
    this.module._free(this.lengthSlot);
    if (this.scratch) this.module._free(this.scratch);
    this.lua.global.close();
  }

  private evaluate(source: string, name: string): void {
    const { api, state } = this;
    if (this.loadChunk(source, name) !== 0 || api.lua_pcall(state, 0, 0, 0) !== 0) {
      const message = this.text(state, -1);
      api.lua_settop(state, 0);
      throw new Error(`embedded Lua: ${name}: ${message}`);
    }
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
    const { api, state } = this;
    this.pushText(state, name);
    api.lua_createtable(state, values.length, 0);
    values.forEach((value, index) => {
      this.pushText(state, value);
      api.lua_rawseti(state, -2, index + 1);
    });
    api.lua_rawset(state, LUA_GLOBALSINDEX);
  }

  /**
   * `__herald_raw_call(...)`: the command's reply converted to Lua (nil bulk as false), or
   * `false, {err = …}` for an error reply (scripting.lua raises it for redis.call).
   */
  private call(state: number): number {
    const { api } = this;
    const count = api.lua_gettop(state);
    const args: string[] = [];
    for (let index = 1; index <= count; index++) {
      const type = api.lua_type(state, index);
      if (type === LUA_TNUMBER) args.push(numberArgument(api.lua_tonumber(state, index)));
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
    this.api.lua_pushboolean(state, 0);
    this.api.lua_createtable(state, 0, 1);
    this.pushText(state, text);
    this.api.lua_setfield(state, -2, 'err');
  }

  /** Redis's reply -> Lua conversion (RESP2): nil as false, a status as {ok = …}. */
  private pushReply(state: number, reply: Reply): void {
    const { api } = this;
    if (reply === null) api.lua_pushboolean(state, 0);
    else if (typeof reply === 'number') api.lua_pushnumber(state, reply);
    else if (typeof reply === 'string') this.pushText(state, reply);
    else if (reply instanceof Status) {
      api.lua_createtable(state, 0, 1);
      this.pushText(state, reply.text);
      api.lua_setfield(state, -2, 'ok');
    } else if (reply instanceof ReplyError) {
      api.lua_createtable(state, 0, 1);
      this.pushText(state, reply.text);
      api.lua_setfield(state, -2, 'err');
    } else {
      api.lua_createtable(state, reply.length, 0);
      reply.forEach((item, index) => {
        this.pushReply(state, item);
        api.lua_rawseti(state, -2, index + 1);
      });
    }
  }

  /** Lua -> Redis reply (RESP2): numbers truncated to integers, true as 1, false and nil as nil. */
  private replyOf(state: number, index: number): Reply {
    const { api } = this;
    switch (api.lua_type(state, index)) {
      case LUA_TNUMBER:
        return Math.trunc(api.lua_tonumber(state, index));
      case LUA_TSTRING:
        return this.text(state, index);
      case LUA_TBOOLEAN:
        return api.lua_toboolean(state, index) ? 1 : null;
      case LUA_TTABLE:
        return this.tableReply(state, index);
      default:
        return null;
    }
  }

  private tableReply(state: number, index: number): Reply {
    const { api } = this;
    const absolute = index < 0 ? api.lua_gettop(state) + index + 1 : index;
    for (const [field, make] of [
      ['err', (text: string) => new ReplyError(text)],
      ['ok', (text: string) => new Status(text)],
    ] as const) {
      api.lua_getfield(state, absolute, field);
      const found = api.lua_type(state, -1) === LUA_TSTRING ? this.text(state, -1) : undefined;
      api.lua_settop(state, -2);
      if (found !== undefined) return make(found);
    }
    const items: Reply[] = [];
    for (let position = 1; ; position++) {
      api.lua_rawgeti(state, absolute, position);
      if (api.lua_type(state, -1) === LUA_TNIL) {
        api.lua_settop(state, -2);
        break;
      }
      items.push(this.replyOf(state, -1));
      api.lua_settop(state, -2);
    }
    return items;
  }

  /** What a failed run raised: a redis.call error table as is, a runtime error as `ERR <message>`. */
  private errorOf(state: number, index: number): ReplyError {
    const { api } = this;
    if (api.lua_type(state, index) === LUA_TTABLE) {
      const reply = this.tableReply(state, index);
      if (reply instanceof ReplyError) return reply;
    }
    const message = api.lua_type(state, index) === LUA_TSTRING ? this.text(state, index) : 'unknown error';
    return new ReplyError(`ERR ${message}`);
  }

  /** The bytes of a Lua string (or number, as Lua formats it) at `index`, as UTF-8 text. */
  private text(state: number, index: number): string {
    const module = this.module;
    const pointer = module._lua_tolstring(state, index, this.lengthSlot);
    if (pointer === 0) return '';
    const length = module.HEAPU32[this.lengthSlot >> 2] as number;
    return decoder.decode(module.HEAPU8.subarray(pointer, pointer + length));
  }

  private pushText(state: number, text: string): void {
    const module = this.module;
    const needed = text.length * 3;
    if (needed > this.scratchSize) {
      if (this.scratch) module._free(this.scratch);
      this.scratchSize = Math.max(needed, 4096);
      this.scratch = module._malloc(this.scratchSize);
    }
    const { written } = encoder.encodeInto(
      text,
      module.HEAPU8.subarray(this.scratch, this.scratch + this.scratchSize),
    );
    module._lua_pushlstring(state, this.scratch, written);
  }
}
