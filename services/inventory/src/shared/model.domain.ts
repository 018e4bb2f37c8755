import type { RouterSyncStatus, RouterVersionInfo } from '@ziti/contracts';
/** The list shapes are the platform's: every service lists through the same ZitiQL mechanism. */
import type { ListInput, ListPage, RoleFilter } from '@ziti/platform/list-page';
export type { ListInput, ListPage, RoleFilter };

/** inventory's entities as the domain sees them (no wire or storage shapes here). */

export type Tags = Record<string, unknown>;

export interface ConfigType {
  id: string;
  name: string;
  schema: Record<string, unknown>;
  tags: Tags;
  createdAt: Date;
  updatedAt: Date;
}

export interface Config {
  id: string;
  name: string;
  configTypeId: string;
  data: Record<string, unknown>;
  tags: Tags;
  createdAt: Date;
  updatedAt: Date;
}

export interface Service {
  id: string;
  name: string;
  terminatorStrategy: string;
  roleAttributes: string[];
  /** Config ids in the order given. */
  configs: string[];
  encryptionRequired: boolean;
  maxIdleTimeMillis: number;
  tags: Tags;
  createdAt: Date;
  updatedAt: Date;
}

export type RouterKind = 'edge' | 'transit';

/** The pending enrollment of a router, as its owner (pki-enrollment) shows it. */
export interface RouterEnrollment {
  id: string;
  token: string;
  jwt: string;
  createdAt: Date;
  expiresAt: Date;
}

/**
 * Edge and transit routers share one record (and one name index, as in the reference). Its
 * `hostname`, `supportedProtocols` and `versionInfo` are the record's own columns, which
 * `edgeRouter.*` states carry ("" / {} / null): what a connected router announces is its presence
 * (`RouterPresence`), which router reads show.
 */
export interface Router {
  id: string;
  kind: RouterKind;
  name: string;
  cost: number;
  noTraversal: boolean;
  disabled: boolean;
  isVerified: boolean;
  isTunnelerEnabled: boolean;
  fingerprint: string | null;
  certPem: string | null;
  unverifiedFingerprint: string | null;
  unverifiedCertPem: string | null;
  roleAttributes: string[];
  appData: Record<string, unknown>;
  hostname: string;
  supportedProtocols: Record<string, string>;
  versionInfo: Record<string, string> | null;
  tags: Tags;
  createdAt: Date;
  updatedAt: Date;
}

/**
 * What the controller believes of a router's control channel, as the router edge (fabric) reported
 * it (docs/adr/0023): the connection it was last known by, held by one fabric replica under a lease.
 * A router without one never connected.
 */
export interface RouterPresence {
  routerId: string;
  kind: RouterKind;
  connectionId: string;
  /** The fabric replica holding the connection. */
  replicaId: string;
  connectedAt: Date;
  /** Until when it holds without a renewal (the database's clock). */
  leaseUntil: Date;
  isOnline: boolean;
  /** "" while offline. */
  hostname: string;
  /** `{}` while offline. */
  supportedProtocols: Record<string, string>;
  /** The last one the router announced (kept while offline). */
  versionInfo: RouterVersionInfo | null;
  syncStatus: RouterSyncStatus;
  /** When what a reader sees of it last changed. */
  changedAt: Date;
}

/** A presence as the domain writes it (the store adds the router's kind, the lease and `changedAt`). */
export type RouterPresenceRecord = Omit<RouterPresence, 'kind' | 'leaseUntil' | 'changedAt'>;

/** A connection of a router, as a fabric replica holds it. */
export interface RouterConnection {
  routerId: string;
  connectionId: string;
}

export type Precedence = 'default' | 'required' | 'failed';

export interface Terminator {
  id: string;
  serviceId: string;
  routerId: string;
  binding: string;
  address: string;
  instanceId: string;
  instanceSecretHash: string | null;
  cost: number;
  precedence: Precedence;
  hostId: string;
  tags: Tags;
  createdAt: Date;
  updatedAt: Date;
}

/** Peer data a hosting SDK gave at bind: key → base64 bytes. */
export type PeerData = Record<string, string>;

/** A terminator as a dial needs it, with whether its router is online now. */
export interface DialTerminator {
  id: string;
  routerId: string;
  binding: string;
  address: string;
  instanceId: string;
  cost: number;
  precedence: Precedence;
  peerData: PeerData;
  hostId: string;
  routerOnline: boolean;
  createdAt: Date;
}

/** What a dial of a service needs: its facts and every terminator (null: no such service). */
export interface DialTargets {
  service: { id: string; name: string; terminatorStrategy: string; encryptionRequired: boolean } | null;
  terminators: DialTerminator[];
}

export interface IdentityServiceConfig {
  identityId: string;
  serviceId: string;
  configId: string;
  configTypeId: string;
}

export interface NamedRef {
  id: string;
  name: string;
}
