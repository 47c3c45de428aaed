/**
 * The logging surface this package needs: a subset of pino's, so a pino logger (or a fastify
 * `request.log`) can be passed as is. Objects come first, as pino expects.
 */
export interface AuthLogger {
  debug(object: Record<string, unknown>, message: string): void;
  info(object: Record<string, unknown>, message: string): void;
  warn(object: Record<string, unknown>, message: string): void;
  error(object: Record<string, unknown>, message: string): void;
}

export const silentLogger: AuthLogger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
};
