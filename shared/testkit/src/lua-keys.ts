/*
 * The key discipline of Lua scripts on Redis Cluster (issue #12; docs/broker-topologies.md "Redis
 * topologies"): every key a script touches is a declared KEYS[i], or that text with a suffix
 * appended (`KEYS[1] .. 's:' .. p`), so the key keeps the declared key's hash tag and lives in
 * the slot the call was routed to. A key built from ARGV, a literal or anything else is refused.
 *
 * The one checker of both services (the hub's scripts and the broker's): `scanScriptKeys(name,
 * source)` checks one script's text (after `--@include` expansion), `scanScripts(scripts)` every
 * script of a set as `loadScripts` (@herald/redis) gives it. The analysis is a whole-script fixpoint over names (not
 * scopes): a variable, function parameter, table field or function result counts as
 * key-derived only when every value ever bound to that name is key-derived. That is
 * conservative (reusing a name for a non-key value elsewhere in the script makes its key uses
 * fail: rename it) and never accepts a key whose origin it cannot follow. What it cannot see is
 * the text of KEYS at run time: that the declared keys carry the hash tag (so a suffix cannot
 * move them) is the caller's side, checked where scripts are called (the broker's
 * BROKER_REDIS_ONE_SLOT check, slots.test.ts).
 */
import type luaparse from 'luaparse';
import { type LoadedScript, parseLua, walk } from './lua-tree.js';

export interface KeyViolation {
  readonly script: string;
  readonly line: number;
  readonly command: string;
  readonly message: string;
}

type Node = luaparse.Node;
type Expression = luaparse.Expression;

/** Commands without a key argument. */
const NO_KEY = new Set(['TIME', 'PING', 'ECHO', 'INFO']);
/** Commands whose every argument is a key. */
const ALL_KEYS = new Set(['DEL', 'UNLINK', 'EXISTS', 'MGET', 'TOUCH', 'SINTER', 'SUNION', 'SDIFF', 'WATCH']);
/**
 * Commands whose first argument is the key (or, for PUBLISH and SPUBLISH, the channel: declared
 * as a key so a Cluster routes the call to the shard owning it, as the hub's publish-4.lua
 * does). A command outside these tables fails the scan: add it with its key positions rather
 * than guess.
 */
const FIRST_KEY = new Set(
  (
    'GET SET SETNX SETEX PSETEX GETSET GETDEL INCR INCRBY DECR DECRBY APPEND STRLEN EXPIRE PEXPIRE ' +
    'EXPIREAT PEXPIREAT PERSIST TTL PTTL TYPE ' +
    'HGET HSET HSETNX HMGET HMSET HDEL HEXISTS HLEN HKEYS HVALS HGETALL HINCRBY HINCRBYFLOAT HSCAN ' +
    'SADD SREM SCARD SISMEMBER SMISMEMBER SMEMBERS SPOP SRANDMEMBER SSCAN ' +
    'ZADD ZREM ZCARD ZSCORE ZMSCORE ZINCRBY ZRANK ZREVRANK ZRANGE ZREVRANGE ZRANGEBYSCORE ' +
    'ZREVRANGEBYSCORE ZREMRANGEBYSCORE ZREMRANGEBYRANK ZCOUNT ZPOPMIN ZPOPMAX ZSCAN ' +
    'LPUSH RPUSH LPOP RPOP LLEN LRANGE LTRIM LINDEX LREM LSET ' +
    'XADD XRANGE XREVRANGE XLEN XDEL XTRIM XACK XCLAIM XAUTOCLAIM XPENDING XINFO PUBLISH SPUBLISH'
  ).split(' '),
);

function isKeysIndex(expression: Expression): boolean {
  return (
    expression.type === 'IndexExpression' &&
    expression.base.type === 'Identifier' &&
    expression.base.name === 'KEYS'
  );
}

function isRedisCall(node: luaparse.CallExpression): boolean {
  const callee = node.base;
  return (
    callee.type === 'MemberExpression' &&
    callee.base.type === 'Identifier' &&
    callee.base.name === 'redis' &&
    (callee.identifier.name === 'call' || callee.identifier.name === 'pcall')
  );
}

function callArguments(node: Node): Expression[] {
  if (node.type === 'CallExpression') return node.arguments;
  if (node.type === 'StringCallExpression') return [node.argument];
  if (node.type === 'TableCallExpression') return [node.arguments];
  return [];
}

interface Bindings {
  /** Name -> every expression bound to it (`false`: a value the analysis cannot follow). */
  readonly names: Map<string, (Expression | false)[]>;
  readonly fields: Map<string, (Expression | false)[]>;
  /** Function name -> its return expressions (first value of each). */
  readonly returns: Map<string, (Expression | false)[]>;
}

function bind(map: Map<string, (Expression | false)[]>, name: string, value: Expression | false): void {
  const list = map.get(name) ?? [];
  list.push(value);
  map.set(name, list);
}

/** Collects what is bound to each name, field and function result in one script. */
function collectBindings(chunk: luaparse.Chunk): Bindings {
  const bindings: Bindings = { names: new Map(), fields: new Map(), returns: new Map() };
  const functions = new Map<string, luaparse.FunctionDeclaration>();
  const bindList = (targets: Node[], values: Expression[]) => {
    targets.forEach((target, index) => {
      const value = values[index];
      // A call's extra results, or no value at all (nil): not followed.
      const bound = value && !(index === values.length - 1 && index < targets.length - 1) ? value : false;
      if (target.type === 'Identifier') bind(bindings.names, target.name, bound);
      else if (target.type === 'MemberExpression') bind(bindings.fields, target.identifier.name, bound);
    });
    // More targets than values: the last value's further results (or nil) are not followed.
    for (let index = values.length; index < targets.length; index++) {
      const target = targets[index] as Node;
      if (target.type === 'Identifier') bind(bindings.names, target.name, false);
    }
  };
  walk(chunk, (node) => {
    switch (node.type) {
      case 'LocalStatement':
      case 'AssignmentStatement':
        bindList(node.variables, node.init);
        break;
      case 'FunctionDeclaration': {
        const name = node.identifier?.type === 'Identifier' ? node.identifier.name : undefined;
        if (name) functions.set(name, node);
        const returns: (Expression | false)[] = [];
        walk(node, (inner) => {
          if (inner.type === 'ReturnStatement' && inner !== (node as Node)) {
            returns.push(inner.arguments[0] ?? false);
          }
        });
        if (name) bindings.returns.set(name, returns);
        break;
      }
      case 'ForGenericStatement':
        for (const variable of node.variables) bind(bindings.names, variable.name, false);
        break;
      case 'ForNumericStatement':
        bind(bindings.names, node.variable.name, false);
        break;
      case 'TableConstructorExpression':
        for (const field of node.fields) {
          if (field.type === 'TableKeyString') bind(bindings.fields, field.key.name, field.value);
        }
        break;
      default:
        break;
    }
  });
  // Parameters: bound to the arguments of every call by name; a function used as a value
  // (passed, stored) has parameters bound to what the analysis cannot follow.
  const called = new Set<Node>();
  walk(chunk, (node) => {
    if (
      node.type !== 'CallExpression' &&
      node.type !== 'StringCallExpression' &&
      node.type !== 'TableCallExpression'
    )
      return;
    if (node.base.type !== 'Identifier') return;
    const declaration = functions.get(node.base.name);
    if (!declaration) return;
    called.add(node.base);
    const args = callArguments(node);
    declaration.parameters.forEach((parameter, index) => {
      if (parameter.type !== 'Identifier') return;
      const last = index === args.length - 1 || index >= args.length;
      const value = args[index];
      bind(bindings.names, parameter.name, value && !(last && index < args.length - 1) ? value : false);
    });
  });
  // Names after `.`/`:` and table keys are not references to a function.
  walk(chunk, (node) => {
    if (node.type === 'MemberExpression') called.add(node.identifier);
    if (node.type === 'TableKeyString') called.add(node.key);
  });
  walk(chunk, (node) => {
    if (node.type === 'Identifier' && functions.has(node.name) && !called.has(node)) {
      const declaration = functions.get(node.name) as luaparse.FunctionDeclaration;
      if (declaration.identifier === node) return;
      for (const parameter of declaration.parameters) {
        if (parameter.type === 'Identifier') bind(bindings.names, parameter.name, false);
      }
    }
  });
  // Anonymous functions' parameters are not followed.
  walk(chunk, (node) => {
    if (node.type === 'FunctionDeclaration' && !node.identifier) {
      for (const parameter of node.parameters) {
        if (parameter.type === 'Identifier') bind(bindings.names, parameter.name, false);
      }
    }
  });
  return bindings;
}

/**
 * Decides which names, fields and function results are key-derived: the greatest fixpoint
 * (every name starts derived, one with any binding that is not loses it, until nothing moves).
 */
function keyDerivation(bindings: Bindings): (expression: Expression) => boolean {
  const names = new Set(bindings.names.keys());
  const fields = new Set(bindings.fields.keys());
  const results = new Set(bindings.returns.keys());
  const derived = (expression: Expression): boolean => {
    switch (expression.type) {
      case 'IndexExpression':
        return isKeysIndex(expression);
      case 'BinaryExpression':
        // `a .. b .. c` parses as `a .. (b .. c)`: the leftmost operand is the key's prefix.
        return expression.operator === '..' && derived(expression.left);
      case 'Identifier':
        return names.has(expression.name);
      case 'MemberExpression':
        return fields.has(expression.identifier.name);
      case 'CallExpression':
        return expression.base.type === 'Identifier' && results.has(expression.base.name);
      default:
        return false;
    }
  };
  for (let changed = true; changed; ) {
    changed = false;
    for (const [map, set] of [
      [bindings.names, names],
      [bindings.fields, fields],
      [bindings.returns, results],
    ] as const) {
      for (const [name, values] of map) {
        if (set.has(name) && values.some((value) => value === false || !derived(value))) {
          set.delete(name);
          changed = true;
        }
      }
    }
  }
  return derived;
}

function describe(source: string, expression: Expression): string {
  const range = (expression as { range?: [number, number] }).range;
  return range ? source.slice(range[0], range[1]) : expression.type;
}

/** The redis.call/pcall sites of one script whose key arguments are not derived from KEYS. */
export function scanScriptKeys(script: string, source: string): KeyViolation[] {
  const chunk = parseLua(source);
  const derived = keyDerivation(collectBindings(chunk));
  const violations: KeyViolation[] = [];
  walk(chunk, (node) => {
    if (node.type !== 'CallExpression' || !isRedisCall(node)) return;
    const [commandArgument, ...rest] = node.arguments;
    const line = node.loc?.start.line ?? 0;
    const report = (command: string, message: string) => violations.push({ script, line, command, message });
    if (!commandArgument) return report('?', 'redis.call without a command');
    let keys: Expression[];
    let command: string;
    if (commandArgument.type === 'StringLiteral') {
      command = (commandArgument.raw.slice(1, -1) || '').toUpperCase();
      if (NO_KEY.has(command)) keys = [];
      else if (ALL_KEYS.has(command)) keys = rest;
      else if (FIRST_KEY.has(command)) keys = rest.slice(0, 1);
      else
        return report(
          command,
          `unknown command ${command}: add its key positions to @herald/testkit lua-keys.ts`,
        );
    } else {
      // A command chosen at run time (a chunked helper): its first argument is taken as the key.
      command = `<${describe(source, commandArgument)}>`;
      keys = rest.slice(0, 1);
    }
    if (keys.length === 0 && !NO_KEY.has(command)) report(command, 'no key argument');
    for (const key of keys) {
      if (!derived(key)) {
        report(command, `key ${describe(source, key)} is not a declared KEYS[i] or a suffix on one`);
      }
    }
  });
  return violations;
}

/** Every script of a set, `--@include`s expanded (a `ScriptSet`'s values from `loadScripts`). */
export function scanScripts(scripts: Iterable<LoadedScript>): KeyViolation[] {
  return [...scripts].flatMap((script) => scanScriptKeys(script.name, script.source));
}
