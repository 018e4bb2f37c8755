import { z } from 'zod';
import {
  apiSessionIdsOfReplySchema,
  apiSessionIdsOfRequestSchema,
  authCallNames,
  authenticatorIdRequestSchema,
  calls,
  clientServiceTerminatorsRequestSchema,
  configTypeIdsReplySchema,
  configTypeIdsRequestSchema,
  createAuthenticatorRequestSchema,
  createIdentityEnrollmentsRequestSchema,
  createIdentityEnrollmentsResultSchema,
  createIdentityRequestSchema,
  createIdentityResultSchema,
  credentialAuthenticatorSchema,
  deleteIdentityEnrollmentsRequestSchema,
  entityDetailsReplySchema,
  entityDetailsRequestSchema,
  existingServicesReplySchema,
  existingServicesRequestSchema,
  getIdentitiesRequestSchema,
  getIdentitiesResultSchema,
  inventoryCallNames,
  listEnvelopeSchema,
  pendingEnrollmentsRequestSchema,
  pendingEnrollmentsResultSchema,
  pkiCallNames,
  replaceCertificateRequestSchema,
  serverIdentitySchema,
  stageCertificateRequestSchema,
  verifyClientCertificateRequestSchema,
  verifyClientCertificateResultSchema,
} from './bus.ts';
import {
  entityStatesReplySchema,
  entityStatesRequestSchema,
  eventPositionReplySchema,
  integrityCheckReplySchema,
  integrityCheckRequestSchema,
  maintenanceActions,
  snapshotReplySchema,
  snapshotRequestSchema,
  summaryCountsSchema,
} from './maintenance.ts';
import type { Owner } from './operation.ts';
import {
  authorizeSessionUseReplySchema,
  authorizeSessionUseRequestSchema,
  createTerminatorReplySchema,
  createTerminatorRequestSchema,
  dialTargetsReplySchema,
  dialTargetsRequestSchema,
  fabricCallNames,
  removeTerminatorsReplySchema,
  removeTerminatorsRequestSchema,
  renewRouterLeasesReplySchema,
  renewRouterLeasesRequestSchema,
  reportRouterPresenceReplySchema,
  reportRouterPresenceRequestSchema,
  routePathsReplySchema,
  routePathsRequestSchema,
  routerAdmissionReplySchema,
  routerAdmissionRequestSchema,
  routerApiSessionsOfReplySchema,
  routerApiSessionsOfRequestSchema,
  routerApiSessionsReplySchema,
  routerApiSessionsRequestSchema,
  routerTerminatorsReplySchema,
  routerTerminatorsRequestSchema,
  terminatorDynamicCostsReplySchema,
  terminatorDynamicCostsRequestSchema,
  touchApiSessionsReplySchema,
  touchApiSessionsRequestSchema,
} from './fabric.ts';
import {
  issueRouterEnrollmentRequestSchema,
  pendingRouterEnrollmentsReplySchema,
  pendingRouterEnrollmentsRequestSchema,
  revokeRouterEnrollmentsRequestSchema,
  routerByFingerprintReplySchema,
  routerByFingerprintRequestSchema,
  routerCertificateChangedRequestSchema,
  routerEnrolledRequestSchema,
  routerEnrollmentActions,
  routerEnrollmentInfoSchema,
} from './router-enrollment.ts';

/**
 * A service that serves calls: every operation owner but the gateway, and the router edge
 * (`fabric`, docs/adr/0023), which owns no API operation.
 */
export type CallOwner = Exclude<Owner, 'gateway'> | 'fabric';

/**
 * One service-to-service call, `ziti.rpc.<owner>.call.<action>`, declared once: who serves it,
 * its action, the request the callee parses and the reply the caller parses. Callers send it with
 * `callService` and callees serve it with `callHandlers` (packages/platform/src/call.ts).
 */
export interface CallContract<
  Request extends z.ZodType = z.ZodType,
  Reply extends z.ZodType = z.ZodType,
  O extends CallOwner = CallOwner,
> {
  /** The services that serve it (every database owner serves the maintenance calls). */
  readonly servedBy: readonly O[];
  readonly action: string;
  readonly request: Request;
  readonly reply: Reply;
  /**
   * Safe to send again: the call only reads, so a second send (to another replica, while the first
   * is unanswered) cannot apply anything twice. `callService` re-sends such a call when no reply
   * came within `callRepeatAfterMs`; every other call is sent once.
   */
  readonly repeatable: boolean;
}

/** What a caller sends. */
export type CallRequest<C extends CallContract> = z.input<C['request']>;
/** What a callee receives: the request as its schema parsed it. */
export type CallPayload<C extends CallContract> = z.output<C['request']>;
/** What a callee answers. */
export type CallAnswer<C extends CallContract> = z.input<C['reply']>;
/** What a caller gets: the reply as its schema parsed it. */
export type CallReply<C extends CallContract> = z.output<C['reply']>;

function callContract<const O extends CallOwner, Request extends z.ZodType, Reply extends z.ZodType>(
  servedBy: readonly O[],
  action: string,
  request: Request,
  reply: Reply,
  kind: 'read' | 'write',
): CallContract<Request, Reply, O> {
  return { servedBy, action, request, reply, repeatable: kind === 'read' };
}

/** The answer of a call that only does something. */
export const doneReplySchema = z.object({});
const noRequest = z.object({});

/** `verifyExtJwtSecondary`: is a bearer token a valid JWT of the signer a session's auth policy requires? */
export const extJwtSecondaryRequestSchema = z.object({ identityId: z.string(), signerId: z.string(), jwt: z.string() });
export type ExtJwtSecondaryRequest = z.infer<typeof extJwtSecondaryRequestSchema>;
export const extJwtSecondaryResultSchema = z.object({
  valid: z.boolean(),
  /** ISO time until which a positive answer may be reused (the JWT's expiry, capped by auth). */
  validUntil: z.string().optional(),
});
export type ExtJwtSecondaryResult = z.infer<typeof extJwtSecondaryResultSchema>;

/**
 * Calls auth serves: credentials for pki-enrollment, the external-JWT factor for the gateway,
 * identity details for policy's association lists.
 */
export const authCallContracts = {
  createAuthenticator: callContract(
    ['auth'],
    authCallNames.createAuthenticator,
    createAuthenticatorRequestSchema,
    z.object({ id: z.string() }),
    'write',
  ),
  getAuthenticator: callContract(
    ['auth'],
    authCallNames.getAuthenticator,
    authenticatorIdRequestSchema,
    credentialAuthenticatorSchema,
    'read',
  ),
  stageCertificate: callContract(
    ['auth'],
    authCallNames.stageCertificate,
    stageCertificateRequestSchema,
    doneReplySchema,
    'write',
  ),
  replaceCertificate: callContract(
    ['auth'],
    authCallNames.replaceCertificate,
    replaceCertificateRequestSchema,
    doneReplySchema,
    'write',
  ),
  deleteAuthenticator: callContract(
    ['auth'],
    authCallNames.deleteAuthenticator,
    authenticatorIdRequestSchema,
    doneReplySchema,
    'write',
  ),
  getIdentities: callContract(
    ['auth'],
    authCallNames.getIdentities,
    getIdentitiesRequestSchema,
    getIdentitiesResultSchema,
    'read',
  ),
  createIdentity: callContract(
    ['auth'],
    authCallNames.createIdentity,
    createIdentityRequestSchema,
    createIdentityResultSchema,
    'write',
  ),
  /** policy's association lists show each identity as auth's `GET /identities/{id}` does. */
  identityDetails: callContract(
    ['auth'],
    authCallNames.identityDetails,
    entityDetailsRequestSchema,
    entityDetailsReplySchema,
    'read',
  ),
  /** policy's posture data lists every live API session of an identity: only their ids leave auth. */
  apiSessionIdsOf: callContract(
    ['auth'],
    authCallNames.apiSessionIdsOf,
    apiSessionIdsOfRequestSchema,
    apiSessionIdsOfReplySchema,
    'read',
  ),
  /**
   * The gateway's per-request check of an auth policy's `secondary.requireExtJwtSigner`; auth owns
   * the signers and their keys, and the gateway keeps a positive answer until `validUntil`.
   */
  verifyExtJwtSecondary: callContract(
    ['auth'],
    'verifyExtJwtSecondary',
    extJwtSecondaryRequestSchema,
    extJwtSecondaryResultSchema,
    'read',
  ),
} as const;

/** Calls pki-enrollment serves: the edge API's TLS identity, certificate verdicts, identity enrollments. */
export const pkiEnrollmentCallContracts = {
  serverIdentity: callContract(['pki-enrollment'], calls.serverIdentity, noRequest, serverIdentitySchema, 'read'),
  verifyClientCertificate: callContract(
    ['pki-enrollment'],
    pkiCallNames.verifyClientCertificate,
    verifyClientCertificateRequestSchema,
    verifyClientCertificateResultSchema,
    'read',
  ),
  pendingEnrollments: callContract(
    ['pki-enrollment'],
    pkiCallNames.pendingEnrollments,
    pendingEnrollmentsRequestSchema,
    pendingEnrollmentsResultSchema,
    'read',
  ),
  createIdentityEnrollments: callContract(
    ['pki-enrollment'],
    pkiCallNames.createIdentityEnrollments,
    createIdentityEnrollmentsRequestSchema,
    createIdentityEnrollmentsResultSchema,
    'write',
  ),
  deleteIdentityEnrollments: callContract(
    ['pki-enrollment'],
    pkiCallNames.deleteIdentityEnrollments,
    deleteIdentityEnrollmentsRequestSchema,
    z.object({ ids: z.array(z.string()) }),
    'write',
  ),
} as const;

/** Calls pki-enrollment serves for inventory: a router's enrollment issued, revoked, shown. */
export const routerEnrollmentCallContracts = {
  issue: callContract(
    ['pki-enrollment'],
    routerEnrollmentActions.issue,
    issueRouterEnrollmentRequestSchema,
    routerEnrollmentInfoSchema,
    'write',
  ),
  revoke: callContract(
    ['pki-enrollment'],
    routerEnrollmentActions.revoke,
    revokeRouterEnrollmentsRequestSchema,
    doneReplySchema,
    'write',
  ),
  pending: callContract(
    ['pki-enrollment'],
    routerEnrollmentActions.pending,
    pendingRouterEnrollmentsRequestSchema,
    pendingRouterEnrollmentsReplySchema,
    'read',
  ),
} as const;

/**
 * Calls inventory serves: client terminators and edge-router details for policy, enrolled routers
 * for pki-enrollment, existing services and config-type ids for auth.
 */
export const inventoryCallContracts = {
  clientServiceTerminators: callContract(
    ['inventory'],
    inventoryCallNames.clientServiceTerminators,
    clientServiceTerminatorsRequestSchema,
    listEnvelopeSchema,
    'read',
  ),
  /** policy's association lists show each edge router as inventory's `GET /edge-routers/{id}` does. */
  edgeRouterDetails: callContract(
    ['inventory'],
    inventoryCallNames.edgeRouterDetails,
    entityDetailsRequestSchema,
    entityDetailsReplySchema,
    'read',
  ),
  existingServices: callContract(
    ['inventory'],
    inventoryCallNames.existingServices,
    existingServicesRequestSchema,
    existingServicesReplySchema,
    'read',
  ),
  /** auth, when a login sends `configTypes`: the config-type ids its API session keeps. */
  configTypeIds: callContract(
    ['inventory'],
    inventoryCallNames.configTypeIds,
    configTypeIdsRequestSchema,
    configTypeIdsReplySchema,
    'read',
  ),
  routerEnrolled: callContract(
    ['inventory'],
    routerEnrollmentActions.enrolled,
    routerEnrolledRequestSchema,
    doneReplySchema,
    'write',
  ),
  routerByFingerprint: callContract(
    ['inventory'],
    routerEnrollmentActions.byFingerprint,
    routerByFingerprintRequestSchema,
    routerByFingerprintReplySchema,
    'read',
  ),
  routerCertificateChanged: callContract(
    ['inventory'],
    routerEnrollmentActions.certificateChanged,
    routerCertificateChangedRequestSchema,
    doneReplySchema,
    'write',
  ),
} as const;

/**
 * The calls of the router edge (docs/adr/0023): what fabric asks of inventory (routers, their
 * presence, terminators), of policy (edge sessions) and of auth (API sessions), and the ones it serves.
 */
export const fabricCallContracts = {
  routerAdmission: callContract(
    ['inventory'],
    fabricCallNames.routerAdmission,
    routerAdmissionRequestSchema,
    routerAdmissionReplySchema,
    'read',
  ),
  reportRouterPresence: callContract(
    ['inventory'],
    fabricCallNames.reportRouterPresence,
    reportRouterPresenceRequestSchema,
    reportRouterPresenceReplySchema,
    'write',
  ),
  renewRouterLeases: callContract(
    ['inventory'],
    fabricCallNames.renewRouterLeases,
    renewRouterLeasesRequestSchema,
    renewRouterLeasesReplySchema,
    'write',
  ),
  createTerminator: callContract(
    ['inventory'],
    fabricCallNames.createTerminator,
    createTerminatorRequestSchema,
    createTerminatorReplySchema,
    'write',
  ),
  removeTerminators: callContract(
    ['inventory'],
    fabricCallNames.removeTerminators,
    removeTerminatorsRequestSchema,
    removeTerminatorsReplySchema,
    'write',
  ),
  dialTargets: callContract(
    ['inventory'],
    fabricCallNames.dialTargets,
    dialTargetsRequestSchema,
    dialTargetsReplySchema,
    'read',
  ),
  routerTerminators: callContract(
    ['inventory'],
    fabricCallNames.routerTerminators,
    routerTerminatorsRequestSchema,
    routerTerminatorsReplySchema,
    'read',
  ),
  authorizeSessionUse: callContract(
    ['policy'],
    fabricCallNames.authorizeSessionUse,
    authorizeSessionUseRequestSchema,
    authorizeSessionUseReplySchema,
    'read',
  ),
  routerApiSessions: callContract(
    ['auth'],
    fabricCallNames.routerApiSessions,
    routerApiSessionsRequestSchema,
    routerApiSessionsReplySchema,
    'read',
  ),
  routerApiSessionsOf: callContract(
    ['auth'],
    fabricCallNames.routerApiSessionsOf,
    routerApiSessionsOfRequestSchema,
    routerApiSessionsOfReplySchema,
    'read',
  ),
  touchApiSessions: callContract(
    ['auth'],
    fabricCallNames.touchApiSessions,
    touchApiSessionsRequestSchema,
    touchApiSessionsReplySchema,
    // Sliding an expiry twice is sliding it once.
    'read',
  ),
  routePaths: callContract(
    ['fabric'],
    fabricCallNames.routePaths,
    routePathsRequestSchema,
    routePathsReplySchema,
    'read',
  ),
  /**
   * inventory's terminator reads (`dynamicCost`): the costs the answering fabric replica holds, its
   * own in the cluster (see `terminatorDynamicCostsRequestSchema`).
   */
  terminatorDynamicCosts: callContract(
    ['fabric'],
    fabricCallNames.terminatorDynamicCosts,
    terminatorDynamicCostsRequestSchema,
    terminatorDynamicCostsReplySchema,
    'read',
  ),
} as const;

/** The services that own entities: they also serve their entities' states for read-model rebuilds. */
export const entityOwners = ['auth', 'pki-enrollment', 'policy', 'inventory'] as const;
export type EntityOwner = (typeof entityOwners)[number];

/** Every service with a database: each serves counts, integrity checks, snapshots and its event position. */
export const databaseOwners = [...entityOwners, 'audit'] as const;
export type DatabaseOwner = (typeof databaseOwners)[number];

/** The maintenance calls the database owners serve (see `maintenanceActions`). */
export const maintenanceCallContracts = {
  summaryCounts: callContract(databaseOwners, maintenanceActions.summaryCounts, noRequest, summaryCountsSchema, 'read'),
  integrityCheck: callContract(
    databaseOwners,
    maintenanceActions.integrityCheck,
    integrityCheckRequestSchema,
    integrityCheckReplySchema,
    'write',
  ),
  snapshot: callContract(
    databaseOwners,
    maintenanceActions.snapshot,
    snapshotRequestSchema,
    snapshotReplySchema,
    'write',
  ),
  entityStates: callContract(
    entityOwners,
    maintenanceActions.entityStates,
    entityStatesRequestSchema,
    entityStatesReplySchema,
    'read',
  ),
  eventPosition: callContract(
    databaseOwners,
    maintenanceActions.eventPosition,
    noRequest,
    eventPositionReplySchema,
    'read',
  ),
} as const;
