/**
 * A simulated OpenZiti 1.1.9 edge router: the control channel only, built on `@ziti/channel`. It
 * dials the controller's control endpoint over TLS with a router's enrolled client certificate
 * (ALPN `ziti-ctrl`), says hello as `router/router.go connectToController` does (router id, version
 * `v1.1.9|…|linux|amd64`, RouterMetadata), reads the hello's Result, answers the edge ServerHello
 * with a ClientHello (an edge listener it advertises but does not open), keeps the API sessions it is
 * told of, answers Ping, latency probes and heartbeats, answers every `Route` at once with a
 * successful RouteResult (as if the hosting SDK had accepted the circuit) and `ValidateTerminatorsV2`
 * with the terminators it bound. What a hosting or dialling SDK would make the router ask, it offers
 * as calls: `bind` (CreateTerminatorV2), `dial` (CreateCircuitV2), `fault` (a circuit ended) and
 * `removeTerminators`, request/reply by sequence, any number in flight.
 *
 * A load generator for benchmarks (bench/circuits.ts; issue 34 runs many of them at once): nothing
 * here is checked against the reference byte for byte beyond what `@ziti/channel` is; correctness
 * with a real router is proven by test/e2e/routers-*.test.ts. It opens no listener.
 */
import { randomUUID } from 'node:crypto';
import { type TLSSocket, connect as tlsConnect } from 'node:tls';
import {
  ChannelContentType,
  ChannelHeader,
  type ChannelMessage,
  FrameDecoder,
  HELLO_SEQUENCE,
  type HelloResult,
  type VersionInfo,
  createHeartbeat,
  createMessage,
  createResult,
  createRouterHello,
  ctrl,
  decodeCreateCircuitV2Response,
  decodeEdgeError,
  decodeHelloResult,
  decodeProtoMessage,
  decodeResult,
  edge,
  encodeCreateCircuitV2Request,
  encodeMessage,
  encodeRouteResult,
  getHeartbeat,
  protoMessage,
  replyTo,
  setHeartbeat,
  setHeartbeatResponse,
} from '@ziti/channel';

/** The router's enrolled identity: PEM client certificate (chain), its key, and the CA bundle it trusts. */
export interface SimRouterIdentity {
  cert: string;
  key: string;
  ca: string;
}

/** What the simulated router answers to a Route: success (with peer data, e.g. 1003), or a failure. */
export type RouteAnswer =
  { success: true; peerData?: Map<number, Uint8Array> } | { success: false; error: string; errorCode?: number };

export interface SimRouterOptions {
  /** The router's id: its certificate's CN, the hello's body. */
  routerId: string;
  /** The controller's control endpoint (`ctrl.endpoint` without `tls:`). */
  host: string;
  port: number;
  identity: SimRouterIdentity;
  /** The name the controller's server certificate must carry (default `localhost`). */
  servername?: string;
  /** Sent in hello header 4 (default v1.1.9 on linux/amd64). */
  version?: VersionInfo;
  /** The edge listener it advertises in its ClientHello (default 127.0.0.1:3022; nothing listens there). */
  edgeListener?: { hostname: string; port: number };
  /** Link listeners for hello header 10 (default none: a private router). */
  linkListeners?: ctrl.Listener[];
  /** Deadline of each request (bind, dial, removal) (default 30 s). */
  requestTimeoutMs?: number;
  /** Deadline of TLS, hello and edge hello (default 20 s). */
  connectTimeoutMs?: number;
  /** Its own heartbeats (header 5), as a 1.1.9 router sends them (default 10 s). */
  heartbeatIntervalMs?: number;
  /** How a Route is answered (default: success with no peer data). */
  route?: (route: ctrl.Route) => RouteAnswer;
}

export interface BindRequest {
  /** The terminator id the router chose (its address); default a new UUID, as the router's `idgen`. */
  terminatorId?: string;
  /** The Bind edge session's token. */
  sessionToken: string;
  /** The hosting SDK's API session token (a 1.1.9 router outside HA mode leaves it empty). */
  apiSessionToken?: string;
  /** sha1 hex of each certificate the hosting SDK presented. */
  fingerprints: string[];
  peerData?: Map<number, Uint8Array>;
  cost?: number;
  /** `edge.TerminatorPrecedence` (default Default). */
  precedence?: number;
  instanceId?: string;
  instanceSecret?: Uint8Array;
}

export type BindResult =
  { ok: true; terminatorId: string } | { ok: false; terminatorId: string; result?: number; message: string };

export interface DialRequest {
  /** The Dial edge session's token. */
  sessionToken: string;
  apiSessionToken: string;
  /** sha1 hex of each certificate the dialling SDK presented. */
  fingerprints: string[];
  terminatorInstanceId?: string;
  /** The dialler's peer data (1003: its public key when the service requires encryption). */
  peerData?: Map<number, Uint8Array>;
}

export type DialResult =
  | { ok: true; circuitId: string; address: string; peerData: Map<number, Uint8Array>; tags: Map<string, string> }
  | { ok: false; message: string; errorCode?: number };

export interface SimRouterStats {
  messagesIn: number;
  messagesOut: number;
  routes: number;
  routesFailed: number;
  unroutes: number;
  pings: number;
  heartbeatsEchoed: number;
  latencyProbes: number;
  terminatorValidations: number;
  /** Terminators a validation asked about that it did not hold (reported invalid). */
  terminatorsReportedUnknown: number;
  apiSessionMessages: number;
  fullSyncs: number;
  /** Content types it took and had nothing to do with, with their counts. */
  unhandled: Record<number, number>;
}

interface Waiting {
  resolve(msg: ChannelMessage): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

export const simRouterVersion: VersionInfo = {
  version: 'v1.1.9',
  revision: 'simulated',
  buildDate: '2024-08-01T00:00:00Z',
  os: 'linux',
  arch: 'amd64',
};

/** Thrown by requests once the channel is closed, and by `connect` when the controller refuses the router. */
export class SimRouterError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SimRouterError';
  }
}

export class SimRouter {
  readonly stats: SimRouterStats = {
    messagesIn: 0,
    messagesOut: 0,
    routes: 0,
    routesFailed: 0,
    unroutes: 0,
    pings: 0,
    heartbeatsEchoed: 0,
    latencyProbes: 0,
    terminatorValidations: 0,
    terminatorsReportedUnknown: 0,
    apiSessionMessages: 0,
    fullSyncs: 0,
    unhandled: {},
  };
  /** API sessions the controller told it of, by token. */
  readonly apiSessions = new Map<string, edge.ApiSession>();
  /** Terminators it holds: asked for (or created) and not removed (what it answers ValidateTerminatorsV2 with). */
  readonly terminators = new Set<string>();
  /** The controller's answer to the hello. */
  helloResult?: HelloResult;

  private readonly decoder = new FrameDecoder();
  private readonly waiting = new Map<number, Waiting>();
  private nextSequence = 1;
  private heartbeatTimer?: NodeJS.Timeout;
  private closeReason?: string;
  private readonly closedPromise: Promise<string>;
  private resolveClosed!: (reason: string) => void;
  private helloWaiter?: { resolve(msg: ChannelMessage): void };
  private edgeHelloWaiter?: () => void;
  private syncWaiters: (() => void)[] = [];
  private syncedOnce = false;

  private constructor(
    readonly options: SimRouterOptions,
    private readonly socket: TLSSocket,
  ) {
    this.closedPromise = new Promise((resolve) => (this.resolveClosed = resolve));
    socket.on('data', (chunk: Buffer) => this.received(chunk));
    socket.on('end', () => this.close('the controller closed the connection'));
    socket.on('close', () => this.close('the connection closed'));
    socket.on('error', (err) => this.close(`connection error: ${err.message}`));
  }

  /**
   * Connects, says hello, and resolves once the controller admitted it and the edge hellos were
   * exchanged (the router is then online). Throws a SimRouterError naming why it was refused.
   */
  static async connect(options: SimRouterOptions): Promise<SimRouter> {
    const timeoutMs = options.connectTimeoutMs ?? 20_000;
    const socket = tlsConnect({
      host: options.host,
      port: options.port,
      servername: options.servername ?? 'localhost',
      cert: options.identity.cert,
      key: options.identity.key,
      ca: options.identity.ca,
      ALPNProtocols: ['ziti-ctrl'],
    });
    socket.setNoDelay(true);
    const router = new SimRouter(options, socket);
    const within = <T>(what: string, work: Promise<T>): Promise<T> => {
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new SimRouterError(`${what}: no answer in ${timeoutMs} ms`)), timeoutMs);
      });
      const closed = router.closedPromise.then((reason) => {
        throw new SimRouterError(`${what}: ${reason}`);
      });
      return Promise.race([work, deadline, closed]).finally(() => clearTimeout(timer));
    };
    try {
      await within(
        'TLS to the control endpoint',
        new Promise<void>((resolve) => socket.once('secureConnect', () => resolve())),
      );
      const helloAnswer = new Promise<ChannelMessage>((resolve) => (router.helloWaiter = { resolve }));
      const edgeHello = new Promise<void>((resolve) => (router.edgeHelloWaiter = resolve));
      router.write(
        createRouterHello({
          routerId: options.routerId,
          version: options.version ?? simRouterVersion,
          ...(options.linkListeners ? { listeners: options.linkListeners } : {}),
          metadata: { capabilities: [ctrl.RouterCapability.LinkManagement] },
        }),
      );
      const result = decodeHelloResult(await within('the hello', helloAnswer));
      router.helloResult = result;
      if (!result.success) throw new SimRouterError(`the controller refused the hello: ${result.message}`);
      router.heartbeatTimer = setInterval(() => router.heartbeat(), options.heartbeatIntervalMs ?? 10_000);
      router.heartbeatTimer.unref();
      await within('the edge ServerHello', edgeHello);
      return router;
    } catch (err) {
      router.close(err instanceof Error ? err.message : String(err));
      throw err;
    }
  }

  get closed(): boolean {
    return this.closeReason !== undefined;
  }

  /** Resolves with the reason once the channel closed. */
  get whenClosed(): Promise<string> {
    return this.closedPromise;
  }

  /** Resolves once a full API-session synchronisation reached its last chunk (at once if one did). */
  whenSynced(timeoutMs = 20_000): Promise<void> {
    if (this.syncedOnce) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new SimRouterError(`no full API-session sync in ${timeoutMs} ms`)),
        timeoutMs,
      );
      this.syncWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /** A hosting SDK bound a service through this router: CreateTerminatorV2Request, answered by 20217. */
  async bind(req: BindRequest): Promise<BindResult> {
    const terminatorId = req.terminatorId ?? randomUUID();
    const msg = protoMessage(edge.CreateTerminatorV2Request, {
      address: terminatorId,
      sessionToken: req.sessionToken,
      fingerprints: req.fingerprints,
      peerData: req.peerData ?? new Map(),
      cost: req.cost ?? 0,
      precedence: req.precedence ?? edge.TerminatorPrecedence.Default,
      instanceId: req.instanceId ?? '',
      instanceSecret: req.instanceSecret ?? new Uint8Array(0),
      apiSessionToken: req.apiSessionToken ?? '',
    });
    // A router holds the terminator (its hosted service) before it asks, so a validation that comes
    // before the answer (the reference validates every new terminator at once) finds it.
    this.terminators.add(terminatorId);
    let reply: ChannelMessage;
    try {
      reply = await this.request(msg);
    } catch (err) {
      this.terminators.delete(terminatorId);
      throw err;
    }
    if (reply.contentType === edge.ContentType.ErrorType) {
      this.terminators.delete(terminatorId);
      return { ok: false, terminatorId, message: decodeEdgeError(reply).message };
    }
    const res = decodeProtoMessage(edge.CreateTerminatorV2Response, reply);
    if (res.result !== edge.CreateTerminatorResult.Success) {
      this.terminators.delete(terminatorId);
      return { ok: false, terminatorId: res.terminatorId || terminatorId, result: res.result, message: res.msg };
    }
    return { ok: true, terminatorId: res.terminatorId };
  }

  /** A client dialled a service through this router: CreateCircuitV2 (headers only), answered by 20219 or 20002. */
  async dial(req: DialRequest): Promise<DialResult> {
    const msg = encodeCreateCircuitV2Request({
      sessionToken: req.sessionToken,
      apiSessionToken: req.apiSessionToken,
      fingerprints: req.fingerprints,
      terminatorInstanceId: req.terminatorInstanceId ?? '',
      peerData: req.peerData ?? new Map(),
    });
    const reply = await this.request(msg);
    if (reply.contentType === edge.ContentType.ErrorType) {
      const e = decodeEdgeError(reply);
      return { ok: false, message: e.message, ...(e.errorCode !== undefined ? { errorCode: e.errorCode } : {}) };
    }
    const res = decodeCreateCircuitV2Response(reply);
    return { ok: true, circuitId: res.circuitId, address: res.address, peerData: res.peerData, tags: res.tags };
  }

  /** A circuit ended at this router's edge (the SDK closed): Fault, as the router reports it. No answer. */
  fault(circuitId: string, subject: number = ctrl.FaultSubject.EgressFault): boolean {
    return this.write(protoMessage(ctrl.Fault, { subject, id: circuitId, iteration: 0 }));
  }

  /** The router removes these terminators (RemoveTerminatorsRequest 1038), answered with a Result. */
  async removeTerminators(ids: string[]): Promise<{ success: boolean; message: string }> {
    const reply = await this.request(protoMessage(ctrl.RemoveTerminatorsRequest, { terminatorIds: ids }));
    const result = decodeResult(reply);
    if (result.success) for (const id of ids) this.terminators.delete(id);
    return { success: result.success, message: result.message };
  }

  /** The API sessions its SDKs use (ApiSessionHeartbeat 20203; a 1.1.9 router sends it about every 60 s). */
  apiSessionHeartbeat(tokens: string[]): boolean {
    return this.write(protoMessage(edge.ApiSessionHeartbeat, { tokens }));
  }

  /** Sends a message and waits for the one that replies to it (by sequence). */
  request(msg: ChannelMessage, timeoutMs = this.options.requestTimeoutMs ?? 30_000): Promise<ChannelMessage> {
    if (this.closed) return Promise.reject(new SimRouterError(`the channel is closed: ${this.closeReason}`));
    return new Promise((resolve, reject) => {
      const sequence = this.allocate();
      const timer = setTimeout(() => {
        this.waiting.delete(sequence);
        reject(new SimRouterError(`no reply to a message of type ${msg.contentType} in ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiting.set(sequence, { resolve, reject, timer });
      if (!this.write(msg, sequence)) {
        clearTimeout(timer);
        this.waiting.delete(sequence);
        reject(new SimRouterError(`the channel is closed: ${this.closeReason}`));
      }
    });
  }

  /** Closes the channel; pending requests fail. Resolves once the socket is closed. */
  async close(reason = 'closed by the simulator'): Promise<void> {
    if (this.closeReason === undefined) {
      this.closeReason = reason;
      clearInterval(this.heartbeatTimer);
      for (const [, w] of this.waiting) {
        clearTimeout(w.timer);
        w.reject(new SimRouterError(`the channel closed: ${reason}`));
      }
      this.waiting.clear();
      this.socket.destroy();
      this.resolveClosed(reason);
    }
    if (!this.socket.closed) await new Promise<void>((resolve) => this.socket.once('close', () => resolve()));
  }

  private allocate(): number {
    let sequence = this.nextSequence | 0;
    if (sequence === HELLO_SEQUENCE) sequence = 0;
    this.nextSequence = (sequence + 1) | 0;
    return sequence;
  }

  private write(msg: ChannelMessage, sequence?: number): boolean {
    if (this.closed) return false;
    if (msg.contentType !== ChannelContentType.Hello) msg.sequence = sequence ?? this.allocate();
    this.stats.messagesOut++;
    this.socket.write(encodeMessage(msg));
    return true;
  }

  private heartbeat(): void {
    const msg = createHeartbeat();
    setHeartbeat(msg, BigInt(Date.now()) * 1_000_000n);
    this.write(msg);
  }

  private received(chunk: Buffer): void {
    if (this.closed) return;
    let messages: ChannelMessage[];
    try {
      messages = this.decoder.push(chunk);
    } catch (err) {
      void this.close(`bad frame from the controller: ${(err as Error).message}`);
      return;
    }
    for (const msg of messages) {
      if (this.closed) return;
      this.stats.messagesIn++;
      try {
        this.dispatch(msg);
      } catch (err) {
        void this.close(`a message of type ${msg.contentType} could not be handled: ${(err as Error).message}`);
        return;
      }
    }
  }

  private dispatch(msg: ChannelMessage): void {
    if (this.helloWaiter) {
      const waiter = this.helloWaiter;
      this.helloWaiter = undefined;
      waiter.resolve(msg);
      return;
    }
    // A heartbeat on any message is echoed at once (header 6), as the channel's heartbeater does.
    const beat = msg.headers.get(ChannelHeader.Heartbeat)?.length === 8 ? getHeartbeat(msg) : undefined;
    if (beat !== undefined) {
      const echo = createHeartbeat();
      setHeartbeatResponse(echo, beat);
      this.stats.heartbeatsEchoed++;
      this.write(echo);
    }
    if (msg.replyFor !== undefined && msg.replyFor !== HELLO_SEQUENCE) {
      const w = this.waiting.get(msg.replyFor);
      if (w) {
        this.waiting.delete(msg.replyFor);
        clearTimeout(w.timer);
        w.resolve(msg);
        return;
      }
    }
    switch (msg.contentType) {
      case ChannelContentType.Heartbeat:
      case ChannelContentType.Result:
      case ChannelContentType.LatencyResponse:
        return;
      case ChannelContentType.Ping:
        this.stats.pings++;
        this.write(createResult(true, '', msg));
        return;
      case ChannelContentType.Latency:
        this.stats.latencyProbes++;
        this.write(replyTo(createMessage(ChannelContentType.LatencyResponse), msg));
        return;
      case ctrl.ContentType.RouteType:
        return this.route(msg);
      case ctrl.ContentType.UnrouteType:
        this.stats.unroutes++;
        return;
      case edge.ContentType.ServerHelloType:
        return this.serverHello(msg);
      case edge.ContentType.ApiSessionAddedType: {
        this.stats.apiSessionMessages++;
        const added = edge.ApiSessionAdded.decode(msg.body);
        for (const s of added.apiSessions) this.apiSessions.set(s.token, s);
        if (added.isFullState) this.fullSyncChunk(msg);
        return;
      }
      case edge.ContentType.ApiSessionUpdatedType: {
        this.stats.apiSessionMessages++;
        for (const s of edge.ApiSessionUpdated.decode(msg.body).apiSessions) this.apiSessions.set(s.token, s);
        return;
      }
      case edge.ContentType.ApiSessionRemovedType: {
        this.stats.apiSessionMessages++;
        const removed = edge.ApiSessionRemoved.decode(msg.body);
        for (const t of removed.tokens) this.apiSessions.delete(t);
        if (removed.ids.length > 0)
          for (const [token, s] of this.apiSessions) if (removed.ids.includes(s.id)) this.apiSessions.delete(token);
        return;
      }
      case ctrl.ContentType.ValidateTerminatorsV2RequestType:
        return this.validateTerminators(msg);
      case ctrl.ContentType.InspectRequestType:
        this.write(
          protoMessage(ctrl.InspectResponse, { success: true, errors: [], values: [] }, { replyFor: msg.sequence }),
        );
        return;
      default:
        this.stats.unhandled[msg.contentType] = (this.stats.unhandled[msg.contentType] ?? 0) + 1;
    }
  }

  private serverHello(msg: ChannelMessage): void {
    edge.ServerHello.decode(msg.body);
    const l = this.options.edgeListener ?? { hostname: '127.0.0.1', port: 3022 };
    const address = { value: `tls:${l.hostname}:${l.port}`, protocol: 'tls', hostname: l.hostname, port: l.port };
    // router/handler_edge_ctrl/hello.go: the listeners, and the deprecated hostname/protocols/ports beside them.
    const hello = protoMessage(edge.ClientHello, {
      version: (this.options.version ?? simRouterVersion).version,
      hostname: l.hostname,
      protocols: ['tls'],
      data: new Map(),
      protocolPorts: [String(l.port)],
      listeners: [{ address, advertise: address }],
    });
    this.write(replyTo(hello, msg));
    const waiter = this.edgeHelloWaiter;
    this.edgeHelloWaiter = undefined;
    waiter?.();
  }

  private fullSyncChunk(msg: ChannelMessage): void {
    const state = msg.headers.get(edge.SyncHeader.SyncStrategyState);
    let isLast = true;
    if (state && state.length > 0) {
      try {
        isLast = (JSON.parse(Buffer.from(state).toString('utf8')) as { isLast?: boolean }).isLast !== false;
      } catch {
        isLast = true;
      }
    }
    if (!isLast) return;
    this.stats.fullSyncs++;
    this.syncedOnce = true;
    for (const w of this.syncWaiters.splice(0)) w();
  }

  private route(msg: ChannelMessage): void {
    const route = decodeProtoMessage(ctrl.Route, msg);
    this.stats.routes++;
    const answer = this.options.route?.(route) ?? { success: true };
    if (!answer.success) this.stats.routesFailed++;
    this.write(
      encodeRouteResult(
        answer.success
          ? {
              circuitId: route.circuitId,
              attempt: route.attempt,
              success: true,
              peerData: answer.peerData ?? new Map(),
            }
          : {
              circuitId: route.circuitId,
              attempt: route.attempt,
              success: false,
              error: answer.error,
              ...(answer.errorCode !== undefined ? { errorCode: answer.errorCode } : {}),
              peerData: new Map(),
            },
        msg,
      ),
    );
  }

  private validateTerminators(msg: ChannelMessage): void {
    this.stats.terminatorValidations++;
    const req = decodeProtoMessage(ctrl.ValidateTerminatorsV2Request, msg);
    const states = new Map<string, ctrl.RouterTerminatorState>();
    for (const t of req.terminators) {
      const known = this.terminators.has(t.id);
      if (!known) this.stats.terminatorsReportedUnknown++;
      states.set(t.id, {
        valid: known,
        reason: known ? 0 : ctrl.TerminatorInvalidReason.UnknownTerminator,
        detail: known ? '' : 'unknown terminator',
        marker: t.marker,
      });
    }
    this.write(protoMessage(ctrl.ValidateTerminatorsV2Response, { states }, { replyFor: msg.sequence }));
  }
}
