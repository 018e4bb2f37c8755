import { ts } from '../shared/wire.mapper.ts';
import type { ControllerRecord } from './controllers.domain.ts';

/** Wire shape of a controller (`/controllers`). */
export function controllerDetail(c: ControllerRecord) {
  return {
    id: c.id,
    createdAt: ts(c.createdAt),
    updatedAt: ts(c.updatedAt),
    tags: {},
    _links: { self: { href: `./controllers/${c.id}` } },
    name: c.name,
    certPem: c.certPem,
    fingerprint: c.fingerprint,
    ctrlAddress: c.ctrlAddress,
    apiAddresses: c.apiAddresses,
    isOnline: c.isOnline,
    lastJoinedAt: ts(c.lastJoinedAt),
  };
}
