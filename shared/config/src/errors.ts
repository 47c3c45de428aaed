import { HeraldError } from '@herald/errors';

/**
 * A setting that is missing, malformed or unknown. The message always names the variable. It
 * stops a process at boot; should one ever reach a request, it is a server fault (500, not shown).
 */
export class ConfigError extends HeraldError {
  override readonly name = 'ConfigError';

  constructor(
    readonly variable: string,
    reason: string,
  ) {
    super('HERALD_CONFIG_INVALID', 500, `${variable}: ${reason}`);
  }
}
