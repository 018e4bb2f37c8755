import type { DialTerminator } from '@ziti/contracts';
import { shortId } from '@ziti/platform/ids';
import type { Logger } from '@ziti/platform/logger';
import type { ApiSessionSync } from '../api-sessions/api-session-sync.domain.ts';
import type { Link, LinkGraph, Path, RouterNode } from '../links/links.domain.ts';
import type { RoutableRouter, RouteInstruction, RouterLink, RouteOutcome } from '../routers/router-link.ports.ts';
import { type EdgeRefusal, checkFingerprints, refusalOf } from '../shared/session-checks.domain.ts';
import type { SessionAuthority, TerminatorOwner } from '../terminators/terminators.ports.ts';
import type { CircuitRecord, CircuitStore } from './circuits.ports.ts';
import { type DynamicCosts, selectTerminator } from './terminator-selection.domain.ts';

/** Peer-data keys the controller reads (sdk-golang `ziti/edge/messages.go`, ziti `common/ctrl_msg`). */
export const peerDataKeys = {
  publicKey: 1003,
  terminatorLocalAddress: 1110,
  terminatorRemoteAddress: 1111,
  initiatorLocalAddress: 1112,
  initiatorRemoteAddress: 1113,
} as const;

/** A client's dial, as its router relays it (CreateCircuitV2Request). */
export interface DialRequest {
  sessionToken: string;
  apiSessionToken: string;
  fingerprints: string[];
  terminatorInstanceId: string;
  peerData: Map<number, Uint8Array>;
}

export type DialOutcome =
  | {
      outcome: 'routed';
      circuitId: string;
      /** The ingress id: where the dialling SDK's data enters the circuit on its router. */
      address: string;
      peerData: Map<number, Uint8Array>;
      tags: Record<string, string>;
    }
  | { outcome: 'refused'; refusal: EdgeRefusal };

type Routed = Extract<RouteOutcome, { outcome: 'routed' }>;
/** A route that did not succeed, with the router of the path that answered so (or went). */
type NotRouted = Exclude<RouteOutcome, Routed> & { routerId: string };

/** The route error code for a terminator the router no longer has (ziti `ctrl_msg.ErrorTypeInvalidTerminator`). */
const invalidTerminatorError = 1;

export interface CircuitOptions {
  replicaId: string;
  /** How long one route attempt waits for the routers' results. */
  routeTimeoutMs: number;
  /** Attempts in all (the reference: 3, `CreateCircuitRetries` 2 after the first). */
  attempts: number;
}

/**
 * Circuits (ziti `controller/network/network.go CreateCircuit`, `handler_edge_ctrl/create_circuit.go`):
 * a dial is checked as the reference checks it (a Dial session policy lets the identity use through
 * this router, a certificate of the session's, the service's encryption demand), a terminator is
 * selected, the path's routers are told to route it and answer, and the circuit is kept until a
 * router reports it faulted. One router carries a circuit alone when it hosts the terminator.
 */
export class Circuits {
  constructor(
    private readonly sessions: SessionAuthority,
    private readonly owner: TerminatorOwner,
    private readonly apiSessions: Pick<ApiSessionSync, 'session'>,
    private readonly links: (routerId: string) => RoutableRouter | undefined,
    /** The links between routers, and the routers connected here that paths may cross. */
    private readonly graph: LinkGraph,
    private readonly nodes: RouterNode,
    private readonly store: CircuitStore,
    private readonly costs: DynamicCosts,
    private readonly options: CircuitOptions,
    private readonly logger: Logger,
  ) {}

  async dial(link: RouterLink, req: DialRequest): Promise<DialOutcome> {
    const refuse = (refusal: EdgeRefusal): DialOutcome => {
      this.logger.info({ routerId: link.routerId, code: refusal.code, message: refusal.message }, 'dial refused');
      return { outcome: 'refused', refusal };
    };
    const verdict = await this.sessions.authorize(req.sessionToken, 'Dial', link.routerId);
    if (verdict.outcome !== 'allowed') return refuse(refusalOf(verdict.outcome));
    const fingerprintRefusal = await checkFingerprints(this.apiSessions, verdict.session, req.fingerprints);
    if (fingerprintRefusal) return refuse(fingerprintRefusal);
    const targets = await this.owner.dialTargets(verdict.session.serviceId);
    const service = targets.service;
    if (!service) return refuse({ code: 'invalidService', message: 'invalid service' });
    if (service.encryptionRequired && !req.peerData.has(peerDataKeys.publicKey))
      return refuse({
        code: 'encryptionDataMissing',
        message: 'encryption required on service, initiator did not send public header',
      });

    const circuitId = shortId(10);
    let terminators = targets.terminators;
    let lastError = '';
    for (let attempt = 0; attempt < this.options.attempts; attempt++) {
      // Paths from the dialler's router over the links, as they are now (a failed link is gone).
      const paths = this.graph.pathsFrom(link.routerId, (id) =>
        id === link.routerId ? { cost: 0, noTraversal: false } : this.nodes(id),
      );
      const selection = selectTerminator({
        serviceId: service.id,
        strategy: service.terminatorStrategy,
        instanceId: req.terminatorInstanceId,
        terminators,
        dynamicCost: (id) => this.costs.cost(id),
        sourceRouterId: link.routerId,
        // One router carries the circuit alone when it hosts the terminator; others are reached over links.
        pathCost: (routerId) => paths.cost(routerId),
      });
      if (selection.outcome !== 'selected') return refuse({ code: 'internal', message: selection.message });
      const terminator = selection.terminator;
      const path = paths.path(terminator.routerId);
      if (!path)
        return refuse({ code: 'internal', message: `can't route from ${link.routerId} -> ${terminator.routerId}` });
      const egress = this.links(terminator.routerId);
      if (!egress) return refuse({ code: 'internal', message: `router ${terminator.routerId} is not connected` });
      // ziti `sessionCircuitParams.GetCircuitTags`: who dials what, hosted by whom.
      const tags = { serviceId: service.id, clientId: verdict.session.identityId, hostId: terminator.hostId };
      const ingressId = shortId(10);
      const egressId = shortId(10);
      const routes = routeInstructions(path, {
        circuitId,
        attempt,
        ingressId,
        egressId,
        timeoutMs: this.options.routeTimeoutMs,
        egress: { binding: terminator.binding, destination: terminator.address, peerData: req.peerData },
        tags,
      });
      const routed = await this.routeAll(path, routes);
      if (routed.outcome === 'routed') {
        const peerData = returnPeerData(terminator, routed);
        if (service.encryptionRequired && !peerData.has(peerDataKeys.publicKey)) {
          this.unrouteAll(path, circuitId);
          return refuse({
            code: 'encryptionDataMissing',
            message: 'encryption required on service, terminator did not send public header',
          });
        }
        this.costs.dialSucceeded(terminator.id);
        const circuit: CircuitRecord = {
          id: circuitId,
          sessionId: verdict.session.id,
          apiSessionId: verdict.session.apiSessionId,
          identityId: verdict.session.identityId,
          serviceId: service.id,
          terminatorId: terminator.id,
          path: path.routers,
          links: path.links.map((l) => l.id),
          ingressId,
          egressId,
          replicaId: this.options.replicaId,
          createdAt: new Date().toISOString(),
        };
        await this.store.add(circuit);
        this.logger.debug({ circuitId, serviceId: service.id, terminatorId: terminator.id }, 'created circuit');
        return { outcome: 'routed', circuitId, address: ingressId, peerData, tags };
      }
      this.costs.dialFailed(terminator.id);
      lastError = describeFailure(routed);
      this.logger.warn({ circuitId, attempt, terminatorId: terminator.id, error: lastError }, 'route attempt failed');
      if (
        routed.outcome === 'failed' &&
        routed.routerId === terminator.routerId &&
        routed.errorCode === invalidTerminatorError &&
        terminator.binding === 'edge'
      ) {
        // The router no longer has it (its host went): it goes, and the next attempt picks another.
        await this.owner
          .remove(terminator.routerId, [terminator.id], {
            operation: 'ctrl.routeResult',
            routerId: egress.routerId,
            remoteAddress: egress.remoteAddress,
          })
          .catch(() => undefined);
        terminators = terminators.filter((t) => t.id !== terminator.id);
      }
      this.unrouteAll(path, circuitId);
      // The terminator's router went: it cannot take another attempt (a transit router's loss can).
      if (routed.outcome === 'closed' && routed.routerId === terminator.routerId) break;
    }
    return refuse({
      code: 'internal',
      message: `exceeded maximum [${this.options.attempts - 1}] retries creating circuit [c/${circuitId}] (${lastError})`,
    });
  }

  /**
   * A router reports circuits that ended at its edge (the SDK closed, the host went) or that it does
   * not know: they go, and every router on their path forgets them.
   */
  async faulted(circuitIds: string[]): Promise<void> {
    for (const id of circuitIds) {
      const circuit = await this.store.remove(id);
      if (!circuit) continue;
      this.costs.circuitRemoved(circuit.terminatorId);
      for (const routerId of new Set(circuit.path)) this.links(routerId)?.unroute(id, true);
      this.logger.debug({ circuitId: id }, 'circuit removed');
    }
  }

  /**
   * Sends each router of the path its part (`rs.route`: all at once) and waits for every result:
   * the circuit is routed when all are; the egress router's answer carries the host's peer data.
   */
  private async routeAll(path: Path, routes: RouteInstruction[]): Promise<Routed | NotRouted> {
    const results = await Promise.all(
      path.routers.map(async (routerId, i) => {
        const router = this.links(routerId);
        const outcome: RouteOutcome = router
          ? await router.route(routes[i]!, this.options.routeTimeoutMs)
          : { outcome: 'closed' };
        return { routerId, outcome };
      }),
    );
    const failed = results.find((r) => r.outcome.outcome !== 'routed');
    if (failed) return { ...(failed.outcome as Exclude<RouteOutcome, Routed>), routerId: failed.routerId };
    return results[results.length - 1]!.outcome as Routed;
  }

  private unrouteAll(path: Path, circuitId: string): void {
    for (const routerId of path.routers) this.links(routerId)?.unroute(circuitId, true);
  }

  /** Links went (a fault, a router gone): the circuits that crossed them go too. */
  async linksGone(links: Link[]): Promise<void> {
    const ids = new Set(links.map((l) => l.id));
    const crossing = new Set<string>();
    for (const routerId of new Set(links.map((l) => l.srcRouterId))) {
      for (const c of await this.store.ofRouter(routerId)) if (c.links?.some((l) => ids.has(l))) crossing.add(c.id);
    }
    await this.faulted([...crossing]);
  }

  /** A router went: the circuits through it go with it (the routers still connected forget them). */
  async routerGone(routerId: string): Promise<void> {
    const circuits = await this.store.ofRouter(routerId);
    await this.faulted(circuits.map((c) => c.id));
  }

  /** Session id → the routers of its live circuits, in path order, each once. */
  async routePaths(sessionIds: string[]): Promise<Record<string, string[]>> {
    const bySession = await this.store.ofSessions(sessionIds);
    const out: Record<string, string[]> = {};
    for (const [sessionId, circuits] of bySession) out[sessionId] = [...new Set(circuits.flatMap((c) => c.path))];
    return out;
  }
}

/** The terminator's static peer data, then what its router answered (minus the address headers). */
function returnPeerData(terminator: DialTerminator, routed: Routed) {
  const out = new Map<number, Uint8Array>();
  for (const [k, v] of Object.entries(terminator.peerData)) out.set(Number(k), Buffer.from(v, 'base64'));
  for (const [k, v] of routed.peerData) {
    if (
      k === peerDataKeys.initiatorLocalAddress ||
      k === peerDataKeys.initiatorRemoteAddress ||
      k === peerDataKeys.terminatorLocalAddress ||
      k === peerDataKeys.terminatorRemoteAddress
    )
      continue;
    out.set(k, v);
  }
  return out;
}

function describeFailure(o: Exclude<RouteOutcome, { outcome: 'routed' }>): string {
  switch (o.outcome) {
    case 'failed':
      return o.error || `error code ${o.errorCode ?? 'none'}`;
    case 'timedOut':
      return 'timeout waiting for message reply';
    case 'closed':
      return 'the router disconnected';
  }
}

/**
 * The Route message of each router on the path (ziti `network_path.go CreateRouteMessages`): one
 * router forwards ingress ↔ egress itself; over links, the first forwards ingress ↔ its link, each
 * transit router link ↔ link, the last its link ↔ egress and dials the terminator.
 */
export function routeInstructions(
  path: Path,
  c: {
    circuitId: string;
    attempt: number;
    ingressId: string;
    egressId: string;
    timeoutMs: number;
    egress: { binding: string; destination: string; peerData: Map<number, Uint8Array> };
    tags: Record<string, string>;
  },
): RouteInstruction[] {
  const base = { circuitId: c.circuitId, attempt: c.attempt, timeoutMs: c.timeoutMs, tags: c.tags };
  const egress = { ...c.egress, address: c.egressId };
  if (path.links.length === 0)
    return [
      {
        ...base,
        forwards: [
          { srcAddress: c.ingressId, dstAddress: c.egressId, dstType: 'end' },
          { srcAddress: c.egressId, dstAddress: c.ingressId, dstType: 'start' },
        ],
        egress,
      },
    ];
  const ids = path.links.map((l) => l.id);
  const out: RouteInstruction[] = [
    {
      ...base,
      forwards: [
        { srcAddress: c.ingressId, dstAddress: ids[0]!, dstType: 'link' },
        { srcAddress: ids[0]!, dstAddress: c.ingressId, dstType: 'start' },
      ],
    },
  ];
  for (let i = 0; i < ids.length - 1; i++)
    out.push({
      ...base,
      forwards: [
        { srcAddress: ids[i]!, dstAddress: ids[i + 1]!, dstType: 'link' },
        { srcAddress: ids[i + 1]!, dstAddress: ids[i]!, dstType: 'link' },
      ],
    });
  const last = ids[ids.length - 1]!;
  out.push({
    ...base,
    forwards: [
      { srcAddress: c.egressId, dstAddress: last, dstType: 'link' },
      { srcAddress: last, dstAddress: c.egressId, dstType: 'end' },
    ],
    egress,
  });
  return out;
}
