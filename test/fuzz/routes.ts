import type { FastifyInstance } from 'fastify';

export interface RouteSpec {
  readonly method: string;
  /** Fastify's path, parameters as `:name`, wildcard as `*`. */
  readonly path: string;
}

const METHODS = /^(.*) \(([A-Z, ]+)\)$/;

/**
 * Every route an app registered, read back from `printRoutes()`: each line of the tree is one
 * node, indented four characters per level, carrying the path segment it adds and its methods.
 * Reading the app (not a hand-kept list) means a new route is fuzzed the day it is added.
 */
export function registeredRoutes(app: FastifyInstance): RouteSpec[] {
  const routes: RouteSpec[] = [];
  const prefixes: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const start = line.search(/[^│├└─\s]/u);
    if (start === -1) continue;
    const depth = Math.floor(start / 4);
    const match = METHODS.exec(line.slice(start));
    const segment = match ? (match[1] as string) : line.slice(start).trim();
    const path = (depth === 0 ? '' : (prefixes[depth - 1] ?? '')) + segment;
    prefixes[depth] = path;
    prefixes.length = depth + 1;
    if (!match) continue;
    for (const method of (match[2] as string).split(',').map((text) => text.trim())) {
      routes.push({ method, path });
    }
  }
  return routes;
}
