import { type FleetLink, type FleetRouter, type FleetSignal, linkListenerSchema } from '@ziti/contracts';
import type { Logger } from '@ziti/platform/logger';
import { sameFingerprint } from '../routers/admission.domain.ts';
import type { ConnectedPeer, HeldLinks, PeerChange, PeerWatcher, RouterLink } from '../routers/router-link.ports.ts';
import type { RouterRegistry } from '../routers/routers.ports.ts';
import type { FleetView, RemoteRouter, StateChanges } from './fleet.domain.ts';
import { type Link, type LinkGraph, type ReportedLink, linkLimits } from './links.domain.ts';

/** What happens to the circuits that crossed a link that went. */
export interface LinkCircuits {
  linksGone(links: Link[]): Promise<void>;
}

/** How this replica tells the other fabric replicas what it holds (the fleet signals). */
export interface FleetBroadcast {
  send(signal: FleetSignal): void;
}

/**
 * The routers' view of each other (ziti `network/router_messaging.go`, `handler_ctrl/router_link.go`,
 * `verify_router.go`, `fault.go`), across every fabric replica (docs/adr/0026): a router that comes
 * is told of every other connected router, wherever it is held, and they of it, with the link
 * listeners each advertised in its hello, so they dial each other; the links they report make the
 * graph circuits are routed over, in every replica; a link that fails goes, with the circuits that
 * crossed it, and its other end is told.
 */
export class RouterPeers implements PeerWatcher {
  constructor(
    private readonly graph: LinkGraph,
    private readonly circuits: LinkCircuits,
    private readonly registry: Pick<RouterRegistry, 'admission'>,
    private readonly held: HeldLinks,
    private readonly fleet: FleetView,
    private readonly broadcast: FleetBroadcast,
    private readonly logger: Logger,
  ) {}

  private get replicaId(): string {
    return this.fleet.replicaId;
  }

  /** A router is connected and synchronised: it and every other connected router learn of each other. */
  connected(peer: ConnectedPeer, others: ConnectedPeer[]): void {
    for (const other of others) other.link.peerStates([healthy(peer)]);
    const remote = this.fleet.list().filter((r) => r.id !== peer.id && !this.held.local(r.id));
    const states = [...others.map(healthy), ...remote.map(healthy)];
    if (states.length > 0) peer.link.peerStates(states);
    this.broadcast.send({ kind: 'routerUp', replicaId: this.replicaId, router: fleetRouterOf(peer) });
  }

  /** A router's channel closed (or it was deleted): the others drop their links to it, and so does the graph. */
  disconnected(routerId: string, removed: boolean, others: ConnectedPeer[]): void {
    this.tell(others, { id: routerId, state: removed ? 'removed' : 'unhealthy' });
    this.dropRouter(routerId);
    this.broadcast.send({ kind: 'routerDown', replicaId: this.replicaId, routerId, removed });
  }

  /** RouterLinks: the links a router holds (a new one, or all of them after it reconnected). */
  reported(from: RouterLink, links: ReportedLink[]): void {
    // What is not taken is said once per message, not once per entry (a message may hold thousands).
    let ignored = 0;
    let firstProblem: string | undefined;
    let overLimit = 0;
    for (const r of links) {
      const problem = reportProblem(from.routerId, r);
      if (problem) {
        ignored++;
        firstProblem ??= problem;
        continue;
      }
      // Reported here, the link is this replica's to announce now (its router may have moved here).
      this.fleet.linkGone(r.id);
      const added = this.graph.reported(from.routerId, r);
      if (!added) {
        if (!this.graph.get(r.id)) overLimit++;
        continue;
      }
      this.logger.info(
        { routerId: from.routerId, linkId: r.id, destRouterId: r.destRouterId, iteration: r.iteration },
        'router reported link added',
      );
      if (added.replaced) this.linksGone([added.replaced]);
      this.broadcast.send({ kind: 'link', replicaId: this.replicaId, link: fleetLinkOf(added.link) });
    }
    if (ignored > 0)
      this.logger.warn({ routerId: from.routerId, ignored, problem: firstProblem }, 'reported links ignored');
    if (overLimit > 0)
      this.logger.warn(
        { routerId: from.routerId, dropped: overLimit, limit: linkLimits.perRouter },
        'a router reported more links than it may hold',
      );
  }

  /**
   * VerifyRouter: a router accepting a link asks whether the certificate its dialler presented is
   * the one the named router enrolled with.
   */
  async verify(
    routerId: string,
    fingerprints: string[],
  ): Promise<{ verified: true } | { verified: false; reason: string }> {
    if (routerId === '' || routerId.length > linkLimits.idChars)
      return { verified: false, reason: 'invalid router id' };
    const router = await this.registry.admission(routerId);
    if (!router) return { verified: false, reason: `router with id ${routerId} not found` };
    if (!router.fingerprint) return { verified: false, reason: `invalid router ${routerId}, not yet enrolled` };
    if (fingerprints.some((f) => sameFingerprint(f, router.fingerprint!))) return { verified: true };
    return { verified: false, reason: `could not verify fingerprint for router ${routerId}` };
  }

  /** Fault LinkFault / LinkDuplicate: the link goes, its circuits with it, and its other end is told. */
  faulted(from: RouterLink, linkId: string, iteration: number): void {
    const link = this.graph.faulted(linkId, iteration);
    if (!link) return;
    this.logger.info({ routerId: from.routerId, linkId, iteration }, 'removing failed link');
    const otherEnd = link.srcRouterId === from.routerId ? link.dstRouterId : link.srcRouterId;
    this.held.of(otherEnd)?.linkFaulted(link.id, link.iteration);
    this.fleet.linkGone(link.id);
    this.broadcast.send({ kind: 'linkGone', replicaId: this.replicaId, linkId: link.id, iteration: link.iteration });
    this.linksGone([link]);
  }

  /**
   * A router's metrics (Metrics, every minute by default): each of its links' latency mean (and
   * queue time), in nanoseconds, sets that end's latency and so the link's cost.
   */
  measured(from: RouterLink, histograms: Map<string, { mean: number }>): void {
    for (const link of this.graph.ofRouter(from.routerId)) {
      const latency = histograms.get(`link.${link.id}.latency`);
      if (!latency) continue;
      const queued = histograms.get(`link.${link.id}.queue_time`)?.mean ?? 0;
      if (this.graph.measured(from.routerId, link.id, (latency.mean + queued) / 1_000_000))
        this.broadcast.send({ kind: 'link', replicaId: this.replicaId, link: fleetLinkOf(link) });
    }
  }

  /** Everything this replica holds, for the others (now and then, and when one asks). */
  announce(): void {
    this.broadcast.send({
      kind: 'state',
      replicaId: this.replicaId,
      routers: this.held.peers().map(fleetRouterOf),
      links: this.graph
        .list()
        .filter((l) => this.held.local(l.srcRouterId))
        .map(fleetLinkOf),
    });
  }

  /** This replica may have missed signals (or just started): it asks everyone for their state. */
  resynchronise(): void {
    this.broadcast.send({ kind: 'hello', replicaId: this.replicaId });
    this.announce();
  }

  /** Replicas not heard of for a lease are taken as gone, with the routers and links they held. */
  expireReplicas(): void {
    for (const replicaId of this.fleet.expired()) {
      this.logger.warn({ replicaId }, 'a fabric replica went silent: its routers and links are dropped');
      this.applyState(this.fleet.state(replicaId, [], []));
      this.fleet.forget(replicaId);
    }
  }

  /** A signal of another fabric replica. */
  signalled(signal: FleetSignal): void {
    if (signal.replicaId === this.replicaId) return;
    switch (signal.kind) {
      case 'hello':
        this.announce();
        return;
      case 'state':
        this.applyState(this.fleet.state(signal.replicaId, signal.routers, signal.links));
        return;
      case 'routerUp':
        if (this.fleet.up(signal.replicaId, signal.router) && !this.held.local(signal.router.id))
          this.tell(this.held.peers(), healthy({ ...signal.router, replicaId: signal.replicaId }));
        return;
      case 'routerDown':
        if (this.fleet.down(signal.replicaId, signal.routerId) && !this.held.local(signal.routerId)) {
          this.tell(this.held.peers(), { id: signal.routerId, state: signal.removed ? 'removed' : 'unhealthy' });
          this.dropRouter(signal.routerId);
        }
        return;
      case 'link':
        this.fleet.link(signal.replicaId, signal.link.id);
        this.takeLink(signal.link);
        return;
      case 'linkGone': {
        this.fleet.linkGone(signal.linkId);
        const link = this.graph.faulted(signal.linkId, signal.iteration);
        if (link) this.linksGone([link]);
        return;
      }
    }
  }

  private applyState(changes: StateChanges): void {
    const local = this.held.peers();
    for (const r of changes.up) if (!this.held.local(r.id)) this.tell(local, healthy(r));
    for (const id of changes.down)
      if (!this.held.local(id)) {
        this.tell(local, { id, state: 'unhealthy' });
        this.dropRouter(id);
      }
    const gone = changes.linksGone.flatMap((id) => this.graph.faulted(id, 0) ?? []);
    this.linksGone(gone);
    for (const l of changes.links) this.takeLink(l);
  }

  private takeLink(l: FleetLink): void {
    const added = this.graph.reported(l.srcRouterId, {
      id: l.id,
      destRouterId: l.dstRouterId,
      protocol: l.protocol,
      dialAddress: l.dialAddress,
      iteration: l.iteration,
    });
    if (added?.replaced) this.linksGone([added.replaced]);
    // Another replica's router measured it: its latencies come with it.
    this.graph.measured(l.srcRouterId, l.id, l.srcLatencyMs);
    this.graph.measured(l.dstRouterId, l.id, l.dstLatencyMs);
  }

  private dropRouter(routerId: string): void {
    const gone = this.graph.routerGone(routerId);
    for (const l of gone) this.fleet.linkGone(l.id);
    this.linksGone(gone);
  }

  private tell(peers: ConnectedPeer[], change: PeerChange): void {
    for (const p of peers) p.link.peerStates([change]);
  }

  private linksGone(links: Link[]): void {
    if (links.length === 0) return;
    void this.circuits
      .linksGone(links)
      .catch((err: unknown) =>
        this.logger.warn({ err, links: links.map((l) => l.id) }, 'circuits over failed links not removed'),
      );
  }
}

function healthy(peer: Pick<ConnectedPeer, 'id' | 'version' | 'listeners'> | RemoteRouter): PeerChange {
  return { id: peer.id, state: 'healthy', version: peer.version, listeners: peer.listeners };
}

/**
 * A router as the other replicas are told of it, within what the fleet signal allows: its hello's
 * listeners come from the router, and one that does not fit (too many, an oversized field) would
 * make the receivers refuse the whole state signal, and so drop every router of this replica.
 */
export function fleetRouterOf(peer: ConnectedPeer): FleetRouter {
  return {
    id: peer.id,
    version: peer.version.slice(0, 256),
    listeners: peer.listeners.filter((l) => linkListenerSchema.safeParse(l).success).slice(0, 64),
    cost: peer.cost,
    noTraversal: peer.noTraversal,
    connectedAt: peer.link.connectedAt.toISOString(),
  };
}

function fleetLinkOf(l: Link): FleetLink {
  return {
    id: l.id,
    srcRouterId: l.srcRouterId,
    dstRouterId: l.dstRouterId,
    protocol: l.protocol,
    dialAddress: l.dialAddress,
    iteration: l.iteration,
    srcLatencyMs: l.srcLatencyMs,
    dstLatencyMs: l.dstLatencyMs,
  };
}

/** Why a reported link is not taken (none: it is). */
function reportProblem(routerId: string, r: ReportedLink): string | undefined {
  if (r.id === '' || r.destRouterId === '') return 'no id or destination';
  if (r.destRouterId === routerId) return 'a link to itself';
  if (r.id.length > linkLimits.idChars || r.destRouterId.length > linkLimits.idChars) return 'an id too long';
  if (r.dialAddress.length > linkLimits.addressChars || r.protocol.length > linkLimits.protocolChars)
    return 'an address or protocol too long';
  return undefined;
}
