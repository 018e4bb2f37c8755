/** The list shapes are the platform's: every service lists through the same ZitiQL mechanism. */
import type { ListInput, ListPage, RoleFilter } from '@ziti/platform/list-page';
export type { ListInput, ListPage, RoleFilter };

/** Auth's entities as the domain sees them (no wire or storage shapes here). */
export interface Identity {
  id: string;
  name: string;
  typeId: string;
  isAdmin: boolean;
  isDefaultAdmin: boolean;
  roleAttributes: string[];
  externalId: string | null;
  authPolicyId: string;
  /**
   * Disabled as last recorded: set by a disable, cleared by an enable or, once a timed disable's
   * `disabledUntil` passed, by the sweeper (with an `identity.updated`). Events carry this, so
   * they are a function of stored data; logins and the API use `isDisabled` (the clock).
   */
  disabled: boolean;
  disabledAt: Date | null;
  disabledUntil: Date | null;
  defaultHostingPrecedence: string | null;
  defaultHostingCost: number;
  serviceHostingCosts: Record<string, number>;
  serviceHostingPrecedences: Record<string, string>;
  appData: Record<string, unknown>;
  envInfo: Record<string, unknown>;
  sdkInfo: Record<string, unknown>;
  tags: Record<string, unknown>;
  createdAt: Date;
  updatedAt: Date;
}

export type AuthenticatorMethod = 'updb' | 'cert';

export interface Authenticator {
  id: string;
  identityId: string;
  method: AuthenticatorMethod;
  username: string | null;
  passwordHash: string | null;
  salt: string | null;
  certFingerprint: string | null;
  certPem: string | null;
  tags: Record<string, unknown>;
  createdAt: Date;
  updatedAt: Date;
}

/** What an identity's detail shows of one of its authenticators. */
export type AuthenticatorSummary = Pick<Authenticator, 'id' | 'method' | 'username' | 'certFingerprint'>;

/**
 * An identity with what its detail shows beside it (auth policy name, authenticators, verified MFA,
 * whether the enrollment read model knows an outstanding enrollment of it), read together.
 */
export interface IdentityView {
  identity: Identity;
  /** null when the policy is gone. */
  authPolicyName: string | null;
  authenticators: AuthenticatorSummary[];
  isMfaEnabled: boolean;
  /** The read model of pki-enrollment's outstanding enrollments has one (docs/adr/0012). */
  hasOutstandingEnrollment: boolean;
}

export interface NamedEntity {
  id: string;
  name: string;
  createdAt: Date;
  updatedAt: Date;
}

export interface AuthPolicySummary extends NamedEntity {
  primary: { updb?: { allowed?: boolean }; cert?: { allowed?: boolean }; extJwt?: { allowed?: boolean } };
}

/**
 * A new identity with every field at its default: the one place that knows them, for the API,
 * the default admin, CA auto-enrollment and router identities.
 */
export function newIdentity(
  fields: Pick<Identity, 'id' | 'name' | 'authPolicyId' | 'createdAt'> & Partial<Identity>,
): Identity {
  return {
    typeId: 'Default',
    isAdmin: false,
    isDefaultAdmin: false,
    roleAttributes: [],
    externalId: null,
    disabled: false,
    disabledAt: null,
    disabledUntil: null,
    defaultHostingPrecedence: null,
    defaultHostingCost: 0,
    serviceHostingCosts: {},
    serviceHostingPrecedences: {},
    appData: {},
    envInfo: {},
    sdkInfo: {},
    tags: {},
    updatedAt: fields.createdAt,
    ...fields,
  };
}

/** `disabled` as the reference computes it (ZITI-FACTS §11). */
export function isDisabled(identity: Pick<Identity, 'disabledAt' | 'disabledUntil'>, now = new Date()): boolean {
  return identity.disabledAt !== null && (identity.disabledUntil === null || identity.disabledUntil > now);
}

/** The recorded `disabled` of a change made at `now`: a timed disable that passed ends with it. */
export function recordedDisabled(
  identity: Pick<Identity, 'disabled' | 'disabledAt' | 'disabledUntil'>,
  now: Date,
): boolean {
  return identity.disabled && isDisabled(identity, now);
}
