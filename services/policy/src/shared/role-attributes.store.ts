import { type Db, listRows, toListPage } from '@ziti/platform';
import type { ListInput, ListPage } from '@ziti/platform/list-page';
import { defineQueryEntity, scalar } from '@ziti/zitiql';

/** Role attributes are filtered as strings under the symbol `id` (ZITI-FACTS §3.4). */
export const roleAttributeQuery = defineQueryEntity({
  table: 'role_attributes',
  alias: 'r',
  fields: { id: scalar('r.id', 'string') },
});

/**
 * `/…-role-attributes` (ZITI-FACTS §3.4): the distinct role attributes of the rows of `from` (a
 * table with its condition), filtered as strings under `id`; only limit/skip inside the filter page them.
 */
export async function roleAttributesOf(db: Db, from: string, input: ListInput): Promise<ListPage<string>> {
  const listed = await listRows<{ id: string }>(
    db,
    roleAttributeQuery,
    { filter: input.filter ?? '', limit: -1 },
    {
      columns: 'r.id',
      with: { sql: `role_attributes as (select distinct unnest(role_attributes) as id from ${from})`, params: [] },
    },
  );
  return toListPage(listed, (r) => r.id);
}
