import { type RouterApiSession, fabricCallContracts } from '@ziti/contracts';
import { type Bus, callService } from '@ziti/platform';
import type { ApiSessionSource } from './api-sessions.ports.ts';

/** auth over the bus. */
export class BusApiSessionSource implements ApiSessionSource {
  constructor(private readonly bus: Bus) {}

  page(cursor: string | undefined, limit: number) {
    return callService(this.bus, 'auth', fabricCallContracts.routerApiSessions, {
      ...(cursor === undefined ? {} : { cursor }),
      limit,
    });
  }

  async of(identityIds: string[]): Promise<RouterApiSession[]> {
    if (identityIds.length === 0) return [];
    return (await callService(this.bus, 'auth', fabricCallContracts.routerApiSessionsOf, { identityIds })).sessions;
  }

  async touch(tokens: string[]): Promise<string[]> {
    if (tokens.length === 0) return [];
    return (await callService(this.bus, 'auth', fabricCallContracts.touchApiSessions, { tokens })).gone;
  }
}
