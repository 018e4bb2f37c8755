import { ts } from '../shared/wire.mapper.ts';
import type { IdentityTrace } from './identity-traces.ports.ts';

/** Wire shape of an identity's trace (ZITI-FACTS §12). */
export function traceDetail(t: IdentityTrace) {
  return t.enabled && t.until ? { enabled: true, traceId: t.traceId ?? '', until: ts(t.until) } : { enabled: false };
}
