import type { AdmittableRouter, RouterSyncStatus, RouterVersionInfo } from '@ziti/contracts';
import type { Logger } from '@ziti/platform/logger';
import { type Admission, type AdmissionFacts, decideAdmission, sameFingerprint } from './admission.domain.ts';
import type { ConnectedPeer, EdgeHello, LinkListener, PeerWatcher, RouterLink } from './router-link.ports.ts';
import type { RouterRegistry } from './routers.ports.ts';

/** A router this replica holds the channel of. */
export interface HeldRouter {
  link: RouterLink;
  router: AdmittableRouter;
  versionInfo: RouterVersionInfo | null;
  hello: EdgeHello;
  syncStatus: RouterSyncStatus;
  /** Its link listeners, from its hello (the other routers dial them). */
  listeners: LinkListener[];
  /** Deleted while held: its peers are told it was removed, not that it went. */
  removed?: boolean;
}

/** What happens once a router is connected and synchronised (the edge state it needs). */
export interface RouterSynchronizer {
  /** Pushes what the router must know (its API sessions) to a freshly connected edge router. */
  synchronize(link: RouterLink): Promise<void>;
  /** Checks the router's terminators against what it really has (stale ones are removed). */
  validateTerminators(link: RouterLink): Promise<void>;
  /**
   * The router's channel closed: its circuits go, unless this replica is stopping (`handedOver`):
   * the router reconnects to another replica and its circuits, which never crossed this process,
   * keep flowing.
   */
  disconnected(link: RouterLink, handedOver: boolean): void;
}

export interface RouterConnectionOptions {
  replicaId: string;
  /** How long a presence holds without renewal; renewed every third of it. */
  leaseMs: number;
  helloTimeoutMs: number;
  now?: () => Date;
}

/**
 * The routers this replica holds (docs/adr/0023): admission, their presence as inventory records
 * it, the edge hello and synchronisation, leases renewed while they stay, and the channel closed at
 * once when the router may no longer be connected (re-enrolled, disabled, deleted).
 */
export class RouterConnections {
  private readonly held = new Map<string, HeldRouter>();
  private renewal?: NodeJS.Timeout;
  private stopping = false;
  private readonly now: () => Date;

  constructor(
    private readonly registry: RouterRegistry,
    private readonly sync: RouterSynchronizer,
    private readonly watcher: PeerWatcher,
    private readonly options: RouterConnectionOptions,
    private readonly logger: Logger,
  ) {
    this.now = options.now ?? (() => new Date());
  }

  /** Admission: the router the certificate names, as inventory has it, against the facts of the connection. */
  async admit(facts: Omit<AdmissionFacts, 'router'>): Promise<Admission> {
    const router = facts.commonName ? await this.registry.admission(facts.commonName) : null;
    return decideAdmission({ ...facts, router });
  }

  get(routerId: string): HeldRouter | undefined {
    return this.held.get(routerId);
  }

  list(): HeldRouter[] {
    return [...this.held.values()];
  }

  /** Edge routers held now (they get API-session changes). */
  edgeLinks(): RouterLink[] {
    return this.list()
      .filter((h) => h.router.kind === 'edge')
      .map((h) => h.link);
  }

  /**
   * An admitted router's channel is open: it replaces an older connection of the same router,
   * becomes online, says its edge hello, and gets its synchronisation. A failure on the way closes
   * the channel (the router reconnects).
   */
  async opened(
    link: RouterLink,
    router: AdmittableRouter,
    versionInfo: RouterVersionInfo | null,
    listeners: LinkListener[] = [],
  ): Promise<void> {
    const previous = this.held.get(router.id);
    if (previous && previous.link !== link) previous.link.close('superseded by a new connection of the router');
    const entry: HeldRouter = {
      link,
      router,
      versionInfo,
      hello: { hostname: '', supportedProtocols: {} },
      syncStatus: 'SYNC_QUEUED',
      listeners,
    };
    this.held.set(router.id, entry);
    try {
      if (router.kind === 'edge') {
        entry.syncStatus = 'SYNC_HELLO';
        entry.hello = await link.edgeHello(this.options.helloTimeoutMs);
        entry.syncStatus = 'SYNC_IN_PROGRESS';
      }
      if (!(await this.report(entry, true))) {
        link.close('a newer connection of the router was recorded');
        return;
      }
      if (router.kind === 'edge') await this.sync.synchronize(link);
      if (link.closed) return;
      entry.syncStatus = 'SYNC_DONE';
      await this.report(entry, true);
      this.logger.info({ routerId: router.id, connectionId: link.connectionId }, 'router connected and synchronised');
      if (this.held.get(router.id) === entry) this.watcher.connected(peerOf(entry), this.peersBesides(router.id));
      await this.sync
        .validateTerminators(link)
        .catch((err: unknown) =>
          this.logger.warn({ err, routerId: router.id }, 'terminators of the router could not be validated'),
        );
    } catch (err) {
      if (!link.closed) {
        this.logger.warn({ err, routerId: router.id }, 'router synchronisation failed');
        link.close(`synchronisation failed: ${(err as Error).message}`);
      }
    }
  }

  /** The channel closed: the router is offline unless a newer connection of it is held. */
  async closed(link: RouterLink): Promise<void> {
    const entry = this.held.get(link.routerId);
    this.sync.disconnected(link, this.stopping);
    if (!entry || entry.link !== link) return;
    this.held.delete(link.routerId);
    const wasSynchronised = entry.syncStatus === 'SYNC_DONE';
    entry.syncStatus = 'SYNC_DISCONNECTED';
    // A replica that stops hands its routers over: their links to each other stay up.
    if (!this.stopping && (wasSynchronised || entry.removed))
      this.watcher.disconnected(link.routerId, entry.removed === true, this.peersBesides(link.routerId));
    await this.report(entry, false).catch((err: unknown) =>
      // The lease lapses without renewal: inventory marks it offline itself.
      this.logger.warn({ err, routerId: link.routerId }, 'the router going offline could not be reported'),
    );
  }

  /**
   * The router changed or went (inventory's `edgeRouter.*`, or a re-check): a router that may no
   * longer be connected with the certificate it holds is disconnected at once.
   */
  routerChanged(routerId: string, now: Pick<AdmittableRouter, 'fingerprint' | 'disabled' | 'isVerified'> | null): void {
    const entry = this.held.get(routerId);
    if (!entry) return;
    const why =
      now === null
        ? 'the router was deleted'
        : now.disabled
          ? 'the router was disabled'
          : !now.isVerified || !now.fingerprint
            ? 'the router was re-enrolled'
            : !sameFingerprint(now.fingerprint, entry.router.fingerprint ?? '')
              ? 'the router enrolled another certificate'
              : undefined;
    if (!why) return;
    if (now === null) entry.removed = true;
    entry.link.close(why);
  }

  /** The routers held here and synchronised, as their peers see them. */
  peers(): ConnectedPeer[] {
    return this.list()
      .filter((h) => h.syncStatus === 'SYNC_DONE' && !h.link.closed)
      .map(peerOf);
  }

  private peersBesides(routerId: string): ConnectedPeer[] {
    return this.peers().filter((p) => p.id !== routerId);
  }

  /** Asks inventory again about every router held (after events may have been missed). */
  async recheckAll(): Promise<void> {
    for (const entry of this.list()) {
      const router = await this.registry.admission(entry.router.id).catch(() => undefined);
      if (router !== undefined) this.routerChanged(entry.router.id, router);
    }
  }

  startLeaseRenewal(): void {
    const every = Math.max(250, Math.floor(this.options.leaseMs / 3));
    this.renewal = setInterval(() => void this.renewLeases(), every);
    this.renewal.unref();
  }

  async stop(reason: string): Promise<void> {
    this.stopping = true;
    if (this.renewal) clearInterval(this.renewal);
    this.renewal = undefined;
    const entries = this.list();
    for (const entry of entries) entry.link.close(reason);
    await Promise.allSettled(entries.map((e) => this.closed(e.link)));
  }

  /** Renews the leases of every held connection; one inventory no longer holds as current is closed. */
  async renewLeases(): Promise<void> {
    const entries = this.list();
    if (entries.length === 0) return;
    try {
      const stale = await this.registry.renewLeases(
        this.options.replicaId,
        entries.map((e) => ({ routerId: e.router.id, connectionId: e.link.connectionId })),
        this.options.leaseMs,
      );
      for (const s of stale) {
        const entry = this.held.get(s.routerId);
        if (entry && entry.link.connectionId === s.connectionId && entry.syncStatus === 'SYNC_DONE')
          entry.link.close('inventory no longer records this connection as current');
      }
    } catch (err) {
      this.logger.warn({ err }, 'router leases could not be renewed; will retry');
    }
  }

  private report(entry: HeldRouter, isOnline: boolean): Promise<boolean> {
    return this.registry.reportPresence({
      routerId: entry.router.id,
      connectionId: entry.link.connectionId,
      replicaId: this.options.replicaId,
      connectedAt: entry.link.connectedAt.toISOString(),
      isOnline,
      hostname: isOnline ? entry.hello.hostname : '',
      supportedProtocols: isOnline ? entry.hello.supportedProtocols : {},
      versionInfo: entry.versionInfo,
      syncStatus: entry.syncStatus,
      leaseMs: this.options.leaseMs,
    });
  }
}

function peerOf(h: HeldRouter): ConnectedPeer {
  return {
    id: h.router.id,
    link: h.link,
    version: h.versionInfo?.version ?? '',
    listeners: h.listeners,
    cost: h.router.cost,
    noTraversal: h.router.noTraversal,
  };
}
