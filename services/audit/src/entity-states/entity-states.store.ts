import type { EntityOwner, EntityStateType } from '@ziti/contracts';
import {
  type Db,
  type LockOption,
  type OwnerStatesPage,
  type RebuildableReadModel,
  json,
  lockClause,
  queryRows,
} from '@ziti/platform';
import { asEventState } from '../trail/entity-kinds.domain.ts';
import type { EntityStateValue } from '../trail/state-diff.domain.ts';
import type { EntityStateStore, KnownEntityState } from './entity-states.ports.ts';

interface Row {
  state: unknown;
  deleted: boolean;
  source_sequence: string | number;
}

export class PgEntityStateStore implements EntityStateStore {
  constructor(private readonly db: Db) {}

  async get(entityType: string, id: string, options: LockOption = {}): Promise<KnownEntityState | null> {
    const [row] = await queryRows<Row>(
      this.db,
      `select state, deleted, source_sequence from entity_states where entity_type = $1 and id = $2${lockClause(options)}`,
      [entityType, id],
    );
    return row
      ? { state: json<EntityStateValue>(row.state, {}), deleted: row.deleted, position: Number(row.source_sequence) }
      : null;
  }

  async put(
    entry: { entityType: string; id: string; source: EntityOwner; state: EntityStateValue; deleted: boolean },
    position: number,
  ): Promise<boolean> {
    return (await this.replace(entry, position)).stored;
  }

  async replace(
    entry: { entityType: string; id: string; source: EntityOwner; state: EntityStateValue; deleted: boolean },
    position: number,
    nameOf?: { entityType: string; id: string },
  ): Promise<{ known: KnownEntityState | null; name: string | undefined; stored: boolean }> {
    // `old` and `named` read the statement's snapshot: the states before this write.
    const [row] = await queryRows<{
      state: unknown;
      deleted: boolean | null;
      source_sequence: string | null;
      name: string | null;
      stored: number;
    }>(
      this.db,
      `with old as (select state, deleted, source_sequence from entity_states
                     where entity_type = $1 and id = $2 for update),
            up as (insert into entity_states (entity_type, id, source, state, deleted, source_sequence, updated_at)
                   values ($1, $2, $3, $4::jsonb, $5, $6, now())
                   on conflict (entity_type, id) do update
                      set source = excluded.source, state = excluded.state, deleted = excluded.deleted,
                          source_sequence = excluded.source_sequence, updated_at = now()
                    where entity_states.source_sequence < excluded.source_sequence
                   returning id),
            named as (select state ->> 'name' as name from entity_states where entity_type = $7 and id = $8)
       select o.state, o.deleted, o.source_sequence, (select name from named) as name,
              (select count(*) from up)::int as stored
         from (select 1) one left join old o on true`,
      [
        entry.entityType,
        entry.id,
        entry.source,
        JSON.stringify(entry.state),
        entry.deleted,
        position,
        nameOf?.entityType ?? null,
        nameOf?.id ?? null,
      ],
      { prepare: true },
    );
    const known =
      row && row.source_sequence !== null
        ? {
            state: json<EntityStateValue>(row.state, {}),
            deleted: Boolean(row.deleted),
            position: Number(row.source_sequence),
          }
        : null;
    return { known, name: typeof row?.name === 'string' ? row.name : undefined, stored: Number(row?.stored) > 0 };
  }
}

/**
 * The trail's entity states of one owner's entity type as a read model the platform rebuilds from the
 * owner's state pages (first start, a new durable, a gap that outlived the stream; docs/adr/0008): each
 * page's states, shaped as the events carry them, are written over older rows only, and live rows of the page's id range that the page
 * lacks become tombstones at its position. Tombstones are pruned by the retention sweeper.
 */
export function entityStatesReadModel(
  source: EntityOwner,
  entity: EntityStateType,
  entityType: string,
): RebuildableReadModel {
  return {
    entity,
    async applyPage(tx: Db, page: OwnerStatesPage): Promise<void> {
      const states = page.states.map((state) => asEventState(source, entityType, state));
      const present = states.map((state) => String(state.id));
      if (present.length > 0)
        await queryRows(
          tx,
          `insert into entity_states (entity_type, id, source, state, deleted, source_sequence, updated_at)
           select $1, s->>'id', $2, s, false, $3, now() from jsonb_array_elements($4::jsonb) s
           on conflict (entity_type, id) do update
              set source = excluded.source, state = excluded.state, deleted = false,
                  source_sequence = excluded.source_sequence, updated_at = now()
            where entity_states.source_sequence < excluded.source_sequence`,
          [entityType, source, page.position, JSON.stringify(states)],
        );
      await queryRows(
        tx,
        `update entity_states set deleted = true, source_sequence = $5, updated_at = now()
          where entity_type = $1 and not deleted and source_sequence <= $5
            and ($2::text is null or id collate "C" > $2) and ($3::text is null or id collate "C" <= $3)
            and not (id = any($4::text[]))`,
        [entityType, page.after ?? null, page.upTo ?? null, present, page.position],
      );
    },
  };
}
