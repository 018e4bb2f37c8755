/** The list shapes are the platform's: every service lists through the same ZitiQL mechanism. */
import type { ListInput, ListPage } from '@ziti/platform/list-page';
export type { ListInput, ListPage };

/** pki-enrollment's entities as the domain sees them (no wire or storage shapes here). */

export type ExternalIdLocation = 'COMMON_NAME' | 'SAN_URI' | 'SAN_EMAIL';
export type ExternalIdMatcher = 'ALL' | 'PREFIX' | 'SUFFIX' | 'SCHEME';
export type ExternalIdParser = 'NONE' | 'SPLIT';

/** How a CA names the external id inside its certificates (ZITI-FACTS §8.3). */
export interface ExternalIdClaim {
  location: ExternalIdLocation;
  matcher: ExternalIdMatcher;
  matcherCriteria: string;
  parser: ExternalIdParser;
  parserCriteria: string;
  index: number;
}

/** A third-party certificate authority. */
export interface Ca {
  id: string;
  name: string;
  /** SHA-1 of the first certificate of `certPem`. */
  fingerprint: string;
  certPem: string;
  isVerified: boolean;
  /** A shortid; a certificate with this CN signed by the CA proves control of its key. */
  verificationToken: string;
  isAutoCaEnrollmentEnabled: boolean;
  isOttCaEnrollmentEnabled: boolean;
  isAuthEnabled: boolean;
  identityRoles: string[];
  identityNameFormat: string;
  externalIdClaim: ExternalIdClaim | null;
  tags: Record<string, unknown>;
  createdAt: Date;
  updatedAt: Date;
}

/** Identity methods plus the router ones, which plug into the same store and dispatch. */
export type EnrollmentMethod = 'ott' | 'ottca' | 'updb' | 'erott' | 'trott';
export const identityEnrollmentMethods = ['ott', 'ottca', 'updb'] as const;

/** An outstanding enrollment: a one-time token, its JWT, and whom it enrolls. */
export interface Enrollment {
  id: string;
  method: EnrollmentMethod;
  /** UUID v4, the JWT's `jti`; a bearer secret until used. */
  token: string;
  jwt: string;
  identityId: string | null;
  edgeRouterId: string | null;
  transitRouterId: string | null;
  caId: string | null;
  username: string | null;
  expiresAt: Date;
  tags: Record<string, unknown>;
  createdAt: Date;
  updatedAt: Date;
}

/** A short-lived client certificate tied to one API session (`/current-api-session/certificates`). */
export interface SessionCertificate {
  id: string;
  apiSessionId: string;
  identityId: string;
  subject: string;
  fingerprint: string;
  certPem: string;
  validFrom: Date;
  validTo: Date;
  tags: Record<string, unknown>;
  createdAt: Date;
  updatedAt: Date;
}

export const DEFAULT_IDENTITY_NAME_FORMAT = '[caName]-[commonName]';
