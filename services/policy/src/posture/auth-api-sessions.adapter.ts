import { authCallContracts } from '@ziti/contracts';
import { type Bus, callService } from '@ziti/platform';
import { type LiveApiSessions, type SdkInfo, sdkInfoFields } from './posture-data.domain.ts';
import type { ApiSessionDirectory } from './posture-data.ports.ts';

/**
 * auth over the bus: the ids of the identity's live API sessions from its session store (nothing
 * else of them leaves auth: `apiSessionIdsOf`), and the identity's `sdkInfo` from its management
 * detail.
 */
export class BusApiSessionDirectory implements ApiSessionDirectory {
  constructor(private readonly bus: Bus) {}

  async liveOf(identityId: string): Promise<LiveApiSessions> {
    const [sessions, details] = await Promise.all([
      callService(this.bus, 'auth', authCallContracts.apiSessionIdsOf, { identityId }),
      callService(this.bus, 'auth', authCallContracts.identityDetails, { ids: [identityId] }),
    ]);
    return {
      ids: sessions.ids,
      sdkInfo: sdkInfoOf(details.details.find((d) => d.id === identityId)?.sdkInfo),
    };
  }
}

/** The spec's SDK fields of an identity detail's `sdkInfo`, each only when a non-empty string. */
export function sdkInfoOf(value: unknown): SdkInfo {
  const out: SdkInfo = {};
  if (typeof value !== 'object' || value === null) return out;
  const info = value as Record<string, unknown>;
  for (const k of sdkInfoFields) {
    const v = info[k];
    if (typeof v === 'string' && v !== '') out[k] = v;
  }
  return out;
}
