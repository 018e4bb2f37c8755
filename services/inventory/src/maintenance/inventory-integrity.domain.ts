import type { IntegrityResult } from '@ziti/contracts';
import type { SchemaValidator } from '../config-types/config-types.ports.ts';
import { emitIdentityServiceConfigs } from '../identity-service-configs/identity-service-configs.domain.ts';
import type { IdentityDirectory } from '../identity-service-configs/identity-service-configs.ports.ts';
import type { UnitOfWork } from '../shared/stores.ports.ts';
import { maxIntegrityResults } from './database-maintenance.domain.ts';

const page = 500;

/**
 * inventory's own data-integrity checks (the foreign keys guard the rest):
 * - configs whose data no longer satisfies their type's schema (the schema changed after they
 *   were written) — reported, not fixable automatically;
 * - identity service configs of identities auth no longer has (a missed `identity.deleted`) —
 *   removed when fixing;
 * - edge routers whose verification state and certificate disagree — reported.
 */
export async function checkInventoryIntegrity(
  work: UnitOfWork,
  schemas: SchemaValidator,
  identities: IdentityDirectory,
  fix: boolean,
): Promise<IntegrityResult[]> {
  const results: IntegrityResult[] = [];
  const full = () => results.length > maxIntegrityResults;

  const types = await work((s) => s.configTypes.list({ limit: -1 }));
  for (const type of types.items) {
    if (Object.keys(type.schema).length === 0) continue;
    let after: string | undefined;
    for (;;) {
      const configs = await work((s) => s.configs.listByType(type.id, after, page));
      for (const c of configs) {
        const violation = schemas.violation(type.schema, c.data);
        if (violation)
          results.push({
            description: `config ${c.id} (${c.name}) does not satisfy the schema of config type ${type.name}: ${violation.reason}`,
            fixed: false,
          });
      }
      if (configs.length < page || full()) break;
      after = configs[configs.length - 1]!.id;
    }
    if (full()) return results;
  }

  let after: string | undefined;
  for (;;) {
    const ids = await work((s) => s.identityServiceConfigs.identityIds(after, page));
    if (ids.length === 0) break;
    const existing = await identities.existing(ids);
    for (const id of ids) {
      if (existing.has(id)) continue;
      let fixed = false;
      if (fix) {
        await work(async (s) => {
          if ((await s.identityServiceConfigs.deleteByIdentity(id)) > 0) await emitIdentityServiceConfigs(s, [id]);
        });
        fixed = true;
      }
      results.push({ description: `identity service configs of identity ${id}, which no longer exists`, fixed });
    }
    if (ids.length < page || full()) break;
    after = ids[ids.length - 1];
  }

  let routerAfter: string | undefined;
  for (;;) {
    const routers = await work((s) => s.routers.page('edge', routerAfter, page));
    for (const r of routers) {
      if (r.isVerified && !r.fingerprint)
        results.push({
          description: `edge router ${r.id} (${r.name}) is verified but has no certificate fingerprint`,
          fixed: false,
        });
      if (!r.isVerified && r.fingerprint)
        results.push({
          description: `edge router ${r.id} (${r.name}) has a certificate but is not verified`,
          fixed: false,
        });
    }
    if (routers.length < page || full()) break;
    routerAfter = routers[routers.length - 1]!.id;
  }
  return results;
}
