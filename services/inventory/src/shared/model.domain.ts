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

/** Edge and transit routers share one record (and one name index, as in the reference). */
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
