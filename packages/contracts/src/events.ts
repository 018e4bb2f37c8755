import { z } from 'zod';
import { auditEventTypes, authenticationEventTypes } from './audit.ts';
import { routerPresenceEventTypes, terminatorPrecedenceSchema } from './fabric.ts';

/**
 * Versioned event definitions (DESIGN §3). An event carries the entity's full new state so a
 * consumer never has to call back. Bump `version` and keep the old schema when a shape changes
 * incompatibly; consumers accept every version they know.
 */
export const identityState = z.object({
  id: z.string(),
  name: z.string(),
  typeId: z.string(),
  isAdmin: z.boolean(),
  isDefaultAdmin: z.boolean(),
  roleAttributes: z.array(z.string()),
  externalId: z.string().nullable(),
  authPolicyId: z.string(),
  /**
   * As last recorded, not computed from the clock: true from a disable until the identity is
   * enabled or, for a timed disable, until auth records that `disabledUntil` passed (it then
   * publishes `identity.updated` with false).
   */
  disabled: z.boolean(),
  /** ISO times of the (last) disable; absent from events written before they were added. */
  disabledAt: z.string().nullable().default(null),
  disabledUntil: z.string().nullable().default(null),
  tags: z.record(z.string(), z.unknown()),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type IdentityState = z.infer<typeof identityState>;

/** An API session as auth publishes it (never its token). */
export const apiSessionState = z.object({
  id: z.string(),
  identityId: z.string(),
  /** Empty when the session was opened without one (a third-party CA's certificate, an external JWT). */
  authenticatorId: z.string(),
  /** `password` | `cert` | `ext-jwt`. */
  authMethod: z.string(),
  ipAddress: z.string(),
  isMfaRequired: z.boolean(),
  isMfaComplete: z.boolean(),
  configTypes: z.array(z.string()),
  createdAt: z.string(),
});
export type ApiSessionState = z.infer<typeof apiSessionState>;

/** Why auth deleted an API session (`apiSession.deleted`'s `reason`); consumers must accept others. */
export const apiSessionDeleteReasons = [
  /** `DELETE /current-api-session`. */
  'logout',
  /** `DELETE /api-sessions/{id}`. */
  'admin',
  'identityDeleted',
  /** An administrator's disable, or a password lockout. */
  'identityDisabled',
  /** The Router identity left with its edge router (or the router's tunneling). */
  'routerRemoved',
  /** The authenticator the session was made with was deleted (directly, or with the CA that vouched for it). */
  'authenticatorDeleted',
  /** The authenticator the session was made with was turned back into an enrollment (`re-enroll`). */
  'authenticatorReEnrolled',
] as const;
export type ApiSessionDeleteReason = (typeof apiSessionDeleteReasons)[number];

/** `apiSession.deleted` v2: the session's last state, why and when it ended. */
export const apiSessionDeletedState = apiSessionState.extend({
  reason: z.string(),
  endedAt: z.string(),
});
export type ApiSessionDeletedState = z.infer<typeof apiSessionDeletedState>;

/** `apiSession.deleted` v1 (`{id, identityId}`), still in streams written before v2. */
export const apiSessionDeletedV1State = z.object({ id: z.string(), identityId: z.string() });

/** `apiSession.expired`: the session's last state and when its sliding expiry passed. */
export const apiSessionExpiredState = apiSessionState.extend({ endedAt: z.string() });
export type ApiSessionExpiredState = z.infer<typeof apiSessionExpiredState>;

/**
 * An API session passed MFA (a TOTP or recovery code at `/authenticate/mfa`, or verifying an MFA
 * enrollment in that session): what MFA posture checks measure their timeout from.
 */
export const apiSessionMfaPassedState = z.object({ id: z.string(), identityId: z.string(), passedAt: z.string() });
export type ApiSessionMfaPassedState = z.infer<typeof apiSessionMfaPassedState>;

/** An identity's MFA (TOTP) as auth publishes it: created unverified, then verified, then deleted. */
export const mfaState = z.object({
  id: z.string(),
  identityId: z.string(),
  isVerified: z.boolean(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type MfaState = z.infer<typeof mfaState>;

/**
 * An authenticator as auth publishes it: which identity it belongs to and what an identity's detail
 * shows of it (the updb username, the cert fingerprint). Never a password hash, salt or certificate.
 */
export const authenticatorState = z.object({
  id: z.string(),
  identityId: z.string(),
  /** `updb` | `cert`. */
  method: z.string(),
  username: z.string().nullable(),
  certFingerprint: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type AuthenticatorState = z.infer<typeof authenticatorState>;

/** An auth policy as auth publishes it (ZITI-FACTS §11): its full state, which holds no secret. */
export const authPolicyState = z.object({
  id: z.string(),
  name: z.string(),
  isSystem: z.boolean(),
  primary: z.record(z.string(), z.unknown()),
  secondary: z.record(z.string(), z.unknown()),
  tags: z.record(z.string(), z.unknown()),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type AuthPolicyState = z.infer<typeof authPolicyState>;

export const eventTypes = {
  identityCreated: { type: 'identity.created', version: 1, schema: identityState },
  identityUpdated: { type: 'identity.updated', version: 1, schema: identityState },
  identityDeleted: { type: 'identity.deleted', version: 1, schema: identityState },
  apiSessionCreated: { type: 'apiSession.created', version: 1, schema: apiSessionState },
  /** v2 carries the full state (v1 was `{id, identityId}`: `apiSessionDeletedV1State`, still a subset). */
  apiSessionDeleted: { type: 'apiSession.deleted', version: 2, schema: apiSessionDeletedState },
  apiSessionExpired: { type: 'apiSession.expired', version: 1, schema: apiSessionExpiredState },
  apiSessionMfaPassed: { type: 'apiSession.mfaPassed', version: 1, schema: apiSessionMfaPassedState },
  mfaCreated: { type: 'mfa.created', version: 1, schema: mfaState },
  mfaVerified: { type: 'mfa.verified', version: 1, schema: mfaState },
  mfaDeleted: { type: 'mfa.deleted', version: 1, schema: mfaState },
  authenticatorCreated: { type: 'authenticator.created', version: 1, schema: authenticatorState },
  authenticatorUpdated: { type: 'authenticator.updated', version: 1, schema: authenticatorState },
  authenticatorDeleted: { type: 'authenticator.deleted', version: 1, schema: authenticatorState },
  authPolicyCreated: { type: 'authPolicy.created', version: 1, schema: authPolicyState },
  authPolicyUpdated: { type: 'authPolicy.updated', version: 1, schema: authPolicyState },
  authPolicyDeleted: { type: 'authPolicy.deleted', version: 1, schema: authPolicyState },
} as const;

/** inventory's services (DESIGN §2), as policy's read model keeps them. */
export const serviceState = z.object({
  id: z.string(),
  name: z.string(),
  terminatorStrategy: z.string(),
  roleAttributes: z.array(z.string()),
  /** Config ids, in the order the administrator gave them. */
  configs: z.array(z.string()),
  encryptionRequired: z.boolean(),
  maxIdleTimeMillis: z.number(),
  tags: z.record(z.string(), z.unknown()),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type ServiceState = z.infer<typeof serviceState>;

/** inventory's edge routers: what policy (read model, system policies) and auth (router identity) need. */
export const edgeRouterState = z.object({
  id: z.string(),
  name: z.string(),
  roleAttributes: z.array(z.string()),
  isTunnelerEnabled: z.boolean(),
  isVerified: z.boolean(),
  disabled: z.boolean(),
  noTraversal: z.boolean(),
  cost: z.number(),
  /** Lower-case hex SHA-1 of the enrolled client certificate; null until enrolled. */
  fingerprint: z.string().nullable(),
  /** The host name the router announces ("" until it has connected), as in an edge session's `edgeRouters`. */
  hostname: z.string().default(''),
  /** Protocol → listener address the router announces (`{"tls": "tls://host:3022"}`; `{}` until it has connected). */
  supportedProtocols: z.record(z.string(), z.string()).default({}),
  appData: z.record(z.string(), z.unknown()),
  tags: z.record(z.string(), z.unknown()),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type EdgeRouterState = z.infer<typeof edgeRouterState>;

/** inventory's configs: data of a config type, as sessions and service lists resolve them. */
export const configState = z.object({
  id: z.string(),
  name: z.string(),
  configTypeId: z.string(),
  data: z.record(z.string(), z.unknown()),
  tags: z.record(z.string(), z.unknown()),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type ConfigState = z.infer<typeof configState>;

/** inventory's config types (a config's `config` key in service lists is its type's name). */
export const configTypeState = z.object({
  id: z.string(),
  name: z.string(),
  schema: z.record(z.string(), z.unknown()),
  tags: z.record(z.string(), z.unknown()),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type ConfigTypeState = z.infer<typeof configTypeState>;

/**
 * Every service config override of one identity (`/identities/{id}/service-configs`), one state per
 * identity (`id` = `identityId`), sorted by service id then config id (bytewise). An identity whose
 * overrides are all gone (removed, the identity or the service deleted) has `serviceConfigs: []`.
 */
export const identityServiceConfigsState = z.object({
  id: z.string(),
  identityId: z.string(),
  serviceConfigs: z.array(z.object({ serviceId: z.string(), configId: z.string() })),
});
export type IdentityServiceConfigsState = z.infer<typeof identityServiceConfigsState>;

/**
 * inventory's terminators (where a service is hosted), as every change of one announces it: made
 * through the management API or by a router for a hosting SDK (`fabric.createTerminator`). Never the
 * instance secret (only its hash is kept) nor the peer data (dial targets carry it).
 */
export const terminatorState = z.object({
  id: z.string(),
  serviceId: z.string(),
  routerId: z.string(),
  binding: z.string(),
  address: z.string(),
  /** The hosting SDK's instance id (`identity` on the wire), "" if none. */
  instanceId: z.string(),
  cost: z.number().int(),
  precedence: terminatorPrecedenceSchema,
  /** The identity hosting it ("" for one made through the management API). */
  hostId: z.string(),
  tags: z.record(z.string(), z.unknown()),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type TerminatorState = z.infer<typeof terminatorState>;

export const inventoryEventTypes = {
  serviceCreated: { type: 'service.created', version: 1, schema: serviceState },
  serviceUpdated: { type: 'service.updated', version: 1, schema: serviceState },
  serviceDeleted: { type: 'service.deleted', version: 1, schema: serviceState },
  edgeRouterCreated: { type: 'edgeRouter.created', version: 1, schema: edgeRouterState },
  edgeRouterUpdated: { type: 'edgeRouter.updated', version: 1, schema: edgeRouterState },
  edgeRouterDeleted: { type: 'edgeRouter.deleted', version: 1, schema: edgeRouterState },
  configCreated: { type: 'config.created', version: 1, schema: configState },
  configUpdated: { type: 'config.updated', version: 1, schema: configState },
  configDeleted: { type: 'config.deleted', version: 1, schema: configState },
  configTypeCreated: { type: 'configType.created', version: 1, schema: configTypeState },
  configTypeUpdated: { type: 'configType.updated', version: 1, schema: configTypeState },
  configTypeDeleted: { type: 'configType.deleted', version: 1, schema: configTypeState },
  identityServiceConfigsUpdated: {
    type: 'identityServiceConfigs.updated',
    version: 1,
    schema: identityServiceConfigsState,
  },
  terminatorCreated: { type: 'terminator.created', version: 1, schema: terminatorState },
  terminatorUpdated: { type: 'terminator.updated', version: 1, schema: terminatorState },
  terminatorDeleted: { type: 'terminator.deleted', version: 1, schema: terminatorState },
} as const;

/** A third-party CA as pki-enrollment publishes it (`ca.created|updated|deleted`). */
export const caState = z.object({
  id: z.string(),
  name: z.string(),
  fingerprint: z.string(),
  certPem: z.string(),
  isVerified: z.boolean(),
  isAuthEnabled: z.boolean(),
  isAutoCaEnrollmentEnabled: z.boolean(),
  isOttCaEnrollmentEnabled: z.boolean(),
  identityRoles: z.array(z.string()),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type CaState = z.infer<typeof caState>;

/** Events of pki-enrollment. Deleting a CA deletes the certificate authenticators it vouched for (auth). */
export const caEventTypes = {
  caCreated: { type: 'ca.created', version: 1, schema: caState },
  caUpdated: { type: 'ca.updated', version: 1, schema: caState },
  caDeleted: { type: 'ca.deleted', version: 1, schema: caState },
} as const;

/**
 * An enrollment as pki-enrollment publishes it (`enrollment.created|updated|deleted`): its
 * non-secret state only. The token and the JWT are credentials (stored encrypted, docs/adr/0007)
 * and never leave pki-enrollment on the stream or into another store (docs/adr/0012).
 */
export const enrollmentState = z.object({
  id: z.string(),
  /** `ott` | `ottca` | `updb` | `erott` | `trott`. */
  method: z.string(),
  identityId: z.string().nullable(),
  edgeRouterId: z.string().nullable(),
  transitRouterId: z.string().nullable(),
  caId: z.string().nullable(),
  expiresAt: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type EnrollmentState = z.infer<typeof enrollmentState>;

/** Events of pki-enrollment's enrollments: every write of one, in the transaction that writes it. */
export const enrollmentEventTypes = {
  enrollmentCreated: { type: 'enrollment.created', version: 1, schema: enrollmentState },
  enrollmentUpdated: { type: 'enrollment.updated', version: 1, schema: enrollmentState },
  enrollmentDeleted: { type: 'enrollment.deleted', version: 1, schema: enrollmentState },
} as const;

/** policy's service policies (ZITI-FACTS §12.6): the full state after each change. Roles are sorted. */
export const servicePolicyState = z.object({
  id: z.string(),
  name: z.string(),
  type: z.enum(['Dial', 'Bind']),
  semantic: z.enum(['AllOf', 'AnyOf']),
  identityRoles: z.array(z.string()),
  serviceRoles: z.array(z.string()),
  postureCheckRoles: z.array(z.string()),
  tags: z.record(z.string(), z.unknown()),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type ServicePolicyState = z.infer<typeof servicePolicyState>;

export const edgeRouterPolicyState = z.object({
  id: z.string(),
  name: z.string(),
  semantic: z.enum(['AllOf', 'AnyOf']),
  identityRoles: z.array(z.string()),
  edgeRouterRoles: z.array(z.string()),
  isSystem: z.boolean(),
  tags: z.record(z.string(), z.unknown()),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type EdgeRouterPolicyState = z.infer<typeof edgeRouterPolicyState>;

export const serviceEdgeRouterPolicyState = z.object({
  id: z.string(),
  name: z.string(),
  semantic: z.enum(['AllOf', 'AnyOf']),
  serviceRoles: z.array(z.string()),
  edgeRouterRoles: z.array(z.string()),
  tags: z.record(z.string(), z.unknown()),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type ServiceEdgeRouterPolicyState = z.infer<typeof serviceEdgeRouterPolicyState>;

const postureOperatingSystem = z.object({ type: z.string(), versions: z.array(z.string()) });
const postureProcess = z.object({
  osType: z.string(),
  path: z.string(),
  hashes: z.array(z.string()),
  signerFingerprint: z.string().optional(),
  signerFingerprints: z.array(z.string()).optional(),
});

/**
 * policy's posture checks (ZITI-FACTS §7.3): the full state after each change. Only the fields of
 * the check's `typeId` are present (OS: operatingSystems; MAC: macAddresses; DOMAIN: domains;
 * PROCESS: process; PROCESS_MULTI: processes and semantic; MFA: the four MFA properties).
 */
export const postureCheckState = z.object({
  id: z.string(),
  name: z.string(),
  typeId: z.enum(['OS', 'PROCESS', 'DOMAIN', 'MAC', 'MFA', 'PROCESS_MULTI']),
  version: z.number().int(),
  roleAttributes: z.array(z.string()),
  operatingSystems: z.array(postureOperatingSystem).optional(),
  macAddresses: z.array(z.string()).optional(),
  domains: z.array(z.string()).optional(),
  process: postureProcess.optional(),
  processes: z.array(postureProcess).optional(),
  semantic: z.enum(['AllOf', 'AnyOf']).optional(),
  timeoutSeconds: z.number().int().optional(),
  promptOnWake: z.boolean().optional(),
  promptOnUnlock: z.boolean().optional(),
  ignoreLegacyEndpoints: z.boolean().optional(),
  tags: z.record(z.string(), z.unknown()),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type PostureCheckState = z.infer<typeof postureCheckState>;

/**
 * What an identity may now do with the services whose access changed in one commit (derived from
 * policies and role attributes): `dial`/`bind` as they are now; both false means access was lost.
 * `id` = `identityId`. Sorted by service id.
 */
export const identityAccessChangedState = z.object({
  id: z.string(),
  identityId: z.string(),
  services: z.array(z.object({ serviceId: z.string(), dial: z.boolean(), bind: z.boolean() })),
});
export type IdentityAccessChangedState = z.infer<typeof identityAccessChangedState>;

/**
 * One commit changed more identity × service pairs than are announced one by one (an `#all` policy
 * over a large network): identities whose access may have changed, to be read again
 * (`/identities/{id}/services`), and the policy that caused it when one did. `pairs` counts the
 * changed pairs, or bounds them when they were not compared. A commit with many identities
 * announces them in several of these events (at most 5,000 identities each).
 */
export const identityAccessBulkChangedState = z.object({
  identityIds: z.array(z.string()),
  pairs: z.number().int(),
  policyId: z.string().nullable(),
});
export type IdentityAccessBulkChangedState = z.infer<typeof identityAccessBulkChangedState>;

/** Events of policy: every create, update and delete of the three policy kinds and of posture checks, and access changes. */
export const policyEventTypes = {
  identityAccessChanged: { type: 'identityAccess.changed', version: 1, schema: identityAccessChangedState },
  identityAccessBulkChanged: {
    type: 'identityAccess.bulkChanged',
    version: 1,
    schema: identityAccessBulkChangedState,
  },
  servicePolicyCreated: { type: 'servicePolicy.created', version: 1, schema: servicePolicyState },
  servicePolicyUpdated: { type: 'servicePolicy.updated', version: 1, schema: servicePolicyState },
  servicePolicyDeleted: { type: 'servicePolicy.deleted', version: 1, schema: servicePolicyState },
  edgeRouterPolicyCreated: { type: 'edgeRouterPolicy.created', version: 1, schema: edgeRouterPolicyState },
  edgeRouterPolicyUpdated: { type: 'edgeRouterPolicy.updated', version: 1, schema: edgeRouterPolicyState },
  edgeRouterPolicyDeleted: { type: 'edgeRouterPolicy.deleted', version: 1, schema: edgeRouterPolicyState },
  serviceEdgeRouterPolicyCreated: {
    type: 'serviceEdgeRouterPolicy.created',
    version: 1,
    schema: serviceEdgeRouterPolicyState,
  },
  serviceEdgeRouterPolicyUpdated: {
    type: 'serviceEdgeRouterPolicy.updated',
    version: 1,
    schema: serviceEdgeRouterPolicyState,
  },
  serviceEdgeRouterPolicyDeleted: {
    type: 'serviceEdgeRouterPolicy.deleted',
    version: 1,
    schema: serviceEdgeRouterPolicyState,
  },
  postureCheckCreated: { type: 'postureCheck.created', version: 1, schema: postureCheckState },
  postureCheckUpdated: { type: 'postureCheck.updated', version: 1, schema: postureCheckState },
  postureCheckDeleted: { type: 'postureCheck.deleted', version: 1, schema: postureCheckState },
} as const;

/** One published event type: its name, current schema version and the schema of `data`. */
export interface EventDefinition<S extends z.ZodType = z.ZodType> {
  type: string;
  version: number;
  schema: S;
}

/** The state an event of `D` carries as its emitter builds it (defaults may be left out). */
export type EventState<D extends EventDefinition> = z.input<D['schema']>;

/** The state an event of `D` carries as its consumer reads it, once decoded by its schema. */
export type EventData<D extends EventDefinition> = z.output<D['schema']>;

/**
 * Every event type each owner publishes, with its current version. A consumer parks an event whose
 * type its owner is not known to publish, or whose version is newer than the consumer knows, instead
 * of dropping it (docs/adr/0008). New event types are added to their owner's table above.
 */
export const publishedEvents: Record<
  'auth' | 'inventory' | 'pki-enrollment' | 'policy' | 'audit',
  Record<string, EventDefinition>
> = {
  auth: { ...eventTypes, ...authenticationEventTypes },
  audit: auditEventTypes,
  inventory: { ...inventoryEventTypes, ...routerPresenceEventTypes },
  'pki-enrollment': { ...caEventTypes, ...enrollmentEventTypes },
  policy: policyEventTypes,
};

/** The definition of `type` as `source` publishes it, if this build knows it. */
export function publishedEvent(source: string, type: string): EventDefinition | undefined {
  const table = (publishedEvents as Record<string, Record<string, EventDefinition>>)[source];
  return table ? Object.values(table).find((d) => d.type === type) : undefined;
}
