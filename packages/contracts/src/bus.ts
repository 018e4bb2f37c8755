import { z } from 'zod';
import type { SerializedApiError } from './errors.ts';
import type { ApiName, Owner } from './operation.ts';

/**
 * Bus subjects. The gateway sends every operation to its owner on
 * `ziti.rpc.<owner>.op.<api>.<operationId>`; a service subscribes to `ziti.rpc.<owner>.op.>` with
 * a queue group and dispatches by operation, so an operation it does not implement yet answers
 * NOT_IMPLEMENTED while a service that is down shows as "no responders".
 * Service-to-service calls use `ziti.rpc.<owner>.call.<action>`.
 */
export const subjects = {
  operation: (owner: Owner, api: ApiName, operationId: string) => `ziti.rpc.${owner}.op.${api}.${operationId}`,
  operations: (owner: Owner) => `ziti.rpc.${owner}.op.>`,
  call: (owner: Owner | 'fabric', action: string) => `ziti.rpc.${owner}.call.${action}`,
  calls: (owner: Owner | 'fabric') => `ziti.rpc.${owner}.call.>`,
  /** Events: `ziti.evt.<owner>.<type>`, e.g. `ziti.evt.auth.identity.created`. */
  event: (owner: Owner, type: string) => `ziti.evt.${owner}.${type}`,
  events: 'ziti.evt.>',
} as const;

/** The JetStream stream that carries every event: the product's change feed. */
export const eventStream = { name: 'ZITI_EVENTS', subjects: ['ziti.evt.>'] } as const;

/** Queue group shared by the replicas of one service. */
export const queueGroup = (owner: Owner | 'fabric') => `ziti-${owner}`;

export const authQuerySchema = z.object({
  typeId: z.string(),
  provider: z.string(),
  httpMethod: z.string().optional(),
  httpUrl: z.string().optional(),
  format: z.string().optional(),
  minLength: z.number().optional(),
  maxLength: z.number().optional(),
  id: z.string().optional(),
});
export type AuthQuery = z.infer<typeof authQuerySchema>;

/** Who is calling, as the gateway established it from the API session. */
export const callerSchema = z.object({
  identityId: z.string(),
  apiSessionId: z.string(),
  token: z.string(),
  isAdmin: z.boolean(),
  /** Pending secondary factors; non-empty means partially authenticated. */
  authQueries: z.array(authQuerySchema),
  /**
   * The config types the API session asked for at login (ZITI-FACTS §3.4), which the client API's
   * service reads apply when a request names none. They travel with the caller because a login
   * announces nothing (docs/adr/0017); absent from a gateway older than that.
   */
  configTypes: z.array(z.string()).optional(),
});
export type Caller = z.infer<typeof callerSchema>;

/**
 * Who made a change and how (issue 24): the request an event was written on behalf of. It travels
 * with every bus request made while serving an operation (a header), and is stored with each
 * event the request's writes emit (`EventEnvelope.meta`), so the audit trail and the event stream
 * name the actor, the API session, the source address, the request id and the operation. It never
 * holds a secret: the caller's token stays out of it.
 */
export const requestMetaSchema = z.object({
  requestId: z.string().max(200),
  /** `<api>.<operationId>`, e.g. `management.createIdentity`. */
  operation: z.string().max(200),
  remoteAddress: z.string().max(200).optional(),
  /** The identity the API session belongs to; absent before authentication (a login, an enrollment). */
  identityId: z.string().max(200).optional(),
  apiSessionId: z.string().max(200).optional(),
});
export type RequestMeta = z.infer<typeof requestMetaSchema>;

/** One HTTP operation as it travels from the gateway to its owner. */
export const operationRequestSchema = z.object({
  requestId: z.string(),
  api: z.enum(['client', 'management']),
  operationId: z.string(),
  params: z.record(z.string(), z.string()),
  /** Query parameters as validated (and coerced) by the gateway against the operation's schema. */
  query: z.record(z.string(), z.unknown()),
  /** The parsed JSON body (validated by the gateway against the contract), if any. */
  body: z.unknown().optional(),
  /** A non-JSON body (PEM, CSR, text) as base64, with its content type. */
  rawBody: z.string().optional(),
  contentType: z.string().optional(),
  accept: z.string().optional(),
  /** The few request headers operations read (`authorization`, `mfa-validation-code`, `session-token`). */
  headers: z.record(z.string(), z.string()),
  caller: callerSchema.optional(),
  /**
   * The event positions of the caller's own earlier writes (source → position), which the owner
   * applies before answering (read-your-writes, docs/adr/0008). Set by the gateway from the API session.
   */
  after: z.record(z.string(), z.number().int().nonnegative()).optional(),
  /** The TLS client certificate chain, leaf first, PEM. */
  clientCertChain: z.array(z.string()).optional(),
  remoteAddress: z.string(),
  /**
   * The caller's `Idempotency-Key` of a write (an authenticated caller's, checked by the gateway):
   * the owner answers a repeat from the first outcome (platform db/idempotency.ts).
   */
  idempotencyKey: z.string().min(1).max(255).optional(),
});
export type OperationRequest = z.infer<typeof operationRequestSchema>;

/** The owner's answer: a status with a JSON or binary body, or an API error with its code. */
export type OperationReply =
  | {
      status: number;
      body?: unknown;
      /** A binary or text body as base64 (PNG, PKCS#7, PEM, JWT) with its content type. */
      rawBody?: string;
      contentType?: string;
      headers?: Record<string, string>;
      /**
       * The owners' event positions this answer reflects (source → position, read before the
       * state): set on session-scoped answers a gateway may keep until an event changes them
       * (docs/adr/0015). Absent: never kept.
       */
      reflects?: Record<string, number>;
    }
  | { error: SerializedApiError; headers?: Record<string, string> };

export function isErrorReply(reply: OperationReply): reply is { error: SerializedApiError } {
  return 'error' in reply;
}

/**
 * `ziti.rpc.pki-enrollment.call.serverIdentity`: the edge API's TLS identity, shared by every
 * gateway replica because enrollment JWTs are signed with its key and verified by clients against
 * the certificate the listener presents (ZITI-FACTS §8.1).
 */
export const serverIdentitySchema = z.object({
  /** Leaf + intermediates. */
  certChainPem: z.string(),
  keyPem: z.string(),
  /** The controller CA bundle (root + intermediate) clients are told to trust. */
  caBundlePem: z.string(),
});
export type ServerIdentity = z.infer<typeof serverIdentitySchema>;

export const calls = {
  serverIdentity: 'serverIdentity',
} as const;

// ---------------------------------------------------------------------------------------------
// pki-enrollment ⇄ auth: credentials obtained by enrollment, identities created with enrollments.

/** Calls pki-enrollment serves on `ziti.rpc.pki-enrollment.call.<action>`. */
export const pkiCallNames = {
  /** Whom a TLS client certificate chain belongs to: the controller PKI or a verified third-party CA. */
  verifyClientCertificate: 'verifyClientCertificate',
  /** The enrollments still outstanding for identities (the identity detail's `enrollment`). */
  pendingEnrollments: 'pendingEnrollments',
  /** Creates the enrollments an identity is created with (identity create with `enrollment`). */
  createIdentityEnrollments: 'createIdentityEnrollments',
  /** Removes enrollments (compensation when the identity could not be committed). */
  deleteIdentityEnrollments: 'deleteIdentityEnrollments',
} as const;

export const verifyClientCertificateRequestSchema = z.object({
  /** The chain the client presented on TLS, leaf first, PEM. */
  chainPem: z.array(z.string()).min(1).max(10),
  /**
   * `login` (the default): a `method=cert` login, which a verified CA vouches for only with
   * `isAuthEnabled`. `authenticator`: a certificate an administrator registers for an identity
   * (`POST /authenticators`), which must chain to the controller PKI or to any verified CA, as the
   * reference checks it (at the certificate's own notBefore, whatever its key usage).
   */
  purpose: z.enum(['login', 'authenticator']).optional(),
});
export type VerifyClientCertificateRequest = z.infer<typeof verifyClientCertificateRequestSchema>;

export const verifyClientCertificateResultSchema = z.object({
  /** The chain verifies to the controller PKI or to a verified CA with `isAuthEnabled`. */
  trusted: z.boolean(),
  /** Who vouches for it when trusted: the controller's own PKI or a third-party CA. */
  issuer: z.enum(['controller', 'ca']).optional(),
  caId: z.string().optional(),
  isAuthEnabled: z.boolean().optional(),
  /** From the CA's `externalIdClaim`; null when the CA has none or it does not resolve. */
  externalId: z.string().nullable().optional(),
  /** Lower-case hex SHA-1 of the leaf DER. */
  fingerprint: z.string(),
  /** The chain only verifies at a time inside the leaf's validity, not now (the auth policy decides). */
  expired: z.boolean().optional(),
});
export type VerifyClientCertificateResult = z.infer<typeof verifyClientCertificateResultSchema>;

export const identityEnrollmentMethodSchema = z.enum(['ott', 'ottca', 'updb']);

export const createIdentityEnrollmentsRequestSchema = z.object({
  identityId: z.string().min(1),
  enrollments: z
    .array(
      z.object({
        method: identityEnrollmentMethodSchema,
        caId: z.string().optional(),
        username: z.string().optional(),
      }),
    )
    .max(3),
});
export type CreateIdentityEnrollmentsRequest = z.infer<typeof createIdentityEnrollmentsRequestSchema>;
export const createIdentityEnrollmentsResultSchema = z.object({ ids: z.array(z.string()) });

export const deleteIdentityEnrollmentsRequestSchema = z.object({
  identityId: z.string().min(1),
  /** Only these enrollments; all of the identity's when omitted. */
  ids: z.array(z.string()).optional(),
});

export const pendingEnrollmentsRequestSchema = z.object({ identityIds: z.array(z.string()).max(1000) });
export const pendingEnrollmentSchema = z.object({
  id: z.string(),
  method: z.string(),
  token: z.string(),
  jwt: z.string(),
  expiresAt: z.string(),
  caId: z.string().nullable(),
  caName: z.string().nullable(),
});
export type PendingEnrollment = z.infer<typeof pendingEnrollmentSchema>;
export const pendingEnrollmentsResultSchema = z.object({
  /** identity id → its enrollments (identities without any are absent). */
  enrollments: z.record(z.string(), z.array(pendingEnrollmentSchema)),
});
export type PendingEnrollmentsResult = z.infer<typeof pendingEnrollmentsResultSchema>;

/** Calls auth serves on `ziti.rpc.auth.call.<action>` for pki-enrollment. */
export const authCallNames = {
  createAuthenticator: 'createAuthenticator',
  getAuthenticator: 'getAuthenticator',
  /** Certificate extension: keeps the new certificate beside the current one until it is verified. */
  stageCertificate: 'stageCertificate',
  /** Extension verified: the staged certificate replaces the current one. */
  replaceCertificate: 'replaceCertificate',
  deleteAuthenticator: 'deleteAuthenticator',
  getIdentities: 'getIdentities',
  /** CA auto-enrollment: an identity with its certificate authenticator (or external id). */
  createIdentity: 'createIdentity',
  /** policy's association lists (`/services/{id}/identities`, …): identities as `GET /identities/{id}` shows them. */
  identityDetails: 'identityDetails',
  /** policy's posture data: the ids of an identity's live API sessions (nothing else of them). */
  apiSessionIdsOf: 'apiSessionIdsOf',
} as const;

export const credentialAuthenticatorSchema = z.object({
  id: z.string(),
  identityId: z.string(),
  method: z.enum(['updb', 'cert']),
  username: z.string().nullable(),
  certFingerprint: z.string().nullable(),
  certPem: z.string().nullable(),
  unverifiedCertPem: z.string().nullable(),
  unverifiedCertFingerprint: z.string().nullable(),
  /** The third-party CA the certificate was enrolled through (ottca, CA auto-enrollment). */
  caId: z.string().nullable(),
});
export type CredentialAuthenticator = z.infer<typeof credentialAuthenticatorSchema>;

export const createAuthenticatorRequestSchema = z.object({
  identityId: z.string().min(1),
  method: z.enum(['updb', 'cert']),
  certPem: z.string().optional(),
  caId: z.string().optional(),
  username: z.string().optional(),
  password: z.string().optional(),
});
export type CreateAuthenticatorRequest = z.infer<typeof createAuthenticatorRequestSchema>;

export const authenticatorIdRequestSchema = z.object({ id: z.string().min(1) });

export const stageCertificateRequestSchema = z.object({
  authenticatorId: z.string().min(1),
  identityId: z.string().min(1),
  certPem: z.string().min(1),
});
export const replaceCertificateRequestSchema = z.object({
  authenticatorId: z.string().min(1),
  identityId: z.string().min(1),
  /** Fingerprint of the certificate the client confirms it received; must be the staged one. */
  fingerprint: z.string().min(1),
});

export const getIdentitiesRequestSchema = z.object({ ids: z.array(z.string()).max(1000) });
export const identitySummarySchema = z.object({ id: z.string(), name: z.string(), authPolicyId: z.string() });
export type IdentitySummary = z.infer<typeof identitySummarySchema>;
export const getIdentitiesResultSchema = z.object({ identities: z.array(identitySummarySchema) });

export const createIdentityRequestSchema = z.object({
  /** Chosen by the caller so `[identityId]` can appear in the name. */
  id: z.string().min(1),
  /** The wanted name; on a collision a 6-digit counter is appended (ZITI-FACTS §8.2). */
  name: z.string().min(1),
  roleAttributes: z.array(z.string()),
  /** Set instead of a certificate authenticator when the CA's externalIdClaim resolves. */
  externalId: z.string().optional(),
  certPem: z.string().optional(),
  caId: z.string().optional(),
});
export type CreateIdentityRequest = z.infer<typeof createIdentityRequestSchema>;
export const createIdentityResultSchema = z.object({ id: z.string(), name: z.string() });

/**
 * `identityDetails` (auth), `edgeRouterDetails` (inventory): the management details of entities by
 * id, for the association lists policy answers from its read models (which hold only the entities'
 * published state). At most 1000 at a time (a list page is at most 500).
 */
export const entityDetailsRequestSchema = z.object({ ids: z.array(z.string()).max(1000) });
export const apiSessionIdsOfRequestSchema = z.object({ identityId: z.string().min(1).max(256) });
export const apiSessionIdsOfReplySchema = z.object({ ids: z.array(z.string()) });
/**
 * One entity's management detail exactly as its owner answers `GET /<entities>/{id}`: the wire
 * shape, kept whole (every field passes through unchanged; the gateway's responses are checked
 * against the spec), with the id the caller matches it by.
 */
export const entityDetailSchema = z.looseObject({ id: z.string() });
export type EntityDetail = z.infer<typeof entityDetailSchema>;
/** The details of those of the ids the owner knows, in the order asked; an unknown id is left out. */
export const entityDetailsReplySchema = z.object({ details: z.array(entityDetailSchema) });

// ---------------------------------------------------------------------------------------------
// policy → inventory: what a client may see of a service's terminators.

/** Calls inventory serves on `ziti.rpc.inventory.call.<action>` for policy. */
export const inventoryCallNames = {
  /**
   * `GET /edge/client/v1/services/{id}/terminators` after policy found the service visible to the
   * caller: the service's terminators as the client API shows them (the list envelope).
   */
  clientServiceTerminators: 'clientServiceTerminators',
  /** policy's association lists (`/identities/{id}/edge-routers`, …): edge routers as `GET /edge-routers/{id}` shows them. */
  edgeRouterDetails: 'edgeRouterDetails',
  /** auth, before it keeps an identity's hosting costs and precedences: which of these services exist. */
  existingServices: 'existingServices',
  /** auth, when a login asks for config types: the ids its API session keeps. */
  configTypeIds: 'configTypeIds',
} as const;

export const existingServicesRequestSchema = z.object({ ids: z.array(z.string()).max(1000) });
/** The ids asked about that name a service, in the order asked. */
export const existingServicesReplySchema = z.object({ ids: z.array(z.string()) });

/** The config types a login sends (`configTypes`: ids, names, or `all`). */
export const configTypeIdsRequestSchema = z.object({ values: z.array(z.string()).max(1000) });
/**
 * What an API session keeps of them (the reference's MapConfigTypeNamesToIds): `["all"]` when any
 * value is `all`; otherwise each value that is a config type's id, or the id of the type it names,
 * once each, in the order sent; a value that is neither is left out.
 */
export const configTypeIdsReplySchema = z.object({ ids: z.array(z.string()) });

export const clientServiceTerminatorsRequestSchema = z.object({
  serviceId: z.string(),
  /** The list parameters as the gateway validated them (`filter`, `limit`, `offset`, `sort`). */
  list: z.object({
    filter: z.string().optional(),
    limit: z.string().optional(),
    offset: z.string().optional(),
    sort: z.string().optional(),
  }),
});
export type ClientServiceTerminatorsRequest = z.infer<typeof clientServiceTerminatorsRequestSchema>;

/** A list envelope (`{data, meta}`) as the client API answers it. */
export const listEnvelopeSchema = z.object({ data: z.array(z.unknown()), meta: z.record(z.string(), z.unknown()) });
