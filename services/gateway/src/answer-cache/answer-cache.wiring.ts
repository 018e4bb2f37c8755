import type { Bus, Logger } from '@ziti/platform';
import type { GatewayConfig } from '../config.ts';
import { AnswerCacheFollower } from './answer-cache-follower.transport.ts';

/** The answers the pipeline keeps (docs/adr/0015), and the follower of the events that change them. */
export const answerCacheWiring = (deps: { config: GatewayConfig; bus: Bus; logger: Logger }) =>
  new AnswerCacheFollower(deps.bus, deps.logger, {
    identities: deps.config.answerCacheEntries,
    serviceChars: deps.config.serviceAnswerCacheChars,
  });
