/**
 * The channel's own messages and the control-channel handshake: Hello and its Result (channel `messages.go`,
 * `classic_listener.go` ackHello, ziti `controller/controller.go` Run, `controller/handler_ctrl/accept.go` Bind,
 * `router/env/ctrls.go` Add), Result, Ping and Heartbeat (channel `heartbeater.go`).
 */
import { EMPTY_BYTES, fromUtf8, utf8 } from '../bytes.ts';
import { ChannelProtocolError } from '../errors.ts';
import { createMessage, HELLO_SEQUENCE, replyTo, type ChannelMessage } from '../frame.ts';
import {
  boolHeader,
  capabilitiesHeader,
  ChannelContentType,
  ChannelHeader,
  ControlHeader,
  getHeader,
  requireHeader,
  ResultHeader,
  setHeader,
  stringHeader,
  uint32Header,
  uint64Header,
  versionHeader,
  type VersionInfo,
} from '../headers.ts';
import { Listeners, RouterMetadata, type Listener } from './ctrl.ts';
import type { DecodeOptions } from './schema.ts';

function expectContentType(msg: ChannelMessage, contentType: number, what: string): void {
  if (msg.contentType !== contentType) {
    throw new ChannelProtocolError(
      'unexpected-content-type',
      `expected ${what} (${contentType}), got ${msg.contentType}`,
    );
  }
}

/** channel messages.go UnmarshalHello: the body is the dialer's id token, the headers its attributes. */
export interface Hello {
  id: string;
  headers: Map<number, Uint8Array>;
}

export function decodeHello(msg: ChannelMessage): Hello {
  expectContentType(msg, ChannelContentType.Hello, 'Hello');
  return { id: fromUtf8(msg.body), headers: msg.headers };
}

/** What a router's hello says (router/router.go connectToController, read back in handler_ctrl/accept.go). */
export interface RouterHello {
  /** The body: the router id, which must equal its certificate's CN (handler_ctrl/connect.go). */
  routerId: string;
  version: VersionInfo;
  /** Link listeners (header 10); empty when the router advertises none. */
  listeners: Listener[];
  /** Header 11, when present. */
  metadata?: RouterMetadata;
  headers: Map<number, Uint8Array>;
}

/**
 * Decodes a router's hello. The version header is required (accept.go refuses a router without one); the reference
 * only logs undecodable listeners or metadata, here they are errors like any other malformed input.
 */
export function decodeRouterHello(msg: ChannelMessage, options?: DecodeOptions): RouterHello {
  const hello = decodeHello(msg);
  const version = requireHeader(msg, ChannelHeader.HelloVersion, versionHeader);
  const listenersBytes = msg.headers.get(ControlHeader.Listeners);
  const metadataBytes = msg.headers.get(ControlHeader.RouterMetadata);
  const out: RouterHello = {
    routerId: hello.id,
    version,
    listeners: listenersBytes ? Listeners.decode(listenersBytes, options).listeners : [],
    headers: msg.headers,
  };
  if (metadataBytes) out.metadata = RouterMetadata.decode(metadataBytes, options);
  return out;
}

export interface RouterHelloInit {
  routerId: string;
  version: VersionInfo;
  listeners?: Listener[];
  metadata?: RouterMetadata;
}

/** A router's hello, as router.go builds it (listeners only when there are some); for tests and simulators. */
export function createRouterHello(init: RouterHelloInit): ChannelMessage {
  const msg = createMessage(ChannelContentType.Hello, utf8(init.routerId), { sequence: HELLO_SEQUENCE });
  setHeader(msg, ChannelHeader.HelloVersion, versionHeader, init.version);
  if (init.listeners && init.listeners.length > 0) {
    msg.headers.set(ControlHeader.Listeners, Listeners.encode({ listeners: init.listeners }));
  }
  if (init.metadata) msg.headers.set(ControlHeader.RouterMetadata, RouterMetadata.encode(init.metadata));
  return msg;
}

export interface HelloResultInit {
  /** Header 0: the listener's id for this connection (classic_listener.go ackHello). */
  connectionId: string;
  /** Header 8: the controller's id (its identity token). */
  controllerId: string;
  /** Header 4: required by the router (router/env/ctrls.go Add refuses an answer without it). */
  version: VersionInfo;
  /** Header 12; `ControllerCapability` bits. Omitted entirely when undefined (the router then uses V1 messages). */
  capabilities?: Iterable<number>;
  success?: boolean;
  message?: string;
}

/**
 * The controller's answer to a router hello: a Result with sequence −1 replying to the hello's sequence (−1), with
 * the listener headers (version, capabilities), the connection id and the controller id.
 */
export function createHelloResult(hello: ChannelMessage, init: HelloResultInit): ChannelMessage {
  const msg = createResult(init.success ?? true, init.message ?? '');
  setHeader(msg, ChannelHeader.HelloVersion, versionHeader, init.version);
  if (init.capabilities !== undefined) {
    setHeader(msg, ControlHeader.Capabilities, capabilitiesHeader, new Set(init.capabilities));
  }
  setHeader(msg, ChannelHeader.ConnectionId, stringHeader, init.connectionId);
  setHeader(msg, ChannelHeader.Id, stringHeader, init.controllerId);
  msg.sequence = HELLO_SEQUENCE;
  return replyTo(msg, hello);
}

export interface HelloResult {
  success: boolean;
  message: string;
  connectionId: string;
  controllerId?: string;
  version?: VersionInfo;
  capabilities: Set<number>;
}

/** Reads a hello answer as the dialer does (classic_dialer.go sendHello, router/env/ctrls.go Add). */
export function decodeHelloResult(msg: ChannelMessage): HelloResult {
  const result = decodeResult(msg);
  // message.go cacheReplyFor: no header 1 reads as −1, so it too "replies" to the hello.
  if (msg.replyFor !== undefined && msg.replyFor !== HELLO_SEQUENCE) {
    throw new ChannelProtocolError('unexpected-content-type', `hello answer replies to ${String(msg.replyFor)}`);
  }
  const out: HelloResult = {
    success: result.success,
    message: result.message,
    connectionId: getHeader(msg, ChannelHeader.ConnectionId, stringHeader) ?? '',
    capabilities: getHeader(msg, ControlHeader.Capabilities, capabilitiesHeader) ?? new Set(),
  };
  const controllerId = getHeader(msg, ChannelHeader.Id, stringHeader);
  if (controllerId !== undefined) out.controllerId = controllerId;
  const version = getHeader(msg, ChannelHeader.HelloVersion, versionHeader);
  if (version !== undefined) out.version = version;
  return out;
}

/** channel messages.go NewResult: header 2 = success, body = the message. */
export function createResult(success: boolean, message = '', request?: ChannelMessage): ChannelMessage {
  const msg = createMessage(ChannelContentType.Result, message ? utf8(message) : EMPTY_BYTES);
  setHeader(msg, ResultHeader.Success, boolHeader, success);
  return request ? replyTo(msg, request) : msg;
}

export interface Result {
  success: boolean;
  message: string;
  /** Header 10 (ctrl_msg HeaderResultErrorCode): `ResultErrorCode.RateLimited` when the peer was too busy. */
  errorCode?: number;
}

export function decodeResult(msg: ChannelMessage): Result {
  expectContentType(msg, ChannelContentType.Result, 'Result');
  const out: Result = {
    success: getHeader(msg, ResultHeader.Success, boolHeader) ?? false,
    message: fromUtf8(msg.body),
  };
  const errorCode = getHeader(msg, ResultHeader.ErrorCode, uint32Header);
  if (errorCode !== undefined) out.errorCode = errorCode;
  return out;
}

/** The controller's answer to a Ping: a successful Result "ok" (controller/handler_ctrl/ping.go). */
export function createPingReply(ping: ChannelMessage): ChannelMessage {
  expectContentType(ping, ChannelContentType.Ping, 'Ping');
  return createResult(true, 'ok', ping);
}

/** A standalone heartbeat (heartbeater.go sendHeartbeat): content type 5, no body; timestamps ride in headers. */
export function createHeartbeat(): ChannelMessage {
  return createMessage(ChannelContentType.Heartbeat);
}

/** Header 5, a uint64 of the sender's UnixNano, on any message (heartbeater.go Tx). */
export function getHeartbeat(msg: ChannelMessage): bigint | undefined {
  return getHeader(msg, ChannelHeader.Heartbeat, uint64Header);
}

export function setHeartbeat(msg: ChannelMessage, timestampNs: bigint): void {
  setHeader(msg, ChannelHeader.Heartbeat, uint64Header, BigInt.asUintN(64, timestampNs));
}

/** Header 6: the echo of the peer's last heartbeat timestamp. */
export function getHeartbeatResponse(msg: ChannelMessage): bigint | undefined {
  return getHeader(msg, ChannelHeader.HeartbeatResponse, uint64Header);
}

export function setHeartbeatResponse(msg: ChannelMessage, timestampNs: bigint): void {
  setHeader(msg, ChannelHeader.HeartbeatResponse, uint64Header, BigInt.asUintN(64, timestampNs));
}
