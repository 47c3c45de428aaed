/** A setting that is missing, malformed or unknown. The message always names the variable. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly code = 'HERALD_ERR_CONFIG';

  constructor(
    readonly variable: string,
    reason: string,
  ) {
    super(`${variable}: ${reason}`);
  }
}
