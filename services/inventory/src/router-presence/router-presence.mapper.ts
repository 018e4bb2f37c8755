import type { AdmittableRouter } from '@ziti/contracts';
import type { Router } from '../shared/model.domain.ts';

/** What fabric admits a connecting router by (`fabric.routerAdmission`). */
export function admittableRouter(r: Router): AdmittableRouter {
  return {
    id: r.id,
    name: r.name,
    kind: r.kind,
    fingerprint: r.fingerprint,
    isVerified: r.isVerified,
    disabled: r.disabled,
    cost: r.cost,
    noTraversal: r.noTraversal,
    isTunnelerEnabled: r.isTunnelerEnabled,
  };
}
