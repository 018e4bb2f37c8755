import { ApiError } from '@ziti/contracts';
import type { ListInput, ListPage, NamedEntity } from '../shared/model.domain.ts';
import type { UnitOfWork } from '../shared/stores.ports.ts';

/** Identity types (`/identity-types`): the fixed set seeded at start (shared/bootstrap.domain.ts), read only. */
export class IdentityTypeService {
  constructor(private readonly work: UnitOfWork) {}

  list(input: ListInput): Promise<ListPage<NamedEntity>> {
    return this.work((s) => s.identityTypes.list(input));
  }

  /** 404 when there is no such type. */
  async get(id: string): Promise<NamedEntity> {
    const type = await this.work((s) => s.identityTypes.get(id));
    if (!type) throw ApiError.notFound('identityType', id);
    return type;
  }
}
