/**
 * Router-to-router links (ziti `controller/model/link_manager.go`, `network/network_path.go`): the
 * routers dial each other's link listeners on their own and report each link they hold
 * (RouterLinks); the controller keeps the graph and routes circuits over its cheapest path.
 * Not to be confused with a `RouterLink`, which is a router's control channel to this controller.
 */

/** A link as its dialling router reports it (ctrl_pb `RouterLinks.RouterLink`). */
export interface ReportedLink {
  id: string;
  destRouterId: string;
  protocol: string;
  dialAddress: string;
  /** Raised by the router each time it re-dials the same link id. */
  iteration: number;
}

export interface Link {
  id: string;
  /** The router that dialled it (and reported it). */
  srcRouterId: string;
  dstRouterId: string;
  protocol: string;
  dialAddress: string;
  iteration: number;
  /** Each end's measured latency (its `link.<id>.latency` mean, plus queue time), in ms. */
  srcLatencyMs: number;
  dstLatencyMs: number;
  /** Static cost plus both ends' latency in ms (the reference starts both at 65 s until measured). */
  cost: number;
  reportedAt: Date;
}

/** The reference's defaults (controller/config/config_network.go, model/link_model.go newLink). */
export const linkCosts = {
  staticCost: 1,
  initialLatencyMs: 65_000,
  /** A router's cost on a path is at least this (`minRouterCost`). */
  minRouterCost: 10,
} as const;

/** What path selection needs of a router: absent when it is not connected (it is no node of the graph). */
export type RouterNode = (routerId: string) => { cost: number; noTraversal: boolean } | undefined;

export interface Path {
  /** Router ids from the source to the destination. */
  routers: string[];
  /** The links between them, in order (`routers.length - 1` of them). */
  links: Link[];
  cost: number;
}

/**
 * Bounds on what a router may report, so a misbehaving one cannot grow the graph without limit:
 * links it may hold at once (a router links to each peer over each of its dialers' groups; real
 * fleets stay far below), and the length of what identifies a link.
 */
export const linkLimits = { perRouter: 4_096, idChars: 256, addressChars: 1_024, protocolChars: 64 } as const;

/** Unreachable, as the reference counts it (`math.MaxInt32`). */
const unreachable = 2 ** 31 - 1;

/** Every router's cheapest path from one source, computed once per dial and asked for each candidate. */
export interface PathsFrom {
  cost(routerId: string): number | undefined;
  path(routerId: string): Path | undefined;
}

export class LinkGraph {
  private readonly byId = new Map<string, Link>();
  private readonly byRouter = new Map<string, Set<string>>();

  constructor(private readonly now: () => Date = () => new Date()) {}

  get size(): number {
    return this.byId.size;
  }

  get(id: string): Link | undefined {
    return this.byId.get(id);
  }

  list(): Link[] {
    return [...this.byId.values()];
  }

  /** Links with this router at either end. */
  ofRouter(routerId: string): Link[] {
    return [...(this.byRouter.get(routerId) ?? [])].flatMap((id) => this.byId.get(id) ?? []);
  }

  /**
   * A router reported a link (`RouterReportedLink`): new, or a newer iteration of a known id, which
   * replaces it. A report of an iteration already known changes nothing (answers undefined).
   */
  reported(srcRouterId: string, r: ReportedLink): { link: Link; replaced?: Link } | undefined {
    const known = this.byId.get(r.id);
    if (known && known.iteration >= r.iteration) return undefined;
    if (!known && (this.byRouter.get(srcRouterId)?.size ?? 0) >= linkLimits.perRouter) return undefined;
    if (known) this.remove(known);
    const link: Link = {
      id: r.id,
      srcRouterId,
      dstRouterId: r.destRouterId,
      protocol: r.protocol,
      dialAddress: r.dialAddress,
      iteration: r.iteration,
      srcLatencyMs: linkCosts.initialLatencyMs,
      dstLatencyMs: linkCosts.initialLatencyMs,
      cost: linkCosts.staticCost + 2 * linkCosts.initialLatencyMs,
      reportedAt: this.now(),
    };
    this.byId.set(link.id, link);
    for (const end of [link.srcRouterId, link.dstRouterId]) {
      let ids = this.byRouter.get(end);
      if (!ids) this.byRouter.set(end, (ids = new Set()));
      ids.add(link.id);
    }
    return known ? { link, replaced: known } : { link };
  }

  /**
   * A router's metrics measured a link of it (`AcceptMetricsMsg`): that end's latency, and so the
   * link's cost, is what it measured. Answers whether it changed.
   */
  measured(routerId: string, linkId: string, latencyMs: number): boolean {
    const link = this.byId.get(linkId);
    if (!link || !Number.isFinite(latencyMs) || latencyMs < 0) return false;
    const ms = Math.min(Math.floor(latencyMs), unreachable);
    if (link.srcRouterId === routerId) link.srcLatencyMs = ms;
    else if (link.dstRouterId === routerId) link.dstLatencyMs = ms;
    else return false;
    const cost = linkCosts.staticCost + link.srcLatencyMs + link.dstLatencyMs;
    if (cost === link.cost) return false;
    link.cost = cost;
    return true;
  }

  /**
   * A router reports the link failed (Fault LinkFault / LinkDuplicate): it goes, unless the fault
   * names an older iteration than the one known (the fault of a link since re-dialled).
   */
  faulted(linkId: string, iteration: number): Link | undefined {
    const link = this.byId.get(linkId);
    if (!link) return undefined;
    if (iteration !== 0 && link.iteration !== 0 && iteration < link.iteration) return undefined;
    this.remove(link);
    return link;
  }

  /** A router went: its links go with it (it reports those it still has when it is back). */
  routerGone(routerId: string): Link[] {
    const gone = this.ofRouter(routerId);
    for (const link of gone) this.remove(link);
    return gone;
  }

  /**
   * Cheapest paths from `src` over the links between connected routers (`network.shortestPath`):
   * each hop costs the cheaper link between the two plus the next router's cost (at least
   * `minRouterCost`); a `noTraversal` router is never in the middle of a path.
   */
  pathsFrom(src: string, routers: RouterNode): PathsFrom {
    const dist = new Map<string, number>([[src, 0]]);
    const via = new Map<string, Link>();
    const done = new Set<string>();
    const queue = new Set<string>([src]);
    while (queue.size > 0) {
      let u: string | undefined;
      for (const id of queue) if (u === undefined || dist.get(id)! < dist.get(u)!) u = id;
      queue.delete(u!);
      done.add(u!);
      const here = dist.get(u!)!;
      // Only the source and the destination may be a no-traversal router: nothing goes on from one.
      if (u !== src && routers(u!)?.noTraversal) continue;
      for (const link of this.ofRouter(u!)) {
        const r = link.srcRouterId === u ? link.dstRouterId : link.srcRouterId;
        if (done.has(r)) continue;
        const node = routers(r);
        if (!node) continue;
        const alt = here + link.cost + Math.max(node.cost, linkCosts.minRouterCost);
        if (alt >= unreachable) continue;
        if (alt < (dist.get(r) ?? unreachable)) {
          dist.set(r, alt);
          via.set(r, link);
          queue.add(r);
        }
      }
    }
    return {
      cost: (id) => dist.get(id),
      path: (id) => {
        const cost = dist.get(id);
        if (cost === undefined) return undefined;
        const links: Link[] = [];
        const path = [id];
        for (let at = id; at !== src;) {
          const link = via.get(at)!;
          links.unshift(link);
          at = link.srcRouterId === at ? link.dstRouterId : link.srcRouterId;
          path.unshift(at);
        }
        return { routers: path, links, cost };
      },
    };
  }

  private remove(link: Link): void {
    this.byId.delete(link.id);
    for (const end of [link.srcRouterId, link.dstRouterId]) {
      const ids = this.byRouter.get(end);
      ids?.delete(link.id);
      if (ids?.size === 0) this.byRouter.delete(end);
    }
  }
}
