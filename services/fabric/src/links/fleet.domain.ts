import type { FleetLink, FleetRouter } from '@ziti/contracts';

/** A router another fabric replica holds. */
export type RemoteRouter = FleetRouter & { replicaId: string };

interface ReplicaView {
  seenAt: number;
  routers: Set<string>;
  links: Set<string>;
}

/** What applying another replica's full state changed here. */
export interface StateChanges {
  up: RemoteRouter[];
  down: string[];
  links: FleetLink[];
  linksGone: string[];
}

/**
 * The routers the other fabric replicas hold and the links their routers reported (docs/adr/0026),
 * from their signals. A replica's full state replaces what it said before; one not heard of for
 * a lease is taken as gone with everything it held. Of two replicas that claim a router, the one
 * with the newer connection holds it (a router that moved is not taken back by a late signal).
 */
export class FleetView {
  private readonly routers = new Map<string, RemoteRouter>();
  private readonly replicas = new Map<string, ReplicaView>();
  private readonly linkOwner = new Map<string, string>();

  constructor(
    readonly replicaId: string,
    private readonly leaseMs: number,
    private readonly now: () => number = () => Date.now(),
  ) {}

  router(id: string): RemoteRouter | undefined {
    return this.routers.get(id);
  }

  list(): RemoteRouter[] {
    return [...this.routers.values()];
  }

  /** A router another replica holds now; false when a newer connection of it is known elsewhere. */
  up(replicaId: string, router: FleetRouter): boolean {
    const known = this.routers.get(router.id);
    if (known && known.replicaId !== replicaId && known.connectedAt > router.connectedAt) return false;
    if (known && known.replicaId !== replicaId) this.replicas.get(known.replicaId)?.routers.delete(router.id);
    this.routers.set(router.id, { ...router, replicaId });
    this.view(replicaId).routers.add(router.id);
    return true;
  }

  /** The replica no longer holds it; false when it was not the one holding it (the router moved). */
  down(replicaId: string, routerId: string): boolean {
    const known = this.routers.get(routerId);
    this.replicas.get(replicaId)?.routers.delete(routerId);
    if (!known || known.replicaId !== replicaId) return false;
    this.routers.delete(routerId);
    return true;
  }

  /** A link a router of that replica reported. */
  link(replicaId: string, linkId: string): void {
    const previous = this.linkOwner.get(linkId);
    if (previous && previous !== replicaId) this.replicas.get(previous)?.links.delete(linkId);
    this.linkOwner.set(linkId, replicaId);
    this.view(replicaId).links.add(linkId);
  }

  linkGone(linkId: string): void {
    const owner = this.linkOwner.get(linkId);
    if (owner) this.replicas.get(owner)?.links.delete(linkId);
    this.linkOwner.delete(linkId);
  }

  /** A replica's full state: what it no longer holds goes, what it holds now comes. */
  state(replicaId: string, routers: FleetRouter[], links: FleetLink[]): StateChanges {
    const view = this.view(replicaId);
    const changes: StateChanges = { up: [], down: [], links: [], linksGone: [] };
    const now = new Set(routers.map((r) => r.id));
    for (const id of [...view.routers]) if (!now.has(id) && this.down(replicaId, id)) changes.down.push(id);
    for (const r of routers) {
      const before = this.routers.get(r.id);
      if (this.up(replicaId, r) && (!before || before.replicaId !== replicaId || before.connectedAt !== r.connectedAt))
        changes.up.push({ ...r, replicaId });
    }
    const linkIds = new Set(links.map((l) => l.id));
    for (const id of [...view.links])
      if (!linkIds.has(id)) {
        this.linkGone(id);
        changes.linksGone.push(id);
      }
    for (const l of links) {
      this.link(replicaId, l.id);
      changes.links.push(l);
    }
    return changes;
  }

  /** Replicas not heard of for a lease: each goes with what it held (apply as an empty state). */
  expired(): string[] {
    const before = this.now() - this.leaseMs;
    return [...this.replicas].filter(([, v]) => v.seenAt < before).map(([id]) => id);
  }

  forget(replicaId: string): void {
    this.replicas.delete(replicaId);
  }

  private view(replicaId: string): ReplicaView {
    let view = this.replicas.get(replicaId);
    if (!view) this.replicas.set(replicaId, (view = { seenAt: this.now(), routers: new Set(), links: new Set() }));
    view.seenAt = this.now();
    return view;
  }
}
