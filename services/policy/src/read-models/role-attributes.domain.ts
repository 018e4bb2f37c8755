import type { ListInput, ListPage } from '@ziti/platform/list-page';
import type { RoleAttributeReader, RoleAttributeSource } from './role-attributes.ports.ts';

/**
 * `/identity-role-attributes`, `/service-role-attributes`, `/edge-router-role-attributes`: the
 * distinct attributes of the live entities of policy's read models (ZITI-FACTS §3.4).
 */
export class RoleAttributeService {
  constructor(private readonly read: RoleAttributeReader) {}

  list(of: RoleAttributeSource, filter: string | undefined): Promise<ListPage<string>> {
    const input: ListInput = filter === undefined ? {} : { filter };
    return this.read((s) => s[of].roleAttributes(input));
  }
}
