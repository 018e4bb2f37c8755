import {
  type FleetSignal,
  type ReplicaInstruction,
  fabricReplicaSubject,
  routeOutcomeReplySchema,
  signalSubjects,
} from '@ziti/contracts';
import type { Bus } from '@ziti/platform';
import type { RoutableRouter, RouteInstruction, RouteOutcome } from '../routers/router-link.ports.ts';
import type { FleetBroadcast } from './router-peers.domain.ts';

/** The fleet signals over the bus (core NATS under the cluster; the one process under `npm start`). */
export class BusFleetBroadcast implements FleetBroadcast {
  constructor(private readonly bus: Bus) {}

  send(signal: FleetSignal): void {
    this.bus.signal?.(signalSubjects.fleet, signal);
  }
}

export const peerDataToWire = (m: Map<number, Uint8Array>): Record<string, string> =>
  Object.fromEntries([...m].map(([k, v]) => [String(k), Buffer.from(v).toString('base64')]));

export const peerDataFromWire = (r: Record<string, string>): Map<number, Uint8Array> =>
  new Map(Object.entries(r).map(([k, v]) => [Number(k), new Uint8Array(Buffer.from(v, 'base64'))]));

/**
 * A router another fabric replica holds, instructed through that replica (its own subject,
 * `fabricReplicaSubject`): Route waits for the answer it relays; Unroute and link faults are sent
 * and not waited for (the reference sends them without waiting too).
 */
export class RemoteRouter implements RoutableRouter {
  readonly remoteAddress: string;

  constructor(
    private readonly bus: Bus,
    readonly routerId: string,
    readonly replicaId: string,
  ) {
    this.remoteAddress = `fabric replica ${replicaId}`;
  }

  async route(route: RouteInstruction, timeoutMs: number): Promise<RouteOutcome> {
    const instruction: ReplicaInstruction = {
      kind: 'route',
      routerId: this.routerId,
      timeoutMs,
      route: {
        circuitId: route.circuitId,
        attempt: route.attempt,
        timeoutMs: route.timeoutMs,
        forwards: route.forwards,
        ...(route.egress ? { egress: { ...route.egress, peerData: peerDataToWire(route.egress.peerData) } } : {}),
        tags: route.tags,
      },
    };
    let reply: unknown;
    try {
      // The holding replica waits `timeoutMs` for the router; the bus a little longer for its answer.
      reply = await this.bus.request(fabricReplicaSubject(this.replicaId), instruction, {
        timeoutMs: timeoutMs + 2_000,
      });
    } catch {
      return { outcome: 'timedOut' };
    }
    const parsed = routeOutcomeReplySchema.safeParse(reply);
    if (!parsed.success)
      return { outcome: 'failed', attempt: route.attempt, errorCode: null, error: 'bad route answer' };
    const o = parsed.data;
    return o.outcome === 'routed' ? { ...o, peerData: peerDataFromWire(o.peerData) } : o;
  }

  unroute(circuitId: string, now: boolean): void {
    this.send({ kind: 'unroute', routerId: this.routerId, circuitId, now });
  }

  linkFaulted(linkId: string, iteration: number): void {
    this.send({ kind: 'linkFaulted', routerId: this.routerId, linkId, iteration });
  }

  private send(instruction: ReplicaInstruction): void {
    void this.bus
      .request(fabricReplicaSubject(this.replicaId), instruction, { timeoutMs: 5_000 })
      .catch(() => undefined);
  }
}
