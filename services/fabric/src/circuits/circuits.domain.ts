import type { DialTerminator } from '@ziti/contracts';
import { shortId } from '@ziti/platform/ids';
import type { Logger } from '@ziti/platform/logger';
import type { ApiSessionSync } from '../api-sessions/api-session-sync.domain.ts';
import type { RouterLink, RouteOutcome } from '../routers/router-link.ports.ts';
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
    private readonly links: (routerId: string) => RouterLink | undefined,
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
      const selection = selectTerminator({
        serviceId: service.id,
        strategy: service.terminatorStrategy,
        instanceId: req.terminatorInstanceId,
        terminators,
        dynamicCost: (id) => this.costs.cost(id),
        // One router carries the circuit alone when it hosts the terminator.
        pathCost: (routerId) => (routerId === link.routerId ? 0 : undefined),
      });
      if (selection.outcome !== 'selected') return refuse({ code: 'internal', message: selection.message });
      const terminator = selection.terminator;
      const egress = this.links(terminator.routerId);
      if (!egress) return refuse({ code: 'internal', message: `router ${terminator.routerId} is not connected` });
      // ziti `sessionCircuitParams.GetCircuitTags`: who dials what, hosted by whom.
      const tags = { serviceId: service.id, clientId: verdict.session.identityId, hostId: terminator.hostId };
      const ingressId = shortId(10);
      const egressId = shortId(10);
      const routed = await egress.route(
        {
          circuitId,
          attempt,
          timeoutMs: this.options.routeTimeoutMs,
          forwards: [
            { srcAddress: ingressId, dstAddress: egressId, dstType: 'end' },
            { srcAddress: egressId, dstAddress: ingressId, dstType: 'start' },
          ],
          egress: {
            binding: terminator.binding,
            address: egressId,
            destination: terminator.address,
            peerData: req.peerData,
          },
          tags,
        },
        this.options.routeTimeoutMs,
      );
      if (routed.outcome === 'routed') {
        const peerData = returnPeerData(terminator, routed);
        if (service.encryptionRequired && !peerData.has(peerDataKeys.publicKey)) {
          egress.unroute(circuitId, true);
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
          path: [terminator.routerId],
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
      if (routed.outcome === 'failed' && routed.errorCode === invalidTerminatorError && terminator.binding === 'edge') {
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
      egress.unroute(circuitId, true);
      if (routed.outcome === 'closed') break;
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
function returnPeerData(terminator: DialTerminator, routed: Extract<RouteOutcome, { outcome: 'routed' }>) {
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
