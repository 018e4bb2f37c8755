import { z } from 'zod';
import { routerKindSchema } from './router-enrollment.ts';

/**
 * The router edge (`fabric`, docs/adr/0023) and the owners it works for. fabric holds the control
 * channels of routers and decides nothing itself: inventory owns routers (their presence included)
 * and terminators, policy owns edge sessions and access, auth owns API sessions. What fabric asks
 * of them and what they answer is declared here, once.
 */

/** `versionInfo` as a router announces it in its hello (`version|revision|buildDate|os|arch`). */
export const routerVersionInfoSchema = z.object({
  version: z.string(),
  revision: z.string(),
  buildDate: z.string(),
  os: z.string(),
  arch: z.string(),
});
export type RouterVersionInfo = z.infer<typeof routerVersionInfoSchema>;

/** A router's synchronisation status (ziti `controller/env/sync.go`); `SYNC_UNKNOWN`: never connected. */
export const routerSyncStatuses = [
  'SYNC_NEW',
  'SYNC_QUEUED',
  'SYNC_HELLO',
  'SYNC_HELLO_TIMEOUT',
  'SYNC_HELLO_WAIT',
  'SYNC_RESYNC_WAIT',
  'SYNC_IN_PROGRESS',
  'SYNC_DONE',
  'SYNC_ERROR',
  'SYNC_DISCONNECTED',
  'SYNC_UNKNOWN',
] as const;
export const routerSyncStatusSchema = z.enum(routerSyncStatuses);
export type RouterSyncStatus = z.infer<typeof routerSyncStatusSchema>;

/**
 * What the controller believes of a router's connection, as inventory records it from fabric's
 * reports: `routerPresence.changed` carries it, and router reads show it (`isOnline`, `hostname`,
 * `supportedProtocols`, `versionInfo`, `syncStatus`).
 */
export const routerPresenceState = z.object({
  /** The router's id (also the state's `id`, for read models keyed by entity id). */
  id: z.string(),
  kind: routerKindSchema,
  isOnline: z.boolean(),
  /** The host its edge listeners advertise ("" while offline or for a router without edge listeners). */
  hostname: z.string(),
  /** Protocol → URL of its edge listeners (`{"tls": "tls://host:3022"}`; `{}` while offline). */
  supportedProtocols: z.record(z.string(), z.string()),
  versionInfo: routerVersionInfoSchema.nullable(),
  syncStatus: routerSyncStatusSchema,
  /** The connection the state belongs to (null: none was ever seen). */
  connectionId: z.string().nullable(),
  connectedAt: z.string().nullable(),
  changedAt: z.string(),
});
export type RouterPresenceState = z.infer<typeof routerPresenceState>;

/** Events inventory publishes about router presence (docs/adr/0023). */
export const routerPresenceEventTypes = {
  routerPresenceChanged: { type: 'routerPresence.changed', version: 1, schema: routerPresenceState },
} as const;

/** The calls fabric makes of the owners, and the one it serves. */
export const fabricCallNames = {
  /** inventory: the router a connecting certificate names, with what admission needs. */
  routerAdmission: 'fabric.routerAdmission',
  /** inventory: a connection's presence changed (connected, synchronised, gone). */
  reportRouterPresence: 'fabric.reportRouterPresence',
  /** inventory: a replica still holds these connections (their lease is renewed). */
  renewRouterLeases: 'fabric.renewRouterLeases',
  /** inventory: a hosting SDK bound a service through a router. */
  createTerminator: 'fabric.createTerminator',
  /** inventory: a router removed terminators (an unbind, the SDK gone). */
  removeTerminators: 'fabric.removeTerminators',
  /** inventory: a service's dial facts and terminators, for a circuit. */
  dialTargets: 'fabric.dialTargets',
  /** inventory: the terminators of a router (checked against the router when it connects). */
  routerTerminators: 'fabric.routerTerminators',
  /** policy: may this edge session be used through this router now? */
  authorizeSessionUse: 'fabric.authorizeSessionUse',
  /** auth: the live API sessions as routers see them, a page at a time. */
  routerApiSessions: 'fabric.routerApiSessions',
  /** auth: the live API sessions of these identities, as routers see them. */
  routerApiSessionsOf: 'fabric.routerApiSessionsOf',
  /** auth: routers still use these API sessions (their expiry slides). */
  touchApiSessions: 'fabric.touchApiSessions',
  /** fabric: the routers of the live circuits of these edge sessions (`/sessions/{id}/route-path`). */
  routePaths: 'fabric.routePaths',
  /** fabric: the dynamic costs it holds of these terminators (terminator reads' `dynamicCost`). */
  terminatorDynamicCosts: 'fabric.terminatorDynamicCosts',
} as const;

export const routerAdmissionRequestSchema = z.object({ routerId: z.string().min(1).max(256) });
export const admittableRouterSchema = z.object({
  id: z.string(),
  name: z.string(),
  kind: routerKindSchema,
  /** Lower-case hex SHA-1 of its enrolled client certificate; null while not enrolled. */
  fingerprint: z.string().nullable(),
  isVerified: z.boolean(),
  disabled: z.boolean(),
  cost: z.number().int(),
  noTraversal: z.boolean(),
  isTunnelerEnabled: z.boolean(),
});
export type AdmittableRouter = z.infer<typeof admittableRouterSchema>;
export const routerAdmissionReplySchema = z.object({ router: admittableRouterSchema.nullable() });

export const reportRouterPresenceRequestSchema = z.object({
  routerId: z.string().min(1),
  connectionId: z.string().min(1),
  /** The fabric replica holding the connection. */
  replicaId: z.string().min(1),
  /** When the connection was accepted (a report of an older connection never replaces a newer one). */
  connectedAt: z.string(),
  isOnline: z.boolean(),
  hostname: z.string().max(1024),
  supportedProtocols: z.record(z.string().max(64), z.string().max(1024)),
  versionInfo: routerVersionInfoSchema.nullable(),
  syncStatus: routerSyncStatusSchema,
  /** How long the presence holds without a renewal (`renewRouterLeases`). */
  leaseMs: z.number().int().min(1_000).max(600_000),
});
export type RouterPresenceReport = z.infer<typeof reportRouterPresenceRequestSchema>;
export const reportRouterPresenceReplySchema = z.object({
  /** False when a newer connection of the router was recorded meanwhile (this report changed nothing). */
  applied: z.boolean(),
});

export const renewRouterLeasesRequestSchema = z.object({
  replicaId: z.string().min(1),
  connections: z.array(z.object({ routerId: z.string(), connectionId: z.string() })).max(100_000),
  leaseMs: z.number().int().min(1_000).max(600_000),
});
export const renewRouterLeasesReplySchema = z.object({
  /** Connections inventory no longer holds as current (superseded or lapsed): their channel should close. */
  stale: z.array(z.object({ routerId: z.string(), connectionId: z.string() })),
});

export const terminatorPrecedenceSchema = z.enum(['default', 'required', 'failed']);
export type TerminatorPrecedence = z.infer<typeof terminatorPrecedenceSchema>;

/** A terminator as a dial needs it. */
export const dialTerminatorSchema = z.object({
  id: z.string(),
  routerId: z.string(),
  binding: z.string(),
  address: z.string(),
  /** The hosting SDK's instance id (`identity` on the wire), "" if none. */
  instanceId: z.string(),
  cost: z.number().int(),
  precedence: terminatorPrecedenceSchema,
  /** Peer data the host gave at bind (its public key for end-to-end encryption), base64 by key. */
  peerData: z.record(z.string(), z.string()),
  hostId: z.string(),
  /** Whether its router is online now (inventory's record of router presence). */
  routerOnline: z.boolean(),
  createdAt: z.string(),
});
export type DialTerminator = z.infer<typeof dialTerminatorSchema>;

export const createTerminatorRequestSchema = z.object({
  /** The address the router chose; the reference uses it as the terminator's id. */
  id: z.string().min(1).max(512),
  serviceId: z.string().min(1),
  routerId: z.string().min(1),
  binding: z.string().min(1).max(64),
  instanceId: z.string().max(512),
  /** Base64 of the instance secret the SDK gave (kept so a later bind of the same instance can prove it). */
  instanceSecret: z.string().max(4096),
  peerData: z.record(z.string(), z.string().max(65_536)),
  cost: z.number().int().min(0).max(65_535),
  precedence: terminatorPrecedenceSchema,
  hostId: z.string().min(1),
});
export type CreateTerminatorRequest = z.infer<typeof createTerminatorRequestSchema>;
export const createTerminatorReplySchema = z.discriminatedUnion('outcome', [
  z.object({ outcome: z.literal('created'), terminatorId: z.string() }),
  /** Already there for the same service, router and host: kept (cost and precedence updated). */
  z.object({ outcome: z.literal('exists'), terminatorId: z.string() }),
  /** The id is taken by a terminator of another service, router, host or binding. */
  z.object({ outcome: z.literal('conflict'), reason: z.string() }),
  z.object({ outcome: z.literal('unknownService') }),
]);
export type CreateTerminatorReply = z.infer<typeof createTerminatorReplySchema>;

export const removeTerminatorsRequestSchema = z.object({
  routerId: z.string().min(1),
  ids: z.array(z.string().max(512)).max(10_000),
});
export const removeTerminatorsReplySchema = z.object({ removed: z.array(z.string()) });

export const dialTargetsRequestSchema = z.object({ serviceId: z.string().min(1) });
export const dialTargetsReplySchema = z.object({
  service: z
    .object({
      id: z.string(),
      name: z.string(),
      terminatorStrategy: z.string(),
      encryptionRequired: z.boolean(),
    })
    .nullable(),
  terminators: z.array(dialTerminatorSchema),
});
export type DialTargets = z.infer<typeof dialTargetsReplySchema>;

export const routerTerminatorsRequestSchema = z.object({ routerId: z.string().min(1) });
export const routerTerminatorsReplySchema = z.object({ terminators: z.array(dialTerminatorSchema) });

export const authorizeSessionUseRequestSchema = z.object({
  token: z.string().max(1024),
  type: z.enum(['Dial', 'Bind']),
  routerId: z.string().min(1),
});
/** policy's verdict on an edge session presented through a router (ziti `handler_edge_ctrl/common.go`). */
export const authorizeSessionUseReplySchema = z.discriminatedUnion('outcome', [
  z.object({
    outcome: z.literal('allowed'),
    session: z.object({
      id: z.string(),
      apiSessionId: z.string(),
      identityId: z.string(),
      serviceId: z.string(),
      type: z.enum(['Dial', 'Bind']),
    }),
  }),
  /** No live session has this token. */
  z.object({ outcome: z.literal('invalidSession') }),
  /** The session is of the other type. */
  z.object({ outcome: z.literal('wrongSessionType') }),
  /** The identity may no longer dial (or bind) the service, or the service is gone. */
  z.object({ outcome: z.literal('invalidService') }),
  /** No edge-router policy pair lets the identity reach the service through this router. */
  z.object({ outcome: z.literal('invalidEdgeRouter') }),
]);
export type SessionUseVerdict = z.infer<typeof authorizeSessionUseReplySchema>;

/** An API session as an edge router is told of it (`edge_ctrl_pb.ApiSession`). */
export const routerApiSessionSchema = z.object({
  id: z.string(),
  token: z.string(),
  identityId: z.string(),
  /** The fingerprints of the certificates its identity may connect with (its cert authenticators'). */
  certFingerprints: z.array(z.string()),
});
export type RouterApiSession = z.infer<typeof routerApiSessionSchema>;

export const routerApiSessionsRequestSchema = z.object({
  /** Where this page starts: absent for the first, then the `next` of the page before. */
  cursor: z.string().max(256).optional(),
  limit: z.number().int().min(1).max(1_000),
});
export const routerApiSessionsReplySchema = z.object({
  /** A page of live sessions; a session live for the whole walk is in one page at least (maybe two). */
  sessions: z.array(routerApiSessionSchema),
  /** Where the next page starts; null on the last page. */
  next: z.string().nullable(),
});

export const routerApiSessionsOfRequestSchema = z.object({ identityIds: z.array(z.string()).max(1_000) });
export const routerApiSessionsOfReplySchema = z.object({ sessions: z.array(routerApiSessionSchema) });

export const touchApiSessionsRequestSchema = z.object({ tokens: z.array(z.string().max(1024)).max(100_000) });
export const touchApiSessionsReplySchema = z.object({
  /** The tokens that are no longer live sessions (ended or expired): routers should drop them. */
  gone: z.array(z.string()),
});

export const routePathsRequestSchema = z.object({ sessionIds: z.array(z.string()).max(1_000) });
export const routePathsReplySchema = z.object({
  /** Session id → the router ids of its live circuits' paths (in path order, each once). */
  paths: z.record(z.string(), z.array(z.string())),
});

/**
 * The dynamic part of terminators' costs (smartrouting's failures and load; ziti
 * `xt.GlobalCosts().GetDynamicCost`), which inventory shows as a terminator's `dynamicCost`. It lives
 * in the memory of a fabric process, as in the reference's controller process: in the cluster each
 * fabric replica holds its own, from the dials it routed (as each reference controller does), and the
 * answer is that of the replica that took the call; a restarted replica starts from 0. A terminator
 * no dial through it touched is 0.
 */
export const terminatorDynamicCostsRequestSchema = z.object({ ids: z.array(z.string().max(512)).max(1_000) });
export const terminatorDynamicCostsReplySchema = z.object({
  /** Terminator id → its dynamic cost (0–65,535), for every id asked. */
  costs: z.record(z.string(), z.number().int().min(0).max(65_535)),
});

/**
 * Signals: broadcast to every process that listens, not kept (core NATS, at most once). auth tells
 * fabric of API sessions as they open or change, since a login writes no event (docs/adr/0017);
 * a listener that may have missed some (a NATS reconnect) resynchronises its routers in full.
 */
export const signalSubjects = {
  apiSessions: 'ziti.sig.auth.apiSessions',
  /** What each fabric replica holds of the router fleet: its routers and the links they reported. */
  fleet: 'ziti.sig.fabric.fleet',
} as const;

export const apiSessionSignalSchema = z.object({
  kind: z.enum(['opened', 'changed']),
  session: routerApiSessionSchema,
});
export type ApiSessionSignal = z.infer<typeof apiSessionSignalSchema>;

const fleetId = z.string().min(1).max(256);
export const linkListenerSchema = z.object({
  address: z.string().max(1024),
  protocol: z.string().max(64),
  costTags: z.array(z.string().max(256)).max(64),
  groups: z.array(z.string().max(256)).max(64),
  localBinding: z.string().max(256),
});
/** A router a fabric replica holds, as the others need it: to tell their routers of it and route over it. */
export const fleetRouterSchema = z.object({
  id: fleetId,
  version: z.string().max(256),
  listeners: z.array(linkListenerSchema).max(64),
  cost: z.number().int().min(0).max(65_535),
  noTraversal: z.boolean(),
  /** When its channel was accepted: of two replicas that claim a router, the newer connection holds it. */
  connectedAt: z.string().max(64),
});
export type FleetRouter = z.infer<typeof fleetRouterSchema>;
/** A link a router of the replica reported (it dialled or accepted it). */
export const fleetLinkSchema = z.object({
  id: fleetId,
  srcRouterId: fleetId,
  dstRouterId: fleetId,
  protocol: z.string().max(64),
  dialAddress: z.string().max(1024),
  iteration: z
    .number()
    .int()
    .min(0)
    .max(2 ** 32 - 1),
  /** Each end's measured latency in ms (the reference's 65 s until measured). */
  srcLatencyMs: z
    .number()
    .int()
    .min(0)
    .max(2 ** 31 - 1),
  dstLatencyMs: z
    .number()
    .int()
    .min(0)
    .max(2 ** 31 - 1),
});
export type FleetLink = z.infer<typeof fleetLinkSchema>;
/**
 * Fleet signals (docs/adr/0026): each fabric replica says what it holds now and then in full
 * (`state`, which replaces all it said before and keeps it alive), and each change at once; a
 * replica that starts or missed signals asks for everyone's state (`hello`).
 */
export const fleetSignalSchema = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('state'),
    replicaId: fleetId,
    routers: z.array(fleetRouterSchema).max(20_000),
    links: z.array(fleetLinkSchema).max(100_000),
  }),
  z.object({ kind: z.literal('hello'), replicaId: fleetId }),
  z.object({ kind: z.literal('routerUp'), replicaId: fleetId, router: fleetRouterSchema }),
  z.object({ kind: z.literal('routerDown'), replicaId: fleetId, routerId: fleetId, removed: z.boolean() }),
  z.object({ kind: z.literal('link'), replicaId: fleetId, link: fleetLinkSchema }),
  z.object({
    kind: z.literal('linkGone'),
    replicaId: fleetId,
    linkId: fleetId,
    iteration: z
      .number()
      .int()
      .min(0)
      .max(2 ** 32 - 1),
  }),
]);
export type FleetSignal = z.infer<typeof fleetSignalSchema>;

/** A fabric replica's own subject: instructions for the routers it holds, from the other replicas. */
export const fabricReplicaSubject = (replicaId: string) => `ziti.rpc.fabric.replica.${replicaId}`;

const peerDataSchema = z
  .record(z.string().regex(/^\d{1,10}$/), z.string().max(65_536))
  .refine((r) => Object.keys(r).length <= 64, 'at most 64 peer data entries');
/** An instruction for a router another replica holds (its Route, Unroute or a link fault). */
export const replicaInstructionSchema = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('route'),
    routerId: fleetId,
    timeoutMs: z.number().int().min(1).max(120_000),
    route: z.object({
      circuitId: fleetId,
      attempt: z.number().int().min(0).max(1_000),
      timeoutMs: z.number().int().min(1).max(120_000),
      forwards: z
        .array(z.object({ srcAddress: fleetId, dstAddress: fleetId, dstType: z.enum(['start', 'end', 'link']) }))
        .max(8),
      egress: z
        .object({
          binding: z.string().max(256),
          address: fleetId,
          destination: z.string().max(1024),
          /** key → base64 */
          peerData: peerDataSchema,
        })
        .optional(),
      tags: z.record(z.string().max(256), z.string().max(1024)),
    }),
  }),
  z.object({ kind: z.literal('unroute'), routerId: fleetId, circuitId: fleetId, now: z.boolean() }),
  z.object({ kind: z.literal('linkFaulted'), routerId: fleetId, linkId: fleetId, iteration: z.number().int().min(0) }),
]);
export type ReplicaInstruction = z.infer<typeof replicaInstructionSchema>;
export const routeOutcomeReplySchema = z.discriminatedUnion('outcome', [
  z.object({ outcome: z.literal('routed'), attempt: z.number().int(), peerData: peerDataSchema }),
  z.object({
    outcome: z.literal('failed'),
    attempt: z.number().int(),
    errorCode: z.number().int().nullable(),
    error: z.string().max(4096),
  }),
  z.object({ outcome: z.literal('timedOut') }),
  z.object({ outcome: z.literal('closed') }),
]);
export type RouteOutcomeWire = z.infer<typeof routeOutcomeReplySchema>;
