import { randomUUID } from 'node:crypto';
import { type ChannelMessage, ctrl, edge, protoMessage } from '@ziti/channel';
import type { RouterApiSession } from '@ziti/contracts';
import type {
  EdgeHello,
  ForwardDestination,
  PeerChange,
  RouteInstruction,
  RouteOutcome,
  RouterLink,
  SyncState,
} from '../routers/router-link.ports.ts';
import type { RouterChannel } from './router-channel.transport.ts';

const destinations: Record<ForwardDestination, number> = {
  start: ctrl.DestType.Start,
  end: ctrl.DestType.End,
  link: ctrl.DestType.Link,
};

/** The instant sync strategy's name (ziti `controller/sync_strats`), in header 1013. */
const instantStrategy = 'instant';

interface RouteWaiter {
  attempt: number;
  resolve(outcome: RouteOutcome): void;
  timer: NodeJS.Timeout;
}

/** A router's control channel behind the domain's RouterLink port: typed instructions become messages. */
export class ChannelRouterLink implements RouterLink {
  readonly connectionId = randomUUID();
  readonly connectedAt = new Date();
  private readonly routes = new Map<string, RouteWaiter>();
  private pendingHello?: (hello: edge.ClientHello) => void;

  constructor(
    readonly routerId: string,
    readonly remoteAddress: string,
    private readonly channel: RouterChannel,
    private readonly controllerVersion: string,
  ) {}

  get closed(): boolean {
    return this.channel.closed;
  }

  close(reason: string): void {
    this.channel.close(reason);
  }

  /** The channel closed: routes still waiting end as such. */
  channelClosed(): void {
    for (const [id, w] of this.routes) {
      clearTimeout(w.timer);
      w.resolve({ outcome: 'closed' });
      this.routes.delete(id);
    }
  }

  async edgeHello(timeoutMs: number): Promise<EdgeHello> {
    const hello = protoMessage(edge.ServerHello, {
      version: this.controllerVersion,
      // The router data model is not offered: a 1.1.9 router uses it only in HA mode (ROUTER-FACTS §3).
      data: new Map([['instant', 'true']]),
      byteData: new Map(),
    });
    const standalone = new Promise<edge.ClientHello>((resolve) => {
      this.pendingHello = resolve;
    });
    const reply = this.channel
      .request(hello, timeoutMs, 'the edge client hello')
      .then((msg) => edge.ClientHello.decode(msg.body));
    // The router answers the ServerHello with a ClientHello, as a reply or on its own.
    const answer = await Promise.race([reply, standalone]);
    this.pendingHello = undefined;
    reply.catch(() => undefined);
    return edgeHelloOf(answer);
  }

  /** A ClientHello that came on its own (not as a reply). */
  clientHello(msg: ChannelMessage): boolean {
    if (!this.pendingHello) return false;
    this.pendingHello(edge.ClientHello.decode(msg.body));
    return true;
  }

  async addApiSessions(sessions: RouterApiSession[], sync: { fullState: boolean; state: SyncState }): Promise<void> {
    const msg = protoMessage(edge.ApiSessionAdded, {
      isFullState: sync.fullState,
      apiSessions: sessions.map(apiSessionOf),
    });
    msg.headers.set(edge.SyncHeader.SyncStrategyType, Buffer.from(instantStrategy));
    msg.headers.set(edge.SyncHeader.SyncStrategyState, Buffer.from(JSON.stringify(sync.state)));
    await this.channel.sendAndDrain(msg);
  }

  updateApiSessions(sessions: RouterApiSession[]): void {
    const msg = protoMessage(edge.ApiSessionUpdated, { apiSessions: sessions.map(apiSessionOf) });
    msg.headers.set(edge.SyncHeader.SyncStrategyType, Buffer.from(instantStrategy));
    msg.headers.set(edge.SyncHeader.SyncStrategyState, new Uint8Array(0));
    this.channel.send(msg);
  }

  removeApiSessions(tokens: string[]): void {
    this.channel.send(protoMessage(edge.ApiSessionRemoved, { tokens, ids: [] }));
  }

  async validateTerminators(
    terminators: { id: string; binding: string; address: string }[],
    timeoutMs: number,
  ): Promise<Map<string, { valid: boolean; reason: string }>> {
    const msg = protoMessage(ctrl.ValidateTerminatorsV2Request, {
      terminators: terminators.map((t) => ({ ...t, marker: 0n })),
      fixInvalid: false,
    });
    const reply = await this.channel.request(msg, timeoutMs, 'the terminator validation');
    const states = ctrl.ValidateTerminatorsV2Response.decode(reply.body).states;
    const out = new Map<string, { valid: boolean; reason: string }>();
    for (const [id, s] of states) out.set(id, { valid: s.valid, reason: s.detail });
    return out;
  }

  route(route: RouteInstruction, timeoutMs: number): Promise<RouteOutcome> {
    if (this.channel.closed) return Promise.resolve({ outcome: 'closed' });
    const msg = protoMessage(ctrl.Route, {
      circuitId: route.circuitId,
      attempt: route.attempt,
      forwards: route.forwards.map((f) => ({
        srcAddress: f.srcAddress,
        dstAddress: f.dstAddress,
        dstType: destinations[f.dstType],
      })),
      ...(route.egress ? { egress: route.egress } : {}),
      timeout: BigInt(route.timeoutMs) * 1_000_000n,
      tags: new Map(Object.entries(route.tags)),
    });
    return new Promise((resolve) => {
      const previous = this.routes.get(route.circuitId);
      if (previous) {
        clearTimeout(previous.timer);
        previous.resolve({ outcome: 'timedOut' });
      }
      const timer = setTimeout(() => {
        this.routes.delete(route.circuitId);
        resolve({ outcome: 'timedOut' });
      }, timeoutMs);
      timer.unref();
      this.routes.set(route.circuitId, { attempt: route.attempt, resolve, timer });
      if (!this.channel.send(msg)) {
        clearTimeout(timer);
        this.routes.delete(route.circuitId);
        resolve({ outcome: 'closed' });
      }
    });
  }

  /** A RouteResult arrived: it ends the route waiting for that circuit and attempt (others are stale). */
  routeResult(result: {
    circuitId: string;
    attempt: number;
    success: boolean;
    error?: string;
    errorCode?: number;
    peerData: Map<number, Uint8Array>;
  }): boolean {
    const w = this.routes.get(result.circuitId);
    if (!w || w.attempt !== result.attempt) return false;
    this.routes.delete(result.circuitId);
    clearTimeout(w.timer);
    w.resolve(
      result.success
        ? { outcome: 'routed', attempt: result.attempt, peerData: result.peerData }
        : {
            outcome: 'failed',
            attempt: result.attempt,
            errorCode: result.errorCode ?? null,
            error: result.error ?? '',
          },
    );
    return true;
  }

  unroute(circuitId: string, now: boolean): void {
    this.channel.send(protoMessage(ctrl.Unroute, { circuitId, now }));
  }

  peerStates(changes: PeerChange[]): void {
    this.channel.send(
      protoMessage(ctrl.PeerStateChanges, {
        changes: changes.map((c) =>
          c.state === 'healthy'
            ? { id: c.id, version: c.version, state: ctrl.PeerState.Healthy, listeners: c.listeners }
            : {
                id: c.id,
                version: '',
                state: c.state === 'removed' ? ctrl.PeerState.Removed : ctrl.PeerState.Unhealthy,
                listeners: [],
              },
        ),
      }),
    );
  }

  linkFaulted(linkId: string, iteration: number): void {
    this.channel.send(protoMessage(ctrl.Fault, { subject: ctrl.FaultSubject.LinkFault, id: linkId, iteration }));
  }

  /** Answers a request of the router. */
  reply(msg: ChannelMessage): void {
    this.channel.send(msg);
  }
}

function apiSessionOf(s: RouterApiSession): edge.ApiSession {
  return { token: s.token, certFingerprints: s.certFingerprints, id: s.id };
}

/** The URLs SDKs are given (ziti `sync_instant.go ReceiveClientHello`): the listeners' advertised addresses. */
export function edgeHelloOf(hello: edge.ClientHello): EdgeHello {
  const protocols: Record<string, string> = {};
  if (hello.listeners.length > 0) {
    for (const l of hello.listeners) {
      const a = l.advertise;
      if (a) protocols[a.protocol] = `${a.protocol}://${a.hostname}:${a.port}`;
    }
  } else if (hello.hostname !== '') {
    hello.protocols.forEach((protocol, i) => {
      const port = hello.protocolPorts[i];
      if (port !== undefined) protocols[protocol] = `${protocol}://${hello.hostname}:${port}`;
    });
  }
  return { hostname: hello.hostname, supportedProtocols: protocols };
}
