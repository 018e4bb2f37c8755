import type { IntegrityResult } from '@ziti/contracts';
import type { EventSink } from '@ziti/platform/event-sink';
import type { AccessLinks } from '../access/access.ports.ts';
import type { OwnerPage } from '../read-models/read-model-integrity.domain.ts';
import type {
  EdgeRouterReadModel,
  IdentityReadModel,
  RouterPresenceReadModel,
  ServiceReadModel,
} from '../read-models/read-models.ports.ts';

/** What policy's integrity check reads and, when fixing, writes. */
export interface PolicyIntegrityPorts {
  /** The events policy's consumers parked: reported, never fixed by the check. */
  parkedEvents(): Promise<IntegrityResult[]>;
  /** An owner's current states of one entity type, page by page in bytewise id order. */
  ownerPages(
    owner: 'auth' | 'inventory',
    type: 'identity' | 'service' | 'edgeRouter' | 'routerPresence',
  ): AsyncIterable<OwnerPage>;
  readModels: {
    identities: IdentityReadModel;
    services: ServiceReadModel;
    edgeRouters: EdgeRouterReadModel;
    routerPresence: RouterPresenceReadModel;
  };
  /** One unit of work over the derived links; the events of a fix leave with it. */
  accessWork: <T>(fn: (s: { links: AccessLinks; events: EventSink }) => Promise<T>) => Promise<T>;
}
