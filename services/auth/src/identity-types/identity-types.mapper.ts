import type { NamedEntity } from '../shared/model.domain.ts';
import { ts } from '../shared/wire.mapper.ts';

export function identityTypeDetail(t: NamedEntity) {
  return {
    id: t.id,
    createdAt: ts(t.createdAt),
    updatedAt: ts(t.updatedAt),
    tags: {},
    _links: { self: { href: `./identity-types/${t.id}` } },
    name: t.name,
  };
}
