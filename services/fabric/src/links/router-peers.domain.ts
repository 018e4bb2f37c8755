import type { Logger } from '@ziti/platform/logger';
import { sameFingerprint } from '../routers/admission.domain.ts';
import type { ConnectedPeer, HeldLinks, PeerChange, PeerWatcher, RouterLink } from '../routers/router-link.ports.ts';
import type { RouterRegistry } from '../routers/routers.ports.ts';
import type { Link, LinkGraph, ReportedLink } from './links.domain.ts';

/** What happens to the circuits that crossed a link that went. */
export interface LinkCircuits {
  linksGone(links: Link[]): Promise<void>;
}

/**
 * The routers' view of each other (ziti `network/router_messaging.go`, `handler_ctrl/router_link.go`,
 * `verify_router.go`, `fault.go`): a router that comes is told of every other connected router and
 * they of it, with the link listeners each advertised in its hello, so they dial each other; the
 * links they report make the graph circuits are routed over; a link that fails goes, with the
 * circuits that crossed it, and its other end is told.
 */
export class RouterPeers implements PeerWatcher {
  constructor(
    private readonly graph: LinkGraph,
    private readonly circuits: LinkCircuits,
    private readonly registry: Pick<RouterRegistry, 'admission'>,
    private readonly held: HeldLinks,
    private readonly logger: Logger,
  ) {}

  /** A router is connected and synchronised: it and every other connected router learn of each other. */
  connected(peer: ConnectedPeer, others: ConnectedPeer[]): void {
    if (others.length === 0) return;
    for (const other of others) other.link.peerStates([healthy(peer)]);
    peer.link.peerStates(others.map(healthy));
  }

  /** A router's channel closed (or it was deleted): the others drop their links to it, and so does the graph. */
  disconnected(routerId: string, removed: boolean, others: ConnectedPeer[]): void {
    const change: PeerChange = { id: routerId, state: removed ? 'removed' : 'unhealthy' };
    for (const other of others) other.link.peerStates([change]);
    this.linksGone(this.graph.routerGone(routerId));
  }

  /** RouterLinks: the links a router holds (a new one, or all of them after it reconnected). */
  reported(from: RouterLink, links: ReportedLink[]): void {
    for (const r of links) {
      if (r.id === '' || r.destRouterId === '' || r.destRouterId === from.routerId) {
        this.logger.info({ routerId: from.routerId, linkId: r.id }, 'a reported link without a destination ignored');
        continue;
      }
      const added = this.graph.reported(from.routerId, r);
      if (!added) continue;
      this.logger.info(
        { routerId: from.routerId, linkId: r.id, destRouterId: r.destRouterId, iteration: r.iteration },
        'router reported link added',
      );
      if (added.replaced) this.linksGone([added.replaced]);
    }
  }

  /**
   * VerifyRouter: a router accepting a link asks whether the certificate its dialler presented is
   * the one the named router enrolled with.
   */
  async verify(
    routerId: string,
    fingerprints: string[],
  ): Promise<{ verified: true } | { verified: false; reason: string }> {
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
    this.linksGone([link]);
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

function healthy(peer: ConnectedPeer): PeerChange {
  return { id: peer.id, state: 'healthy', version: peer.version, listeners: peer.listeners };
}
