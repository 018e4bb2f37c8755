import type { EntityStatesRequest, IdentityState, IntegrityResult } from '@ziti/contracts';
import { identityState } from '../identities/identities.domain.ts';
import type { OutstandingEnrollmentIntegrity } from '../enrollments/outstanding-enrollments.domain.ts';
import type { IdentityStore } from '../identities/identities.ports.ts';
import type { SessionStore } from '../shared/stores.ports.ts';
import type { RouterIdentityIntegrity } from '../router-identities/router-identity-integrity.domain.ts';

/** What auth's maintenance calls read; `Tx` is a transaction the caller opened, opaque here. */
export interface AuthMaintenancePorts<Tx> {
  /** The identity store bound to `tx`. */
  identities: (tx: Tx) => Pick<IdentityStore, 'page'>;
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
    const page = await this.ports.identities(tx).page(request.after, request.limit ?? 500, request.ids);
    return page.map((i) => identityState(i));
  }
}
