import {
  type IntegrityResult,
  edgeRouterState,
  identityState,
  routerPresenceState,
  serviceState,
} from '@ziti/contracts';
import type { z } from 'zod';
import type { AccessDerivation } from '../access/access.domain.ts';
import { reconcileReadModel } from '../read-models/read-model-integrity.domain.ts';
import type { EntityReadModel } from '../read-models/read-models.ports.ts';
import type { PolicyIntegrityPorts } from './policy-integrity.ports.ts';

const parser =
  <S>(schema: z.ZodType<S>) =>
  (raw: Record<string, unknown>): S | null => {
    const parsed = schema.safeParse(raw);
    return parsed.success ? parsed.data : null;
  };

/**
 * policy's integrity check: each read model against its owner (identities → auth, services, edge
 * routers and router presence → inventory); fixing re-applies the owner's state. Then derived
 * access against a computation from scratch (docs/adr/0009).
 */
export class PolicyIntegrity {
  constructor(
    private readonly ports: PolicyIntegrityPorts,
    private readonly access: AccessDerivation,
  ) {}

  private reconcile<S extends { id: string; name?: string }>(
    entity: string,
    owner: 'auth' | 'inventory',
    type: 'identity' | 'service' | 'edgeRouter' | 'routerPresence',
    model: EntityReadModel<S>,
    schema: z.ZodType<S>,
    fix: boolean,
  ): Promise<IntegrityResult[]> {
    return reconcileReadModel({
      entity,
      model,
      ownerPages: this.ports.ownerPages(owner, type),
      parse: parser(schema),
      fix,
    });
  }

  async check(fix: boolean): Promise<IntegrityResult[]> {
    const { readModels } = this.ports;
    return (
      [
        ...(await this.ports.parkedEvents()),
        ...(await this.reconcile('identity', 'auth', 'identity', readModels.identities, identityState, fix)),
        ...(await this.reconcile('service', 'inventory', 'service', readModels.services, serviceState, fix)),
        ...(await this.reconcile(
          'edge router',
          'inventory',
          'edgeRouter',
          readModels.edgeRouters,
          edgeRouterState,
          fix,
        )),
        ...(await this.reconcile(
          'router presence',
          'inventory',
          'routerPresence',
          readModels.routerPresence,
          routerPresenceState,
          fix,
        )),
      ]
        .map((r) => ({ ...r, description: `read model: ${r.description}` }))
        // After the read models: derived access against a computation from scratch (docs/adr/0009).
        .concat(await this.ports.accessWork(({ links, events }) => this.access.check(links, events, fix)))
    );
  }
}
