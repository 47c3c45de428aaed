/*
 * What a script ships (issue #23, item 3; bullmq's includes): each script includes only the
 * helpers it uses, so what Redis receives per call stays small, and an included helper is
 * defined before anything that uses it.
 *
 * `helperGraph(source)` resolves every name of one expanded script by Lua's scoping rules (a
 * `local` is visible after its statement, a `local function` inside its own body too) and links
 * each top-level local (function or value) to the top-level locals its body or initial value
 * names. The roots are the script's own statements (and values whose initialisation calls
 * something: it runs whether or not the value is read). `helperProblems` reports:
 *  - a top-level local nothing reachable from the roots names (a dead helper shipped, or a dead
 *    value): leave its include out, or delete it;
 *  - a name used before the top-level local that defines it: Lua reads it as a global (nil at
 *    run time), so the include defining it must come first (name it with `--@include` at the
 *    top of the helper that uses it).
 */
import type luaparse from 'luaparse';
import { type LoadedScript, parseLua } from './lua-tree.js';

type Node = luaparse.Node;

/** A top-level local of a script: a function (`local function f`) or a value. */
export interface TopLevelLocal {
  readonly name: string;
  readonly line: number;
  readonly isFunction: boolean;
  /** The top-level locals its body or initial value names. */
  readonly uses: ReadonlySet<TopLevelLocal>;
}

export interface HelperGraph {
  readonly locals: readonly TopLevelLocal[];
  /** What the script's own statements reach, directly or through other locals. */
  readonly reached: ReadonlySet<TopLevelLocal>;
  /** Names read as globals although a top-level local of that name is defined later. */
  readonly usedBeforeDefinition: readonly { readonly name: string; readonly line: number }[];
}

interface MutableLocal extends TopLevelLocal {
  readonly uses: Set<TopLevelLocal>;
}

type Scope = Map<string, MutableLocal | 'inner'>;

function lineOf(node: Node): number {
  return node.loc?.start.line ?? 0;
}

function containsCall(node: Node): boolean {
  let found = false;
  const visit = (inner: Node): void => {
    if (found) return;
    if (
      inner.type === 'CallExpression' ||
      inner.type === 'StringCallExpression' ||
      inner.type === 'TableCallExpression'
    ) {
      found = true;
      return;
    }
    // A function value is not run by its definition.
    if (inner.type === 'FunctionDeclaration') return;
    for (const value of Object.values(inner)) {
      if (Array.isArray(value)) {
        for (const item of value) if (item && typeof item === 'object' && 'type' in item) visit(item as Node);
      } else if (value && typeof value === 'object' && 'type' in value) visit(value as Node);
    }
  };
  visit(node);
  return found;
}

/** The top-level locals of one expanded script and what its statements reach. */
export function helperGraph(source: string): HelperGraph {
  const chunk = parseLua(source);
  const locals: MutableLocal[] = [];
  const laterNames = new Set<string>();
  for (const statement of chunk.body) {
    if (statement.type === 'LocalStatement')
      for (const variable of statement.variables) laterNames.add(variable.name);
    if (
      statement.type === 'FunctionDeclaration' &&
      statement.isLocal &&
      statement.identifier?.type === 'Identifier'
    ) {
      laterNames.add(statement.identifier.name);
    }
  }
  const rootUses = new Set<TopLevelLocal>();
  const usedBeforeDefinition: { name: string; line: number }[] = [];
  const top: Scope = new Map();

  const resolve = (
    scopes: readonly Scope[],
    identifier: luaparse.Identifier,
    owner: Set<TopLevelLocal>,
  ): void => {
    for (let index = scopes.length - 1; index >= 0; index--) {
      const binding = scopes[index]?.get(identifier.name);
      if (binding === undefined) continue;
      if (binding !== 'inner') owner.add(binding);
      return;
    }
    if (laterNames.has(identifier.name))
      usedBeforeDefinition.push({ name: identifier.name, line: lineOf(identifier) });
  };

  const expression = (node: Node | null | undefined, scopes: Scope[], owner: Set<TopLevelLocal>): void => {
    if (!node) return;
    switch (node.type) {
      case 'Identifier':
        resolve(scopes, node, owner);
        return;
      case 'MemberExpression':
        expression(node.base, scopes, owner);
        return;
      case 'IndexExpression':
        expression(node.base, scopes, owner);
        expression(node.index, scopes, owner);
        return;
      case 'CallExpression':
        expression(node.base, scopes, owner);
        for (const argument of node.arguments) expression(argument, scopes, owner);
        return;
      case 'StringCallExpression':
        expression(node.base, scopes, owner);
        return;
      case 'TableCallExpression':
        expression(node.base, scopes, owner);
        expression(node.arguments, scopes, owner);
        return;
      case 'TableConstructorExpression':
        for (const field of node.fields) {
          if (field.type === 'TableKey') expression(field.key, scopes, owner);
          expression(field.value, scopes, owner);
        }
        return;
      case 'BinaryExpression':
      case 'LogicalExpression':
        expression(node.left, scopes, owner);
        expression(node.right, scopes, owner);
        return;
      case 'UnaryExpression':
        expression(node.argument, scopes, owner);
        return;
      case 'FunctionDeclaration':
        functionBody(node, scopes, owner);
        return;
      default:
        return;
    }
  };

  const functionBody = (
    node: luaparse.FunctionDeclaration,
    scopes: Scope[],
    owner: Set<TopLevelLocal>,
  ): void => {
    const scope: Scope = new Map();
    for (const parameter of node.parameters)
      if (parameter.type === 'Identifier') scope.set(parameter.name, 'inner');
    block(node.body, [...scopes, scope], owner);
  };

  const declare = (scopes: Scope[], identifier: luaparse.Identifier, local: MutableLocal | 'inner'): void => {
    (scopes[scopes.length - 1] as Scope).set(identifier.name, local);
  };

  const block = (
    body: luaparse.Statement[],
    scopes: Scope[],
    owner: Set<TopLevelLocal>,
    scope: Scope = new Map(),
  ): void => {
    const inner = [...scopes, scope];
    const atTop = inner.length === 1;
    for (const node of body) {
      switch (node.type) {
        case 'LocalStatement': {
          if (!atTop) {
            for (const value of node.init) expression(value, inner, owner);
            for (const variable of node.variables) declare(inner, variable, 'inner');
            break;
          }
          // A value whose initialisation calls something runs whatever reads it: a root.
          const uses = new Set<TopLevelLocal>();
          const rooted = node.init.some(containsCall);
          for (const value of node.init) expression(value, inner, rooted ? rootUses : uses);
          for (const variable of node.variables) {
            const local: MutableLocal = {
              name: variable.name,
              line: lineOf(variable),
              isFunction: false,
              uses,
            };
            const [value] = node.init;
            if (node.variables.length === 1 && value?.type === 'FunctionDeclaration') {
              Object.assign(local, { isFunction: true });
            }
            if (!rooted) locals.push(local);
            declare(inner, variable, rooted ? 'inner' : local);
          }
          break;
        }
        case 'FunctionDeclaration': {
          if (node.isLocal && node.identifier?.type === 'Identifier') {
            if (atTop) {
              const local: MutableLocal = {
                name: node.identifier.name,
                line: lineOf(node.identifier),
                isFunction: true,
                uses: new Set(),
              };
              locals.push(local);
              declare(inner, node.identifier, local);
              functionBody(node, inner, local.uses);
            } else {
              declare(inner, node.identifier, 'inner');
              functionBody(node, inner, owner);
            }
          } else {
            expression(node.identifier, inner, owner);
            functionBody(node, inner, owner);
          }
          break;
        }
        case 'AssignmentStatement':
          for (const value of node.init) expression(value, inner, owner);
          for (const variable of node.variables) expression(variable, inner, owner);
          break;
        case 'CallStatement':
          expression(node.expression, inner, owner);
          break;
        case 'ReturnStatement':
          for (const argument of node.arguments) expression(argument, inner, owner);
          break;
        case 'IfStatement':
          for (const clause of node.clauses) {
            if (clause.type !== 'ElseClause') expression(clause.condition, inner, owner);
            block(clause.body, inner, owner);
          }
          break;
        case 'WhileStatement':
          expression(node.condition, inner, owner);
          block(node.body, inner, owner);
          break;
        case 'RepeatStatement': {
          // `until` sees the body's locals.
          const bodyScope: Scope = new Map();
          block(node.body, inner, owner, bodyScope);
          expression(node.condition, [...inner, bodyScope], owner);
          break;
        }
        case 'DoStatement':
          block(node.body, inner, owner);
          break;
        case 'ForNumericStatement': {
          expression(node.start, inner, owner);
          expression(node.end, inner, owner);
          expression(node.step, inner, owner);
          block(node.body, inner, owner, new Map([[node.variable.name, 'inner']]));
          break;
        }
        case 'ForGenericStatement': {
          for (const iterator of node.iterators) expression(iterator, inner, owner);
          block(
            node.body,
            inner,
            owner,
            new Map(node.variables.map((variable) => [variable.name, 'inner'] as const)),
          );
          break;
        }
        default:
          break;
      }
    }
  };

  block(chunk.body, [], rootUses, top);

  const reached = new Set<TopLevelLocal>();
  const visit = (local: TopLevelLocal): void => {
    if (reached.has(local)) return;
    reached.add(local);
    for (const used of local.uses) visit(used);
  };
  for (const local of rootUses) visit(local);
  return { locals, reached, usedBeforeDefinition };
}

/** Dead top-level locals and names used before their definition, one line each. */
export function helperProblems(script: LoadedScript): string[] {
  const graph = helperGraph(script.source);
  const problems: string[] = [];
  for (const local of graph.locals) {
    if (!graph.reached.has(local)) {
      const what = local.isFunction ? 'local function' : 'local';
      problems.push(
        `${script.name}:${local.line} ${what} ${local.name} is never used: leave its include out`,
      );
    }
  }
  for (const { name, line } of graph.usedBeforeDefinition) {
    problems.push(
      `${script.name}:${line} ${name} is used before its definition: include what defines it first`,
    );
  }
  return problems;
}
