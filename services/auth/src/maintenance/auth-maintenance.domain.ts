import { zitiqlString } from '@ziti/zitiql/literal';
import type { EntityStatesRequest, IdentityState, IntegrityResult } from '@ziti/contracts';
import { identityState } from '../identities/identities.domain.ts';
import type { Identity } from '../shared/model.domain.ts';
import type { OutstandingEnrollmentIntegrity } from '../enrollments/outstanding-enrollments.domain.ts';
import type { IdentityStore } from '../identities/identities.ports.ts';
import type { SessionStore } from '../shared/stores.ports.ts';
import type { RouterIdentityIntegrity } from '../router-identities/router-identity-integrity.domain.ts';

/** A ZitiQL string literal. */

/** What auth's maintenance calls read; `Tx` is a transaction the caller opened, opaque here. */
export interface AuthMaintenancePorts<Tx> {
  /** The identity store bound to `tx`. */
  identities: (tx: Tx) => Pick<IdentityStore, 'list'>;
  /** Live API sessions (in Redis), which `/summary` counts as `apiSessions`. */
  sessions?: Pick<SessionStore, 'countLive'>;
  /** Router identities against inventory's edge routers. */
  routerIdentities: Pick<RouterIdentityIntegrity, 'check'>;
  /** The read model of pki-enrollment's outstanding enrollments (docs/adr/0012), checked against its pages. */
  outstandingEnrollments?: Pick<OutstandingEnrollmentIntegrity, 'check'>;
}

/**
 * What auth's service-wide maintenance calls answer besides the platform's own: the counts of what
 * it keeps outside Postgres, its integrity check and fix, and the states of the identities it owns.
 */
export class AuthMaintenance<Tx> {
  constructor(private readonly ports: AuthMaintenancePorts<Tx>) {}

  /** Counts `/summary` reports besides the tables: live API sessions, when auth has their store. */
  async summaryCounts(): Promise<Record<string, number>> {
    return this.ports.sessions ? { apiSessions: await this.ports.sessions.countLive() } : {};
  }

  /** Router identities against inventory's edge routers, then the read model of outstanding enrollments. */
  async check(fix: boolean): Promise<IntegrityResult[]> {
    return [
      ...(await this.ports.routerIdentities.check(fix)),
      ...(this.ports.outstandingEnrollments ? await this.ports.outstandingEnrollments.check(fix) : []),
    ];
  }

  /**
   * One page of identity states in bytewise id order, read through `tx` (the platform's, at its
   * event position) by the identity store, so states match the events.
   */
  async identityStates(request: EntityStatesRequest, tx: Tx): Promise<IdentityState[]> {
    return (await this.identityPage(this.ports.identities(tx), request)).map((i) => identityState(i));
  }

  private async identityPage(
    identities: Pick<IdentityStore, 'list'>,
    request: EntityStatesRequest,
  ): Promise<Identity[]> {
    if (request.ids) {
      if (request.ids.length === 0) return [];
      return (
        await identities.list({ filter: `id in [${request.ids.map(zitiqlString).join(', ')}] sort by id limit none` })
      ).items;
    }
    const where = request.after === undefined ? 'true' : `id > ${zitiqlString(request.after)}`;
    return (await identities.list({ filter: `${where} sort by id limit ${request.limit ?? 500}` })).items;
  }
}
