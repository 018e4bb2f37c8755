import {
  apiSessionSignalSchema,
  authenticatorState,
  edgeRouterState,
  eventTypes,
  inventoryEventTypes,
  signalSubjects,
  subjects,
} from '@ziti/contracts';
import type { Bus, EventEnvelope, Logger, Tail } from '@ziti/platform';
import type { RouterConnections } from '../routers/router-connections.domain.ts';
import type { ApiSessionSync } from './api-session-sync.domain.ts';

/**
 * What every fabric replica follows for the routers it holds (docs/adr/0023), for itself alone:
 * auth's signals of opened API sessions, auth's events of ended sessions and changed certificates,
 * and inventory's events of changed routers. Whatever may have been missed (a follower restarted,
 * NATS reconnected) is made good by synchronising every held router again.
 */
export class EdgeStateFollower {
  private readonly stops: (() => Promise<void>)[] = [];

  constructor(
    private readonly bus: Bus,
    private readonly apiSessions: ApiSessionSync,
    private readonly routers: RouterConnections,
    private readonly logger: Logger,
  ) {}

  async start(): Promise<void> {
    if (!this.bus.listen || !this.bus.tail) throw new Error('fabric needs a bus with signals and tails');
    const listening = this.bus.listen(
      signalSubjects.apiSessions,
      (payload) => {
        const parsed = apiSessionSignalSchema.safeParse(payload);
        if (!parsed.success) return this.logger.warn('an API-session signal of an unknown shape was ignored');
        if (parsed.data.kind === 'opened') this.apiSessions.opened(parsed.data.session);
        else void this.apiSessions.identitiesChanged([parsed.data.session.identityId]).catch(this.failed);
      },
      () => this.resync('API-session signals may have been missed'),
    );
    this.stops.push(() => listening.stop());
    const sessionEvents = [eventTypes.apiSessionDeleted, eventTypes.apiSessionExpired];
    const certificateEvents = [
      eventTypes.authenticatorCreated,
      eventTypes.authenticatorUpdated,
      eventTypes.authenticatorDeleted,
    ];
    const routerEvents = [inventoryEventTypes.edgeRouterUpdated, inventoryEventTypes.edgeRouterDeleted];
    const tail: Tail = await this.bus.tail(
      [
        ...[...sessionEvents, ...certificateEvents].map((d) => subjects.event('auth', d.type)),
        ...routerEvents.map((d) => subjects.event('inventory', d.type)),
      ],
      (event) => this.apply(event),
      () => this.resync('events may have been missed'),
    );
    this.stops.push(() => tail.stop());
  }

  private apply(event: EventEnvelope): void {
    const { type, data } = event;
    if (event.source === 'auth') {
      if (type === eventTypes.apiSessionDeleted.type || type === eventTypes.apiSessionExpired.type) {
        const id = (data as { id?: unknown }).id;
        if (typeof id === 'string') this.apiSessions.ended([id]);
        return;
      }
      const parsed = authenticatorState.safeParse(data);
      if (parsed.success) void this.apiSessions.identitiesChanged([parsed.data.identityId]).catch(this.failed);
      return;
    }
    const router = edgeRouterState.safeParse(data);
    if (!router.success) return;
    this.routers.routerChanged(
      router.data.id,
      type === inventoryEventTypes.edgeRouterDeleted.type ? null : router.data,
    );
  }

  private readonly failed = (err: unknown) => this.logger.warn({ err }, 'an edge-state change could not be applied');

  private resync(why: string): void {
    this.logger.warn({ why }, 'resynchronising every held router');
    void this.routers.recheckAll().catch(this.failed);
    void this.apiSessions.resyncAll().catch(this.failed);
  }

  async stop(): Promise<void> {
    for (const stop of this.stops.splice(0)) await stop().catch(() => undefined);
  }
}
