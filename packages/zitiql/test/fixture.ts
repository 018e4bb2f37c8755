/**
 * A small PGlite database and the entity declarations the translator tests run against.
 * items (text, int, float, bool, timestamptz, text[], jsonb, FK to owners) ←→ policies via policy_items,
 * plus item_links (a numeric set computed by a correlated SELECT).
 */
import { PGlite } from '@electric-sql/pglite';
import { arraySet, defineQueryEntity, map, type QueryEntity, scalar, set } from '../src/index.ts';

export const SCHEMA = `
create table owners (id text primary key, name text not null);
create table items (
  id text primary key,
  name text,
  cost integer,
  score double precision,
  enabled boolean,
  created_at timestamptz,
  role_attributes text[],
  tags jsonb not null default '{}'::jsonb,
  owner_id text references owners(id)
);
create table item_links (item_id text not null references items(id), n integer not null);
create table policies (id text primary key, name text not null, type integer not null, role_attributes text[] not null default '{}');
create table policy_items (policy_id text not null references policies(id), item_id text not null references items(id));
`;

export const DATA = `
insert into owners values ('o1', 'alice'), ('o2', 'bob');
insert into items values
  ('a', 'web-server',   1,  2.5, true,  '2024-01-01T00:00:00Z', '{web,prod}',    '{"env":"prod","age":95,"on":true,"nested":{"deep":"x"}}', 'o1'),
  ('b', 'Web-Client',   2,  0.5, false, '2024-06-01T12:00:00Z', '{web}',         '{"env":"dev","age":"95"}',  'o2'),
  ('c', 'database',     3,  10,  true,  '2030-01-01T00:00:00Z', '{}',            '{"env":"prod","age":30}',   'o1'),
  ('d', 'cache "quoted"', 234, null, null, null,              null,            '{}',                        null),
  ('e', null,           null, -1, false, '2020-05-05T05:05:05.123456Z', '{db,prod,web}', '{"age":null}',  'o2'),
  ('f', 'queue',        1234, 3, true,  '2024-08-21T14:00:00Z', '{queue}',      '{"env":"Prod"}',            null);
insert into item_links values ('a', 100), ('a', 105), ('b', 100), ('b', 120), ('c', 5);
insert into policies values ('p1', 'dial-all', 1, '{x}'), ('p2', 'bind-web', 2, '{}'), ('p3', 'dial-db', 1, '{}');
insert into policy_items values ('p1', 'a'), ('p1', 'b'), ('p1', 'c'), ('p2', 'a'), ('p3', 'c');
`;

export const itemEntity: QueryEntity = defineQueryEntity({
  table: 'items',
  alias: 't',
  fields: {
    id: scalar('t.id', 'string'),
    name: scalar('t.name', 'string'),
    cost: scalar('t.cost', 'number'),
    score: scalar('t.score', 'number'),
    enabled: scalar('t.enabled', 'boolean'),
    createdAt: scalar('t.created_at', 'datetime'),
    roleAttributes: arraySet('t.role_attributes', 'string'),
    tags: map('t.tags'),
    'owner.name': scalar((a) => `(select o.name from owners o where o.id = ${a}.owner_id)`, 'string'),
    owner: scalar('t.owner_id', 'string'),
    'link.ids': set((a) => `select l.n from item_links l where l.item_id = ${a}.id`, 'number'),
  },
  subqueries: {
    policies: {
      entity: () => policyEntity,
      on: (outer, inner) => `${inner}.id in (select pi.policy_id from policy_items pi where pi.item_id = ${outer}.id)`,
    },
  },
});

export const policyEntity: QueryEntity = defineQueryEntity({
  table: 'policies',
  alias: 'p',
  fields: {
    id: scalar('p.id', 'string'),
    name: scalar('p.name', 'string'),
    type: scalar('p.type', 'number'),
    roleAttributes: arraySet('p.role_attributes', 'string'),
  },
  subqueries: {
    items: {
      entity: () => itemEntity,
      on: (outer, inner) => `${inner}.id in (select pi.item_id from policy_items pi where pi.policy_id = ${outer}.id)`,
    },
  },
});

export async function createDb(): Promise<PGlite> {
  const db = await PGlite.create();
  await db.exec(SCHEMA);
  await db.exec(DATA);
  return db;
}
