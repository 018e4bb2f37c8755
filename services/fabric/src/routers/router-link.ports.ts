import type { RouterApiSession } from '@ziti/contracts';

/**
 * One router's control channel as the domain sees it: typed instructions to the router and what
 * comes back, free of framing and sockets (the control-channel transport implements it).
 */
export interface RouterLink {
  readonly routerId: string;
  /** Unique per connection (a reconnect is another link). */
  readonly connectionId: string;
  readonly connectedAt: Date;
  readonly remoteAddress: string;
  /** The edge hello (ServerHello → ClientHello): the router's edge listeners. */
  edgeHello(timeoutMs: number): Promise<EdgeHello>;
  /** `ApiSessionAdded`; resolves once the router's socket took it (back-pressure for full syncs). */
  addApiSessions(sessions: RouterApiSession[], sync: { fullState: boolean; state: SyncState }): Promise<void>;
  updateApiSessions(sessions: RouterApiSession[]): void;
  removeApiSessions(tokens: string[]): void;
  /** Asks the router which of these terminators it still has (ValidateTerminatorsV2). */
  validateTerminators(
    terminators: { id: string; binding: string; address: string }[],
    timeoutMs: number,
  ): Promise<Map<string, { valid: boolean; reason: string }>>;
  /** Sends `Route` and waits for its `RouteResult` (or the timeout). */
  route(route: RouteInstruction, timeoutMs: number): Promise<RouteOutcome>;
  unroute(circuitId: string, now: boolean): void;
  /** Tells the router of other routers (PeerStateChanges), so it links to them. */
  peerStates(changes: PeerChange[]): void;
  /** Tells the router a link of it failed at its other end (Fault, LinkFault). */
  linkFaulted(linkId: string, iteration: number): void;
  /** Closes the channel; `reason` is logged once. */
  close(reason: string): void;
  readonly closed: boolean;
}

export interface EdgeHello {
  hostname: string;
  /** protocol → URL, as the reference derives it from the hello's listeners. */
  supportedProtocols: Record<string, string>;
}

/** The `instant` strategy's sync state header (`{id, isLast, sequence}`). */
export interface SyncState {
  id: string;
  isLast: boolean;
  sequence: number;
}

export type ForwardDestination = 'start' | 'end' | 'link';

export interface RouteInstruction {
  circuitId: string;
  attempt: number;
  /** What the router may spend on its part (nanoseconds on the wire). */
  timeoutMs: number;
  forwards: { srcAddress: string; dstAddress: string; dstType: ForwardDestination }[];
  egress?: { binding: string; address: string; destination: string; peerData: Map<number, Uint8Array> };
  tags: Record<string, string>;
}

export type RouteOutcome =
  | { outcome: 'routed'; attempt: number; peerData: Map<number, Uint8Array> }
  | { outcome: 'failed'; attempt: number; errorCode: number | null; error: string }
  | { outcome: 'timedOut' }
  | { outcome: 'closed' };

/**
 * The links this replica holds, for the parts that instruct routers. `RouterConnections` holds them
 * and is built after those parts (it needs them), so `app.ts` hands them a lookup that reads it.
 */
/**
 * What instructing a router on a circuit's path takes, whichever replica holds it: its own channel
 * here, or the replica that holds it over the bus (docs/adr/0026).
 */
export type RoutableRouter = Pick<RouterLink, 'routerId' | 'remoteAddress' | 'route' | 'unroute' | 'linkFaulted'>;

export interface HeldLinks {
  /** The router's current link here, or the way to it through the replica that holds it. */
  of(routerId: string): RoutableRouter | undefined;
  /** The router's own channel, if this replica holds it. */
  local(routerId: string): RouterLink | undefined;
  /** The routers held here and synchronised, as their peers see them. */
  peers(): ConnectedPeer[];
  /** Every edge router's link here (they get API-session changes). */
  edge(): RouterLink[];
  /** A router connected and synchronised here, as path selection weighs it. */
  node(routerId: string): { cost: number; noTraversal: boolean } | undefined;
}

/** A router's link listener, as its hello advertises it (other routers dial it). */
export interface LinkListener {
  address: string;
  protocol: string;
  costTags: string[];
  groups: string[];
  localBinding: string;
}

/**
 * What a router is told of another router (PeerStateChanges): healthy with its link listeners (it
 * dials them), unhealthy (disconnected; its links are dropped), or removed (deleted).
 */
export type PeerChange =
  | { id: string; state: 'healthy'; version: string; listeners: LinkListener[] }
  | { id: string; state: 'unhealthy' | 'removed' };

/** A connected router as the other routers are told of it. */
export interface ConnectedPeer {
  id: string;
  link: RouterLink;
  version: string;
  listeners: LinkListener[];
  /** As path selection weighs it. */
  cost: number;
  noTraversal: boolean;
}

/** Who follows routers coming and going among each other (the links between them). */
export interface PeerWatcher {
  /** Connected and synchronised; `others` are the other routers held, synchronised. */
  connected(peer: ConnectedPeer, others: ConnectedPeer[]): void;
  /** Its channel closed; `removed` when the router was deleted. */
  disconnected(routerId: string, removed: boolean, others: ConnectedPeer[]): void;
}
