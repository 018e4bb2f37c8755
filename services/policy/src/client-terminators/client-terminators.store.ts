import type { Db } from '@ziti/platform';
import { serviceVisible } from '../read-models/read-model-queries.store.ts';
import type { ServiceVisibility } from './client-terminators.ports.ts';

/** Whether the caller may see the service whose terminators it asks for (the read models' access tables). */
export class PgServiceVisibility implements ServiceVisibility {
  constructor(private readonly db: Db) {}

  serviceVisible(serviceId: string, identityId: string, isAdmin: boolean): Promise<boolean> {
    return serviceVisible(this.db, serviceId, identityId, isAdmin);
  }
}
