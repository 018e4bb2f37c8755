/**
 * The edge control messages, package `ziti.edge_ctrl.pb` (ziti v1.1.9 `common/pb/edge_ctrl_pb/edge_ctrl.proto`):
 * same field numbers, camelCase names. Content types follow each message's GetContentType
 * (`edge_ctrl_pb/messages.go`) or the type the reference sends it with. The router data model (DataState, 20500+)
 * and the tunneler messages are not here: a 1.1.9 router uses them only with `ha.enabled` or its tunneler.
 */
import { defineMessage, field } from './schema.ts';

// edge_ctrl.proto ContentType
export const ContentType = {
  Zero: 0,
  ServerHelloType: 20000,
  ClientHelloType: 20001,
  ErrorType: 20002,
  SessionRemovedType: 20102,
  ApiSessionAddedType: 20200,
  ApiSessionUpdatedType: 20201,
  ApiSessionRemovedType: 20202,
  ApiSessionHeartbeatType: 20203,
  RequestClientReSyncType: 20204,
  CreateCircuitRequestType: 20205,
  CreateCircuitResponseType: 20206,
  CreateTerminatorRequestType: 20207,
  CreateTerminatorResponseType: 20208,
  UpdateTerminatorRequestType: 20209,
  UpdateTerminatorResponseType: 20210,
  RemoveTerminatorRequestType: 20211,
  RemoveTerminatorResponseType: 20212,
  ValidateSessionsRequestType: 20213,
  HealthEventType: 20214,
  CreateTerminatorV2RequestType: 20216,
  CreateTerminatorV2ResponseType: 20217,
  CreateCircuitV2RequestType: 20218,
  CreateCircuitV2ResponseType: 20219,
  CreateTunnelCircuitV2RequestType: 20220,
  CreateTunnelCircuitV2ResponseType: 20221,
  EnrollType: 20300,
  EnrollmentCertsResponseType: 20301,
  EnrollmentExtendRouterRequestType: 20302,
  EnrollmentExtendRouterVerifyRequestType: 20303,
  CreateApiSessionRequestType: 20400,
  CreateApiSessionResponseType: 20401,
  CreateCircuitForServiceRequestType: 20402,
  CreateCircuitForServiceResponseType: 20403,
  ListServicesRequestType: 20404,
  ServiceListType: 20405,
  CreateTunnelTerminatorRequestType: 20406,
  CreateTunnelTerminatorResponseType: 20407,
  UpdateTunnelTerminatorRequestType: 20408,
  UpdateTunnelTerminatorResponseType: 20409,
  RemoveTunnelTerminatorRequestType: 20410,
  RemoveTunnelTerminatorResponseType: 20411,
  TunnelHealthEventType: 20412,
  CreateTunnelTerminatorRequestV2Type: 20413,
  CreateTunnelTerminatorResponseV2Type: 20414,
  DataStateType: 20500,
  DataStateChangeSetType: 20501,
  UpdateTokenType: 20502,
} as const;

export const SessionType = { Dial: 0, Bind: 1 } as const;

// edge_ctrl.proto Header
export const Header = {
  HeaderZero: 0,
  TerminatorId: 1022,
  CheckPassed: 1023,
  /** bool on ServerHello/ClientHello: the router data model is offered/used (sync_instant.go sendHello). */
  RouterDataModel: 1024,
  /** uint64 on ClientHello (router/handler_edge_ctrl/hello.go). */
  RouterDataModelIndex: 1025,
} as const;

// controller/env/sync.go: headers of the API-session sync messages.
export const SyncHeader = {
  /** The strategy name, "instant". */
  SyncStrategyType: 1013,
  /** JSON `{"id","isLast","sequence"}` on the full-sync ApiSessionAdded; empty on later updates. */
  SyncStrategyState: 1014,
  SyncStrategyLastIndex: 1015,
} as const;

// sdk-golang ziti/edge/messages.go: the edge header on ErrorType replies, and the peer data keys routers use.
export const EdgeHeader = {
  PublicKey: 1003,
  CallerId: 1008,
  AppData: 1011,
  /** uint32 error code on an ErrorType reply (controller/handler_edge_ctrl/common.go returnError). */
  ErrorCode: 1014,
  ConnectionMarker: 1025,
} as const;

// sdk-golang ziti/edge/messages.go ErrorCode* (controller/handler_edge_ctrl/errors.go)
export const EdgeErrorCode = {
  Internal: 1,
  InvalidApiSession: 2,
  InvalidSession: 3,
  WrongSessionType: 4,
  InvalidEdgeRouterForSession: 5,
  InvalidService: 6,
  TunnelingNotEnabled: 7,
  InvalidTerminator: 8,
  InvalidPrecedence: 9,
  InvalidCost: 10,
  EncryptionDataMissing: 11,
} as const;

export const PolicyType = { InvalidPolicy: 0, DialPolicy: 1, BindPolicy: 2 } as const;

export const TerminatorPrecedence = { Default: 0, Required: 1, Failed: 2 } as const;

export const CreateTerminatorResult = {
  Success: 0,
  FailedIdConflict: 1,
  FailedOther: 2,
  FailedBusy: 3,
  FailedInvalidSession: 4,
} as const;

export interface ServerHello {
  version: string;
  data: Map<string, string>;
  byteData: Map<string, Uint8Array>;
}
export const ServerHello = defineMessage<ServerHello>(
  'ziti.edge_ctrl.pb.ServerHello',
  { version: field.string(1), data: field.map(2, 'string', 'string'), byteData: field.map(3, 'string', 'bytes') },
  ContentType.ServerHelloType,
);

export interface Address {
  value: string;
  protocol: string;
  hostname: string;
  port: number;
}
export const Address = defineMessage<Address>('ziti.edge_ctrl.pb.Address', {
  value: field.string(10),
  protocol: field.string(20),
  hostname: field.string(30),
  port: field.int32(40),
});

/** An edge listener of the router: where SDKs connect (`address`) and what to tell them (`advertise`). */
export interface Listener {
  address?: Address;
  advertise?: Address;
}
export const Listener = defineMessage<Listener>('ziti.edge_ctrl.pb.Listener', {
  address: field.message(10, Address),
  advertise: field.message(20, Address),
});

export interface ClientHello {
  version: string;
  hostname: string;
  /** Deprecated in favour of `listeners`; still sent (router/handler_edge_ctrl/hello.go). */
  protocols: string[];
  data: Map<string, string>;
  /** Deprecated in favour of `listeners`; the advertise ports, as strings. */
  protocolPorts: string[];
  listeners: Listener[];
}
export const ClientHello = defineMessage<ClientHello>(
  'ziti.edge_ctrl.pb.ClientHello',
  {
    version: field.string(1),
    hostname: field.string(2),
    protocols: field.repeated(3, 'string'),
    data: field.map(4, 'string', 'string'),
    protocolPorts: field.repeated(5, 'string'),
    listeners: field.repeatedMessage(10, Listener),
  },
  ContentType.ClientHelloType,
);

/**
 * The protobuf Error. Only enrollment extension replies carry it as a body; the session handlers answer ErrorType
 * with the raw message as body and EdgeHeader.ErrorCode (see `decodeEdgeError`).
 */
export interface Error {
  code: string;
  message: string;
  cause: string;
}
export const Error = defineMessage<Error>(
  'ziti.edge_ctrl.pb.Error',
  { code: field.string(1), message: field.string(2), cause: field.string(3) },
  ContentType.ErrorType,
);

export interface ApiSession {
  token: string;
  certFingerprints: string[];
  id: string;
}
export const ApiSession = defineMessage<ApiSession>('ziti.edge_ctrl.pb.ApiSession', {
  token: field.string(1),
  certFingerprints: field.repeated(2, 'string'),
  id: field.string(3),
});

export interface ApiSessionAdded {
  isFullState: boolean;
  apiSessions: ApiSession[];
}
export const ApiSessionAdded = defineMessage<ApiSessionAdded>(
  'ziti.edge_ctrl.pb.ApiSessionAdded',
  { isFullState: field.bool(1), apiSessions: field.repeatedMessage(2, ApiSession) },
  ContentType.ApiSessionAddedType,
);

export interface ApiSessionUpdated {
  apiSessions: ApiSession[];
}
export const ApiSessionUpdated = defineMessage<ApiSessionUpdated>(
  'ziti.edge_ctrl.pb.ApiSessionUpdated',
  { apiSessions: field.repeatedMessage(1, ApiSession) },
  ContentType.ApiSessionUpdatedType,
);

export interface ApiSessionRemoved {
  tokens: string[];
  ids: string[];
}
export const ApiSessionRemoved = defineMessage<ApiSessionRemoved>(
  'ziti.edge_ctrl.pb.ApiSessionRemoved',
  { tokens: field.repeated(1, 'string'), ids: field.repeated(2, 'string') },
  ContentType.ApiSessionRemovedType,
);

export interface ApiSessionHeartbeat {
  tokens: string[];
}
export const ApiSessionHeartbeat = defineMessage<ApiSessionHeartbeat>(
  'ziti.edge_ctrl.pb.ApiSessionHeartbeat',
  { tokens: field.repeated(1, 'string') },
  ContentType.ApiSessionHeartbeatType,
);

export interface SessionRemoved {
  tokens: string[];
  ids: string[];
}
export const SessionRemoved = defineMessage<SessionRemoved>(
  'ziti.edge_ctrl.pb.SessionRemoved',
  { tokens: field.repeated(1, 'string'), ids: field.repeated(2, 'string') },
  ContentType.SessionRemovedType,
);

export interface RequestClientReSync {
  reason: string;
}
export const RequestClientReSync = defineMessage<RequestClientReSync>(
  'ziti.edge_ctrl.pb.RequestClientReSync',
  { reason: field.string(1) },
  ContentType.RequestClientReSyncType,
);

/** V1; a router talking to a controller with the CreateCircuitV2 capability sends the headers-only V2 instead. */
export interface CreateCircuitRequest {
  sessionToken: string;
  fingerprints: string[];
  terminatorInstanceId: string;
  peerData: Map<number, Uint8Array>;
  apiSessionToken: string;
}
export const CreateCircuitRequest = defineMessage<CreateCircuitRequest>(
  'ziti.edge_ctrl.pb.CreateCircuitRequest',
  {
    sessionToken: field.string(1),
    fingerprints: field.repeated(2, 'string'),
    terminatorInstanceId: field.string(3),
    peerData: field.map(4, 'uint32', 'bytes'),
    apiSessionToken: field.string(5),
  },
  ContentType.CreateCircuitRequestType,
);

export interface CreateCircuitResponse {
  circuitId: string;
  address: string;
  peerData: Map<number, Uint8Array>;
  tags: Map<string, string>;
}
export const CreateCircuitResponse = defineMessage<CreateCircuitResponse>(
  'ziti.edge_ctrl.pb.CreateCircuitResponse',
  {
    circuitId: field.string(1),
    address: field.string(2),
    peerData: field.map(3, 'uint32', 'bytes'),
    tags: field.map(4, 'string', 'string'),
  },
  ContentType.CreateCircuitResponseType,
);

/** V1; answered with CreateTerminatorResponseType whose body is the terminator id (create_terminator.go). */
export interface CreateTerminatorRequest {
  sessionToken: string;
  fingerprints: string[];
  peerData: Map<number, Uint8Array>;
  cost: number;
  /** TerminatorPrecedence */
  precedence: number;
  instanceId: string;
  instanceSecret: Uint8Array;
  apiSessionToken: string;
}
export const CreateTerminatorRequest = defineMessage<CreateTerminatorRequest>(
  'ziti.edge_ctrl.pb.CreateTerminatorRequest',
  {
    sessionToken: field.string(1),
    fingerprints: field.repeated(2, 'string'),
    peerData: field.map(3, 'uint32', 'bytes'),
    cost: field.uint32(4),
    precedence: field.enum(5),
    instanceId: field.string(6),
    instanceSecret: field.bytes(7),
    apiSessionToken: field.string(8),
  },
  ContentType.CreateTerminatorRequestType,
);

export interface CreateTerminatorV2Request {
  /** The terminator id the router generated; the controller uses it as id and address. */
  address: string;
  sessionToken: string;
  fingerprints: string[];
  peerData: Map<number, Uint8Array>;
  cost: number;
  /** TerminatorPrecedence */
  precedence: number;
  instanceId: string;
  instanceSecret: Uint8Array;
  apiSessionToken: string;
}
export const CreateTerminatorV2Request = defineMessage<CreateTerminatorV2Request>(
  'ziti.edge_ctrl.pb.CreateTerminatorV2Request',
  {
    address: field.string(1),
    sessionToken: field.string(2),
    fingerprints: field.repeated(3, 'string'),
    peerData: field.map(4, 'uint32', 'bytes'),
    cost: field.uint32(5),
    precedence: field.enum(6),
    instanceId: field.string(7),
    instanceSecret: field.bytes(8),
    apiSessionToken: field.string(9),
  },
  ContentType.CreateTerminatorV2RequestType,
);

/** Success and failure alike (create_terminator_v2.go returnError); sent as a reply to the request. */
export interface CreateTerminatorV2Response {
  terminatorId: string;
  /** CreateTerminatorResult */
  result: number;
  msg: string;
}
export const CreateTerminatorV2Response = defineMessage<CreateTerminatorV2Response>(
  'ziti.edge_ctrl.pb.CreateTerminatorV2Response',
  { terminatorId: field.string(1), result: field.enum(2), msg: field.string(3) },
  ContentType.CreateTerminatorV2ResponseType,
);

/** Answered with RemoveTerminatorResponseType and no body, or ErrorType (remove_terminator.go). */
export interface RemoveTerminatorRequest {
  sessionToken: string;
  fingerprints: string[];
  terminatorId: string;
  apiSessionToken: string;
}
export const RemoveTerminatorRequest = defineMessage<RemoveTerminatorRequest>(
  'ziti.edge_ctrl.pb.RemoveTerminatorRequest',
  {
    sessionToken: field.string(1),
    fingerprints: field.repeated(2, 'string'),
    terminatorId: field.string(3),
    apiSessionToken: field.string(4),
  },
  ContentType.RemoveTerminatorRequestType,
);

/** Answered with UpdateTerminatorResponseType and no body, or ErrorType (update_terminator.go). */
export interface UpdateTerminatorRequest {
  sessionToken: string;
  fingerprints: string[];
  terminatorId: string;
  cost: number;
  /** TerminatorPrecedence */
  precedence: number;
  updatePrecedence: boolean;
  updateCost: boolean;
  apiSessionToken: string;
}
export const UpdateTerminatorRequest = defineMessage<UpdateTerminatorRequest>(
  'ziti.edge_ctrl.pb.UpdateTerminatorRequest',
  {
    sessionToken: field.string(1),
    fingerprints: field.repeated(2, 'string'),
    terminatorId: field.string(3),
    cost: field.uint32(4),
    precedence: field.enum(5),
    updatePrecedence: field.bool(6),
    updateCost: field.bool(7),
    apiSessionToken: field.string(8),
  },
  ContentType.UpdateTerminatorRequestType,
);

export interface HealthEventRequest {
  sessionToken: string;
  fingerprints: string[];
  terminatorId: string;
  checkPassed: boolean;
  apiSessionToken: string;
}
export const HealthEventRequest = defineMessage<HealthEventRequest>(
  'ziti.edge_ctrl.pb.HealthEventRequest',
  {
    sessionToken: field.string(1),
    fingerprints: field.repeated(2, 'string'),
    terminatorId: field.string(3),
    checkPassed: field.bool(4),
    apiSessionToken: field.string(5),
  },
  ContentType.HealthEventType,
);

export interface ValidateSessionsRequest {
  sessionTokens: string[];
}
export const ValidateSessionsRequest = defineMessage<ValidateSessionsRequest>(
  'ziti.edge_ctrl.pb.ValidateSessionsRequest',
  { sessionTokens: field.repeated(1, 'string') },
  ContentType.ValidateSessionsRequestType,
);
