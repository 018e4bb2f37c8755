import {
  type RouteOutcomeWire,
  fabricReplicaSubject,
  fleetSignalSchema,
  replicaInstructionSchema,
  signalSubjects,
} from '@ziti/contracts';
import type { Bus, Logger, Served, Tail } from '@ziti/platform';
import type { HeldLinks } from '../routers/router-link.ports.ts';
import { peerDataFromWire, peerDataToWire } from './fleet.adapter.ts';
import type { RouterPeers } from './router-peers.domain.ts';

/**
 * This replica's part of the fleet (docs/adr/0026): it follows the other replicas' signals, says
 * what it holds every third of a lease (and at once when asked), drops replicas gone silent, and
 * carries out the instructions the others send for the routers it holds.
 */
export class FleetFollower {
  private tail?: Tail;
  private served?: Served;
  private beat?: NodeJS.Timeout;

  constructor(
    private readonly bus: Bus,
    private readonly replicaId: string,
    private readonly peers: RouterPeers,
    private readonly held: HeldLinks,
    private readonly leaseMs: number,
    private readonly logger: Logger,
  ) {}

  start(): void {
    if (this.bus.listen) {
      this.tail = this.bus.listen(
        signalSubjects.fleet,
        (payload) => {
          const parsed = fleetSignalSchema.safeParse(payload);
          if (!parsed.success) {
            this.logger.warn({ problem: parsed.error.issues[0]?.message }, 'a malformed fleet signal dropped');
            return;
          }
          this.peers.signalled(parsed.data);
        },
        () => this.peers.resynchronise(),
      );
    }
    this.served = this.bus.serve(fabricReplicaSubject(this.replicaId), this.replicaId, (payload) =>
      this.instruct(payload),
    );
    this.peers.resynchronise();
    this.beat = setInterval(
      () => {
        this.peers.announce();
        this.peers.expireReplicas();
      },
      Math.max(250, Math.floor(this.leaseMs / 3)),
    );
    this.beat.unref();
  }

  async stop(): Promise<void> {
    if (this.beat) clearInterval(this.beat);
    await this.tail?.stop();
    await this.served?.drain();
  }

  private async instruct(payload: unknown): Promise<RouteOutcomeWire | { ok: true }> {
    const parsed = replicaInstructionSchema.safeParse(payload);
    if (!parsed.success) return { outcome: 'failed', attempt: 0, errorCode: null, error: 'malformed instruction' };
    const i = parsed.data;
    const link = this.held.local(i.routerId);
    switch (i.kind) {
      case 'route': {
        if (!link || link.closed) return { outcome: 'closed' };
        const { egress, ...route } = i.route;
        const o = await link.route(
          { ...route, ...(egress ? { egress: { ...egress, peerData: peerDataFromWire(egress.peerData) } } : {}) },
          i.timeoutMs,
        );
        return o.outcome === 'routed' ? { ...o, peerData: peerDataToWire(o.peerData) } : o;
      }
      case 'unroute':
        link?.unroute(i.circuitId, i.now);
        return { ok: true };
      case 'linkFaulted':
        link?.linkFaulted(i.linkId, i.iteration);
        return { ok: true };
    }
  }
}
