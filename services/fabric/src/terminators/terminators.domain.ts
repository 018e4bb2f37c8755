import type { TerminatorPrecedence } from '@ziti/contracts';
import type { Logger } from '@ziti/platform/logger';
import type { ApiSessionSync } from '../api-sessions/api-session-sync.domain.ts';
import type { RouterLink } from '../routers/router-link.ports.ts';
import { type EdgeRefusal, checkFingerprints, refusalOf } from '../shared/session-checks.domain.ts';
import type { SessionAuthority, TerminatorOwner } from './terminators.ports.ts';

/** A hosting SDK's bind, as its router relays it (CreateTerminatorV2Request). */
export interface BindRequest {
  sessionToken: string;
  apiSessionToken: string;
  fingerprints: string[];
  /** The terminator id the router chose (its address). */
  address: string;
  instanceId: string;
  instanceSecret: Uint8Array;
  peerData: Map<number, Uint8Array>;
  cost: number;
  precedence: TerminatorPrecedence;
}

export type BindOutcome =
  | { outcome: 'bound'; terminatorId: string }
  | { outcome: 'refused'; terminatorId: string; result: 'invalidSession' | 'idConflict' | 'other'; message: string };

/**
 * Terminators from routers (ziti `controller/handler_edge_ctrl/create_terminator_v2.go`): a bind is
 * checked as the reference checks it — a terminator id, a Bind session policy lets this identity
 * use through this router, a certificate of the session's — then inventory creates the terminator
 * (or keeps the one already there for the same host). An unbind removes the router's terminators.
 */
export class Terminators {
  constructor(
    private readonly sessions: SessionAuthority,
    private readonly owner: TerminatorOwner,
    private readonly apiSessions: Pick<ApiSessionSync, 'session'>,
    private readonly logger: Logger,
  ) {}

  async bind(link: RouterLink, req: BindRequest): Promise<BindOutcome> {
    const refuse = (result: 'invalidSession' | 'idConflict' | 'other', message: string): BindOutcome => {
      this.logger.info({ routerId: link.routerId, terminatorId: req.address, result, message }, 'bind refused');
      return { outcome: 'refused', terminatorId: req.address, result, message };
    };
    if (req.address === '') return refuse('other', 'provided terminator id is blank');
    const verdict = await this.sessions.authorize(req.sessionToken, 'Bind', link.routerId);
    if (verdict.outcome !== 'allowed') {
      const refusal: EdgeRefusal = refusalOf(verdict.outcome);
      return refuse(verdict.outcome === 'invalidSession' ? 'invalidSession' : 'other', refusal.message);
    }
    const fingerprintRefusal = await checkFingerprints(this.apiSessions, verdict.session, req.fingerprints);
    if (fingerprintRefusal) return refuse('other', fingerprintRefusal.message);
    if (!Number.isInteger(req.cost) || req.cost < 0 || req.cost > 65_535)
      return refuse('other', `invalid cost ${req.cost}. cost must be between 0 and 65535 inclusive`);
    const origin = {
      operation: 'ctrl.createTerminatorV2',
      routerId: link.routerId,
      remoteAddress: link.remoteAddress,
      identityId: verdict.session.identityId,
      apiSessionId: verdict.session.apiSessionId,
    };
    const created = await this.owner.create(
      {
        id: req.address,
        serviceId: verdict.session.serviceId,
        routerId: link.routerId,
        binding: 'edge',
        instanceId: req.instanceId,
        instanceSecret: Buffer.from(req.instanceSecret).toString('base64'),
        peerData: Object.fromEntries([...req.peerData].map(([k, v]) => [String(k), Buffer.from(v).toString('base64')])),
        cost: req.cost,
        precedence: req.precedence,
        hostId: verdict.session.identityId,
      },
      origin,
    );
    switch (created.outcome) {
      case 'created':
      case 'exists':
        this.logger.info(
          { routerId: link.routerId, terminatorId: created.terminatorId, serviceId: verdict.session.serviceId },
          created.outcome === 'created' ? 'created terminator' : 'terminator already exists',
        );
        return { outcome: 'bound', terminatorId: created.terminatorId };
      case 'conflict':
        return refuse('idConflict', created.reason);
      case 'unknownService':
        return refuse('other', 'invalid service');
    }
  }

  /** The router removed these terminators (RemoveTerminatorsRequest); only its own go. */
  async unbind(link: RouterLink, ids: string[], operation = 'ctrl.removeTerminators'): Promise<string[]> {
    if (ids.length === 0) return [];
    const origin = { operation, routerId: link.routerId, remoteAddress: link.remoteAddress };
    const removed = await this.owner.remove(link.routerId, ids, origin);
    if (removed.length > 0) this.logger.info({ routerId: link.routerId, removed }, 'removed terminators');
    return removed;
  }

  /**
   * A router (re)connected: the terminators inventory has for it are checked against what it has
   * (ValidateTerminatorsV2), and those it no longer knows are removed, so dials do not go to hosts of
   * a router process that is gone.
   */
  async validate(link: RouterLink): Promise<void> {
    const terminators = (await this.owner.ofRouter(link.routerId)).filter((t) => t.binding === 'edge');
    if (terminators.length === 0) return;
    const states = await link.validateTerminators(
      terminators.map((t) => ({ id: t.id, binding: t.binding, address: t.address })),
      30_000,
    );
    const invalid = terminators.filter((t) => states.get(t.id)?.valid === false).map((t) => t.id);
    if (invalid.length > 0) await this.unbind(link, invalid, 'ctrl.validateTerminators');
  }
}
