/**
 * The fabric control messages, package `ziti.ctrl.pb` (ziti v1.1.9 `common/pb/ctrl_pb/ctrl.proto`): same field
 * numbers, camelCase names. Content types follow each message's GetContentType (`ctrl_pb/impl.go`) or, where it
 * has none, the type the reference sends it with (named per message).
 */
import { defineMessage, field } from './schema.ts';

// ctrl.proto ContentType (1000-1999). 1001, 1016 and 1022 live in common/ctrl_msg (see ctrl-msg.ts).
export const ContentType = {
  Zero: 0,
  CircuitRequestType: 1000,
  DialType: 1002,
  LinkConnectedType: 1003,
  FaultType: 1004,
  RouteType: 1005,
  UnrouteType: 1006,
  MetricsType: 1007,
  TogglePipeTracesRequestType: 1008,
  TraceEventType: 1010,
  CreateTerminatorRequestType: 1011,
  RemoveTerminatorRequestType: 1012,
  InspectRequestType: 1013,
  InspectResponseType: 1014,
  ValidateTerminatorsRequestType: 1017,
  UpdateTerminatorRequestType: 1018,
  SettingsType: 1020,
  CircuitConfirmationType: 1034,
  RouterLinksType: 1035,
  VerifyRouterType: 1036,
  UpdateCtrlAddressesType: 1037,
  RemoveTerminatorsRequestType: 1038,
  QuiesceRouterRequestType: 1039,
  DequiesceRouterRequestType: 1040,
  ValidateTerminatorsV2RequestType: 1041,
  ValidateTerminatorsV2ResponseType: 1042,
  DecommissionRouterRequestType: 1043,
  PeerStateChangeRequestType: 1050,
} as const;

export const ControlHeaders = {
  NoneHeader: 0,
  ListenersHeader: 10,
  RouterMetadataHeader: 11,
  CapabilitiesHeader: 12,
} as const;

export const RouterCapability = { CapabilityZero: 0, LinkManagement: 1 } as const;

export const SettingTypes = { UnusedSetting: 0, NewCtrlAddress: 1 } as const;

export const TerminatorPrecedence = { Default: 0, Required: 1, Failed: 2 } as const;

export const TerminatorInvalidReason = { UnknownBinding: 0, UnknownTerminator: 1, BadState: 2 } as const;

export const FaultSubject = {
  IngressFault: 0,
  EgressFault: 1,
  LinkFault: 2,
  ForwardFault: 3,
  UnknownOwnerForwardFault: 4,
  LinkDuplicate: 5,
} as const;

export const DestType = { Start: 0, End: 1, Link: 2 } as const;

export const PeerState = { Healthy: 0, Unhealthy: 1, Removed: 2 } as const;

/** Runtime settings for a router; keys are SettingTypes. */
export interface Settings {
  data: Map<number, Uint8Array>;
}
// controller/settings.go sends it as SettingsType.
export const Settings = defineMessage<Settings>(
  'ziti.ctrl.pb.Settings',
  { data: field.map(1, 'int32', 'bytes') },
  ContentType.SettingsType,
);

export interface CircuitRequest {
  ingressId: string;
  service: string;
  peerData: Map<number, Uint8Array>;
}
export const CircuitRequest = defineMessage<CircuitRequest>(
  'ziti.ctrl.pb.CircuitRequest',
  { ingressId: field.string(1), service: field.string(2), peerData: field.map(3, 'uint32', 'bytes') },
  ContentType.CircuitRequestType,
);

export interface CircuitConfirmation {
  circuitIds: string[];
  idleTimes: Map<string, bigint>;
}
export const CircuitConfirmation = defineMessage<CircuitConfirmation>(
  'ziti.ctrl.pb.CircuitConfirmation',
  { circuitIds: field.repeated(1, 'string'), idleTimes: field.map(2, 'string', 'int64') },
  ContentType.CircuitConfirmationType,
);

export interface CreateTerminatorRequest {
  serviceId: string;
  binding: string;
  address: string;
  peerData: Map<number, Uint8Array>;
  cost: number;
  /** TerminatorPrecedence */
  precedence: number;
  instanceId: string;
  instanceSecret: Uint8Array;
}
export const CreateTerminatorRequest = defineMessage<CreateTerminatorRequest>(
  'ziti.ctrl.pb.CreateTerminatorRequest',
  {
    serviceId: field.string(2),
    binding: field.string(3),
    address: field.string(4),
    peerData: field.map(5, 'uint32', 'bytes'),
    cost: field.uint32(6),
    precedence: field.enum(7),
    instanceId: field.string(8),
    instanceSecret: field.bytes(9),
  },
  ContentType.CreateTerminatorRequestType,
);

export interface RemoveTerminatorRequest {
  terminatorId: string;
}
export const RemoveTerminatorRequest = defineMessage<RemoveTerminatorRequest>(
  'ziti.ctrl.pb.RemoveTerminatorRequest',
  { terminatorId: field.string(1) },
  ContentType.RemoveTerminatorRequestType,
);

/** Answered with a channel Result (controller/handler_ctrl/remove_terminators.go). */
export interface RemoveTerminatorsRequest {
  terminatorIds: string[];
}
export const RemoveTerminatorsRequest = defineMessage<RemoveTerminatorsRequest>(
  'ziti.ctrl.pb.RemoveTerminatorsRequest',
  { terminatorIds: field.repeated(1, 'string') },
  ContentType.RemoveTerminatorsRequestType,
);

export interface Terminator {
  id: string;
  binding: string;
  address: string;
  marker: bigint;
}
export const Terminator = defineMessage<Terminator>('ziti.ctrl.pb.Terminator', {
  id: field.string(1),
  binding: field.string(2),
  address: field.string(3),
  marker: field.uint64(4),
});

export interface ValidateTerminatorsRequest {
  terminators: Terminator[];
}
export const ValidateTerminatorsRequest = defineMessage<ValidateTerminatorsRequest>(
  'ziti.ctrl.pb.ValidateTerminatorsRequest',
  { terminators: field.repeatedMessage(1, Terminator) },
  ContentType.ValidateTerminatorsRequestType,
);

export interface ValidateTerminatorsV2Request {
  terminators: Terminator[];
  fixInvalid: boolean;
}
export const ValidateTerminatorsV2Request = defineMessage<ValidateTerminatorsV2Request>(
  'ziti.ctrl.pb.ValidateTerminatorsV2Request',
  { terminators: field.repeatedMessage(1, Terminator), fixInvalid: field.bool(2) },
  ContentType.ValidateTerminatorsV2RequestType,
);

export interface RouterTerminatorState {
  valid: boolean;
  /** TerminatorInvalidReason */
  reason: number;
  detail: string;
  marker: bigint;
}
export const RouterTerminatorState = defineMessage<RouterTerminatorState>('ziti.ctrl.pb.RouterTerminatorState', {
  valid: field.bool(1),
  reason: field.enum(2),
  detail: field.string(3),
  marker: field.uint64(4),
});

export interface ValidateTerminatorsV2Response {
  states: Map<string, RouterTerminatorState>;
}
export const ValidateTerminatorsV2Response = defineMessage<ValidateTerminatorsV2Response>(
  'ziti.ctrl.pb.ValidateTerminatorsV2Response',
  { states: field.messageMap(1, 'string', RouterTerminatorState) },
  ContentType.ValidateTerminatorsV2ResponseType,
);

export interface UpdateTerminatorRequest {
  terminatorId: string;
  updatePrecedence: boolean;
  updateCost: boolean;
  /** TerminatorPrecedence */
  precedence: number;
  cost: number;
}
export const UpdateTerminatorRequest = defineMessage<UpdateTerminatorRequest>(
  'ziti.ctrl.pb.UpdateTerminatorRequest',
  {
    terminatorId: field.string(1),
    updatePrecedence: field.bool(2),
    updateCost: field.bool(3),
    precedence: field.enum(4),
    cost: field.uint32(5),
  },
  ContentType.UpdateTerminatorRequestType,
);

export interface Dial {
  linkId: string;
  address: string;
  routerId: string;
  linkProtocol: string;
  routerVersion: string;
}
export const Dial = defineMessage<Dial>(
  'ziti.ctrl.pb.Dial',
  {
    linkId: field.string(1),
    address: field.string(2),
    routerId: field.string(3),
    linkProtocol: field.string(4),
    routerVersion: field.string(5),
  },
  ContentType.DialType,
);

export interface LinkConn {
  id: string;
  localAddr: string;
  remoteAddr: string;
}
export const LinkConn = defineMessage<LinkConn>('ziti.ctrl.pb.LinkConn', {
  id: field.string(1),
  localAddr: field.string(2),
  remoteAddr: field.string(3),
});

export interface LinkConnected {
  id: string;
  conns: LinkConn[];
}
export const LinkConnected = defineMessage<LinkConnected>(
  'ziti.ctrl.pb.LinkConnected',
  { id: field.string(1), conns: field.repeatedMessage(2, LinkConn) },
  ContentType.LinkConnectedType,
);

/** ctrl.proto RouterLinks.RouterLink */
export interface RouterLink {
  id: string;
  destRouterId: string;
  linkProtocol: string;
  linkCostTags: string[];
  dialAddress: string;
  iteration: number;
}
export const RouterLink = defineMessage<RouterLink>('ziti.ctrl.pb.RouterLinks.RouterLink', {
  id: field.string(1),
  destRouterId: field.string(2),
  linkProtocol: field.string(3),
  linkCostTags: field.repeated(4, 'string'),
  dialAddress: field.string(5),
  iteration: field.uint32(6),
});

export interface RouterLinks {
  links: RouterLink[];
}
export const RouterLinks = defineMessage<RouterLinks>(
  'ziti.ctrl.pb.RouterLinks',
  { links: field.repeatedMessage(1, RouterLink) },
  ContentType.RouterLinksType,
);

export interface Fault {
  /** FaultSubject */
  subject: number;
  id: string;
  iteration: number;
}
export const Fault = defineMessage<Fault>(
  'ziti.ctrl.pb.Fault',
  { subject: field.enum(1), id: field.string(2), iteration: field.uint32(3) },
  ContentType.FaultType,
);

/** The log context the controller attaches to a Route (controller/network/network.go CreateCircuit). */
export interface Context {
  fields: Map<string, string>;
  channelMask: number;
}
export const Context = defineMessage<Context>('ziti.ctrl.pb.Context', {
  fields: field.map(1, 'string', 'string'),
  channelMask: field.uint32(2),
});

/** ctrl.proto Route.Egress */
export interface RouteEgress {
  binding: string;
  address: string;
  destination: string;
  peerData: Map<number, Uint8Array>;
}
export const RouteEgress = defineMessage<RouteEgress>('ziti.ctrl.pb.Route.Egress', {
  binding: field.string(1),
  address: field.string(2),
  destination: field.string(3),
  peerData: field.map(4, 'uint32', 'bytes'),
});

/** ctrl.proto Route.Forward */
export interface RouteForward {
  srcAddress: string;
  dstAddress: string;
  /** DestType */
  dstType: number;
}
export const RouteForward = defineMessage<RouteForward>('ziti.ctrl.pb.Route.Forward', {
  srcAddress: field.string(1),
  dstAddress: field.string(2),
  dstType: field.enum(3),
});

export interface Route {
  circuitId: string;
  attempt: number;
  egress?: RouteEgress;
  forwards: RouteForward[];
  context?: Context;
  /** Nanoseconds the router may spend dialing the egress (network_path.go: time left until the deadline). */
  timeout: bigint;
  tags: Map<string, string>;
}
export const Route = defineMessage<Route>(
  'ziti.ctrl.pb.Route',
  {
    circuitId: field.string(1),
    attempt: field.uint32(2),
    egress: field.message(3, RouteEgress),
    forwards: field.repeatedMessage(4, RouteForward),
    context: field.message(5, Context),
    timeout: field.uint64(6),
    tags: field.map(7, 'string', 'string'),
  },
  ContentType.RouteType,
);

export interface Unroute {
  circuitId: string;
  now: boolean;
}
export const Unroute = defineMessage<Unroute>(
  'ziti.ctrl.pb.Unroute',
  { circuitId: field.string(1), now: field.bool(2) },
  ContentType.UnrouteType,
);

export interface InspectRequest {
  requestedValues: string[];
}
export const InspectRequest = defineMessage<InspectRequest>(
  'ziti.ctrl.pb.InspectRequest',
  { requestedValues: field.repeated(1, 'string') },
  ContentType.InspectRequestType,
);

/** ctrl.proto InspectResponse.InspectValue */
export interface InspectValue {
  name: string;
  value: string;
}
export const InspectValue = defineMessage<InspectValue>('ziti.ctrl.pb.InspectResponse.InspectValue', {
  name: field.string(1),
  value: field.string(2),
});

export interface InspectResponse {
  success: boolean;
  errors: string[];
  values: InspectValue[];
}
export const InspectResponse = defineMessage<InspectResponse>(
  'ziti.ctrl.pb.InspectResponse',
  { success: field.bool(1), errors: field.repeated(2, 'string'), values: field.repeatedMessage(3, InspectValue) },
  ContentType.InspectResponseType,
);

export interface VerifyRouter {
  routerId: string;
  fingerprints: string[];
}
export const VerifyRouter = defineMessage<VerifyRouter>(
  'ziti.ctrl.pb.VerifyRouter',
  { routerId: field.string(1), fingerprints: field.repeated(2, 'string') },
  ContentType.VerifyRouterType,
);

/** A router's link listener, advertised in hello header 10 (router/router.go connectToController). */
export interface Listener {
  address: string;
  protocol: string;
  costTags: string[];
  groups: string[];
  localBinding: string;
}
export const Listener = defineMessage<Listener>('ziti.ctrl.pb.Listener', {
  address: field.string(1),
  protocol: field.string(2),
  costTags: field.repeated(3, 'string'),
  groups: field.repeated(4, 'string'),
  localBinding: field.string(5),
});

export interface Listeners {
  listeners: Listener[];
}
export const Listeners = defineMessage<Listeners>('ziti.ctrl.pb.Listeners', {
  listeners: field.repeatedMessage(1, Listener),
});

export interface UpdateCtrlAddresses {
  addresses: string[];
  index: bigint;
  isLeader: boolean;
}
export const UpdateCtrlAddresses = defineMessage<UpdateCtrlAddresses>(
  'ziti.ctrl.pb.UpdateCtrlAddresses',
  { addresses: field.repeated(1, 'string'), index: field.uint64(2), isLeader: field.bool(3) },
  ContentType.UpdateCtrlAddressesType,
);

export interface PeerStateChange {
  id: string;
  version: string;
  /** PeerState */
  state: number;
  listeners: Listener[];
}
export const PeerStateChange = defineMessage<PeerStateChange>('ziti.ctrl.pb.PeerStateChange', {
  id: field.string(1),
  version: field.string(2),
  state: field.enum(3),
  listeners: field.repeatedMessage(4, Listener),
});

export interface PeerStateChanges {
  changes: PeerStateChange[];
}
export const PeerStateChanges = defineMessage<PeerStateChanges>(
  'ziti.ctrl.pb.PeerStateChanges',
  { changes: field.repeatedMessage(1, PeerStateChange) },
  ContentType.PeerStateChangeRequestType,
);

/** Hello header 11 (router/router.go connectToController). */
export interface RouterMetadata {
  /** RouterCapability values (packed). */
  capabilities: number[];
}
export const RouterMetadata = defineMessage<RouterMetadata>('ziti.ctrl.pb.RouterMetadata', {
  capabilities: field.repeated(1, 'enum'),
});

/** The part of a router's metrics (metrics_pb.MetricsMessage, type 1007) the controller reads: its histograms' means. */
export interface MetricsHistogram {
  count: bigint;
  mean: number;
}
export const MetricsHistogram = defineMessage<MetricsHistogram>('ziti.metrics.pb.MetricsMessage.Histogram', {
  count: field.int64(1),
  mean: field.scalar(3, 'double'),
});
export interface MetricsMessage {
  sourceId: string;
  histograms: Map<string, MetricsHistogram>;
}
export const MetricsMessage = defineMessage<MetricsMessage>(
  'ziti.metrics.pb.MetricsMessage',
  { sourceId: field.string(2), histograms: field.messageMap(8, 'string', MetricsHistogram) },
  ContentType.MetricsType,
);
