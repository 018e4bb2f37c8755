/**
 * The headers-only messages of ziti v1.1.9 `common/ctrl_msg/messages.go`: CreateCircuitV2 request and response,
 * RouteResult, and the edge ErrorType reply the session handlers send (`controller/handler_edge_ctrl/common.go`).
 */
import { EMPTY_BYTES, fromUtf8, utf8 } from '../bytes.ts';
import { ChannelProtocolError } from '../errors.ts';
import { createMessage, replyTo, type ChannelMessage } from '../frame.ts';
import {
  boolHeader,
  byteHeader,
  getHeader,
  setHeader,
  stringHeader,
  stringMapHeader,
  stringSliceHeader,
  u32BytesMapHeader,
  uint32Header,
} from '../headers.ts';
import { ContentType as EdgeContentType, EdgeHeader } from './edge.ts';

// ctrl_msg/messages.go: content types defined outside ctrl.proto.
export const CtrlMsgContentType = {
  CircuitSuccessType: 1001,
  CircuitFailedType: 1016,
  RouteResultType: 1022,
} as const;

// ctrl_msg/messages.go header keys. CreateCircuit request and response reuse 11-13 with different meanings.
export const CtrlMsgHeader = {
  CircuitSuccessAddress: 1100,
  RouteResultAttempt: 1101,
  RouteResultSuccess: 1102,
  RouteResultError: 1103,
  RouteResultErrorCode: 1104,
  TerminatorLocalAddress: 1110,
  TerminatorRemoteAddress: 1111,
  InitiatorLocalAddress: 1112,
  InitiatorRemoteAddress: 1113,
  XtStickinessToken: 1114,
  CreateCircuitPeerData: 10,
  CreateCircuitReqSessionToken: 11,
  CreateCircuitReqFingerprints: 12,
  CreateCircuitReqTerminatorInstanceId: 13,
  CreateCircuitReqApiSessionToken: 14,
  CreateCircuitRespCircuitId: 11,
  CreateCircuitRespAddress: 12,
  CreateCircuitRespTags: 13,
} as const;

// ctrl_msg/messages.go ErrorType*: the byte in RouteResultErrorCode.
export const RouteErrorType = {
  Generic: 0,
  InvalidTerminator: 1,
  MisconfiguredTerminator: 2,
  DialTimedOut: 3,
  ConnectionRefused: 4,
} as const;

function expectContentType(msg: ChannelMessage, contentType: number, what: string): void {
  if (msg.contentType !== contentType) {
    throw new ChannelProtocolError(
      'unexpected-content-type',
      `expected ${what} (${contentType}), got ${msg.contentType}`,
    );
  }
}

/** ctrl_msg CreateCircuitRequest: what the router asks when an SDK dials (router/xgress_edge/listener.go). */
export interface CreateCircuitV2Request {
  sessionToken: string;
  apiSessionToken: string;
  /** sha1 hex (lowercase, no separators) of each certificate the SDK presented, in Go map order. */
  fingerprints: string[];
  terminatorInstanceId: string;
  /** Keyed by edge header (EdgeHeader.PublicKey 1003, CallerId 1008, AppData 1011, …) or XtStickinessToken 1114. */
  peerData: Map<number, Uint8Array>;
}

/** ctrl_msg ToMessage: all five headers are always present, even when empty. */
export function encodeCreateCircuitV2Request(req: CreateCircuitV2Request): ChannelMessage {
  const msg = createMessage(EdgeContentType.CreateCircuitV2RequestType);
  setHeader(msg, CtrlMsgHeader.CreateCircuitReqSessionToken, stringHeader, req.sessionToken);
  setHeader(msg, CtrlMsgHeader.CreateCircuitReqApiSessionToken, stringHeader, req.apiSessionToken);
  setHeader(msg, CtrlMsgHeader.CreateCircuitReqFingerprints, stringSliceHeader, req.fingerprints);
  setHeader(msg, CtrlMsgHeader.CreateCircuitReqTerminatorInstanceId, stringHeader, req.terminatorInstanceId);
  setHeader(msg, CtrlMsgHeader.CreateCircuitPeerData, u32BytesMapHeader, req.peerData);
  return msg;
}

/** ctrl_msg DecodeCreateCircuitRequest: the session token is required; every other header may be absent. */
export function decodeCreateCircuitV2Request(msg: ChannelMessage): CreateCircuitV2Request {
  expectContentType(msg, EdgeContentType.CreateCircuitV2RequestType, 'CreateCircuitV2Request');
  const sessionToken = getHeader(msg, CtrlMsgHeader.CreateCircuitReqSessionToken, stringHeader) ?? '';
  if (sessionToken === '') {
    throw new ChannelProtocolError('missing-header', 'no session token provided in create circuit request');
  }
  return {
    sessionToken,
    apiSessionToken: getHeader(msg, CtrlMsgHeader.CreateCircuitReqApiSessionToken, stringHeader) ?? '',
    fingerprints: getHeader(msg, CtrlMsgHeader.CreateCircuitReqFingerprints, stringSliceHeader) ?? [],
    terminatorInstanceId: getHeader(msg, CtrlMsgHeader.CreateCircuitReqTerminatorInstanceId, stringHeader) ?? '',
    peerData: getHeader(msg, CtrlMsgHeader.CreateCircuitPeerData, u32BytesMapHeader) ?? new Map(),
  };
}

/** ctrl_msg CreateCircuitResponse (handler_edge_ctrl/create_circuit.go CreateCircuitV2Response). */
export interface CreateCircuitV2Response {
  circuitId: string;
  /** The path's ingress id. */
  address: string;
  /** The terminator's static peer data overlaid with what the egress router returned in its RouteResult. */
  peerData: Map<number, Uint8Array>;
  /** Circuit tags: serviceId, clientId, hostId (handler_edge_ctrl/common.go GetCircuitTags). */
  tags: Map<string, string>;
}

/** A reply: pass the request so replyFor and its reflected headers are set. All four headers are always present. */
export function encodeCreateCircuitV2Response(res: CreateCircuitV2Response, request?: ChannelMessage): ChannelMessage {
  const msg = createMessage(EdgeContentType.CreateCircuitV2ResponseType);
  setHeader(msg, CtrlMsgHeader.CreateCircuitRespCircuitId, stringHeader, res.circuitId);
  setHeader(msg, CtrlMsgHeader.CreateCircuitRespAddress, stringHeader, res.address);
  setHeader(msg, CtrlMsgHeader.CreateCircuitPeerData, u32BytesMapHeader, res.peerData);
  setHeader(msg, CtrlMsgHeader.CreateCircuitRespTags, stringMapHeader, res.tags);
  return request ? replyTo(msg, request) : msg;
}

export function decodeCreateCircuitV2Response(msg: ChannelMessage): CreateCircuitV2Response {
  expectContentType(msg, EdgeContentType.CreateCircuitV2ResponseType, 'CreateCircuitV2Response');
  return {
    circuitId: getHeader(msg, CtrlMsgHeader.CreateCircuitRespCircuitId, stringHeader) ?? '',
    address: getHeader(msg, CtrlMsgHeader.CreateCircuitRespAddress, stringHeader) ?? '',
    peerData: getHeader(msg, CtrlMsgHeader.CreateCircuitPeerData, u32BytesMapHeader) ?? new Map(),
    tags: getHeader(msg, CtrlMsgHeader.CreateCircuitRespTags, stringMapHeader) ?? new Map(),
  };
}

/** A router's answer to Route (router/handler_ctrl/route.go completeRoute / fail). */
export interface RouteResult {
  /** The body. */
  circuitId: string;
  attempt: number;
  success: boolean;
  /** Header 1103, on failure. */
  error?: string;
  /** Header 1104 (`RouteErrorType`), on failure. */
  errorCode?: number;
  /** Egress peer data (e.g. the host's public key, 1003), one header per key with the raw value. */
  peerData: Map<number, Uint8Array>;
}

/**
 * Which headers of a RouteResult are peer data. The reference (controller/handler_ctrl/route_result.go) takes every
 * key > 0 outside 1102-1104, so replyFor, heartbeats, reflected headers and the attempt header leak into it; here
 * only keys from 256 up, outside 1101-1104, count. Every peer data key routers set (1003, 1008, 1011, 1025,
 * 1110-1114) is in that range.
 */
export function isRouteResultPeerDataKey(key: number): boolean {
  return key >= 256 && (key < CtrlMsgHeader.RouteResultAttempt || key > CtrlMsgHeader.RouteResultErrorCode);
}

export function encodeRouteResult(result: RouteResult, request?: ChannelMessage): ChannelMessage {
  const msg = createMessage(CtrlMsgContentType.RouteResultType, utf8(result.circuitId));
  setHeader(msg, CtrlMsgHeader.RouteResultAttempt, uint32Header, result.attempt);
  if (result.success) setHeader(msg, CtrlMsgHeader.RouteResultSuccess, boolHeader, true);
  if (result.error !== undefined) setHeader(msg, CtrlMsgHeader.RouteResultError, stringHeader, result.error);
  if (result.errorCode !== undefined) {
    setHeader(msg, CtrlMsgHeader.RouteResultErrorCode, byteHeader, result.errorCode);
  }
  for (const [key, value] of result.peerData) {
    if (!isRouteResultPeerDataKey(key)) {
      throw new ChannelProtocolError('invalid-message', `peer data key ${key} collides with a reserved header`);
    }
    msg.headers.set(key, value);
  }
  return request ? replyTo(msg, request) : msg;
}

/**
 * route_result.go handleRouteResult: the attempt header is required (a uint32); success is the mere presence of
 * header 1102, whatever its value; an empty 1104 reads as code 0, as GetByteHeader does.
 */
export function decodeRouteResult(msg: ChannelMessage): RouteResult {
  expectContentType(msg, CtrlMsgContentType.RouteResultType, 'RouteResult');
  const attemptBytes = msg.headers.get(CtrlMsgHeader.RouteResultAttempt);
  if (attemptBytes === undefined) throw new ChannelProtocolError('missing-header', 'attempt header in route result');
  const out: RouteResult = {
    circuitId: fromUtf8(msg.body),
    attempt: uint32Header.decode(attemptBytes),
    success: msg.headers.has(CtrlMsgHeader.RouteResultSuccess),
    peerData: new Map(),
  };
  const error = getHeader(msg, CtrlMsgHeader.RouteResultError, stringHeader);
  if (error !== undefined) out.error = error;
  const code = msg.headers.get(CtrlMsgHeader.RouteResultErrorCode);
  if (code !== undefined) out.errorCode = code.length > 0 ? code[0]! : 0;
  for (const [key, value] of msg.headers) if (isRouteResultPeerDataKey(key)) out.peerData.set(key, value);
  return out;
}

/** The edge ErrorType reply: body = the message, header 1014 = an `EdgeErrorCode`. */
export interface EdgeErrorReply {
  message: string;
  errorCode?: number;
}

export function encodeEdgeError(error: EdgeErrorReply, request?: ChannelMessage): ChannelMessage {
  const msg = createMessage(EdgeContentType.ErrorType, error.message ? utf8(error.message) : EMPTY_BYTES);
  if (error.errorCode !== undefined) setHeader(msg, EdgeHeader.ErrorCode, uint32Header, error.errorCode);
  return request ? replyTo(msg, request) : msg;
}

export function decodeEdgeError(msg: ChannelMessage): EdgeErrorReply {
  expectContentType(msg, EdgeContentType.ErrorType, 'ErrorType');
  const out: EdgeErrorReply = { message: fromUtf8(msg.body) };
  const errorCode = getHeader(msg, EdgeHeader.ErrorCode, uint32Header);
  if (errorCode !== undefined) out.errorCode = errorCode;
  return out;
}
