import type { Bus, Logger } from '@ziti/platform';
import type { GatewayConfig } from '../config.ts';
import { ClientAddresses } from './client-address.transport.ts';
import { ExtJwtSecondaryCheck } from './ext-jwt-secondary.transport.ts';
import { type AuthRateLimiter, TokenBucketLimiter } from './rate-limit.domain.ts';

/**
 * What the pipeline's authentication step needs beside the API sessions: the rate limit of
 * authentications (the cluster's shared through Redis when given, else counted by this process),
 * the caller's address behind trusted proxies, and the external-JWT secondary check.
 */
export function edgeAuthWiring(deps: {
  config: GatewayConfig;
  bus: Bus;
  logger: Logger;
  authLimiter?: AuthRateLimiter;
}) {
  const { config } = deps;
  const authLimiter =
    deps.authLimiter ?? (config.authRateLimit ? new TokenBucketLimiter(config.authRateLimit) : undefined);
  return {
    ...(authLimiter ? { authLimiter } : {}),
    clientAddresses: new ClientAddresses(config.trustedProxies, config.forwardedHeader),
    extJwt: new ExtJwtSecondaryCheck(deps.bus, deps.logger),
  };
}
