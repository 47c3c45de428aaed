/*
 * Authentication is the shared broker profile of @herald/auth (one route table, role sets,
 * JWKS cache). This module only adapts it to the broker: boot validation as a message instead
 * of an exception, so main.ts can exit before binding.
 */

import { type BrokerAuthConfig, validateBrokerAuthConfig } from '@herald/auth';
import { ConfigError } from '@herald/config';

export {
  type BrokerAuthConfig,
  type BrokerIdentity,
  brokerAuthPlugin,
  brokerAuthSettings,
  classifyBrokerRoute,
  requireDeclaredAccess,
} from '@herald/auth';

/** The boot-validation problem (naming what is missing), or undefined when the config is usable. */
export function authConfigProblem(config: BrokerAuthConfig): string | undefined {
  try {
    validateBrokerAuthConfig(config);
    return undefined;
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
}
