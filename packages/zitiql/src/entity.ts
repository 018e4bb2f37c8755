/**
 * Per-entity field maps: which ZitiQL symbols an entity exposes and the SQL behind each one.
 *
 * SQL fragments are either a string used verbatim (written with the entity's declared alias, e.g.
 * `'t.name'`) or a function of the alias the translator uses for the entity's row.
 * Nothing user-supplied ever ends up in these fragments: values always travel as `$n` parameters.
 */

export type FieldType = 'string' | 'number' | 'boolean' | 'datetime';

export type SqlFragment = string | ((alias: string) => string);

/** A single-valued column or expression (also foreign-key traversals such as `router.name`). */
export interface ScalarField {
  readonly kind: 'scalar';
  readonly sql: SqlFragment;
  readonly type: FieldType;
}

/**
 * A multi-valued symbol, usable only inside `anyOf`/`allOf`/`count`/`isEmpty`.
 * `source: 'array'`: `sql` is an array-valued expression (e.g. a `text[]` column);
 * `source: 'query'`: `sql` is a SELECT returning one column, correlated to the row through the alias.
 */
export interface SetField {
  readonly kind: 'set';
  readonly source: 'array' | 'query';
  readonly sql: SqlFragment;
  readonly type: FieldType;
}

/** A `jsonb` object column addressed as `<name>.<key>` (e.g. `tags.env`, `data.port`). */
export interface MapField {
  readonly kind: 'map';
  readonly sql: SqlFragment;
}

export type FieldDef = ScalarField | SetField | MapField;

/**
 * A linked entity collection: usable as `from <name> where <query>` inside `isEmpty`/`count`, and as a set
 * of the linked rows' ids in `anyOf(<name>) = "id"` etc. `on(outer, inner)` correlates a row of the
 * linked entity (alias `inner`) with the current row (alias `outer`).
 */
export interface SubqueryDef {
  readonly entity: QueryEntity | (() => QueryEntity);
  readonly on: (outer: string, inner: string) => string;
}

export interface QueryEntityInput {
  /** Table (or parenthesised subselect) the rows come from. */
  readonly table: string;
  /** SQL alias of the row; string fragments must use it. */
  readonly alias: string;
  readonly fields: Readonly<Record<string, FieldDef>>;
  readonly subqueries?: Readonly<Record<string, SubqueryDef>>;
  /** Scalar field ordering results when no sort is given, and the final tie-breaker. Default `id`. */
  readonly defaultSort?: string;
}

export interface QueryEntity {
  readonly table: string;
  readonly alias: string;
  readonly fields: Readonly<Record<string, FieldDef>>;
  readonly subqueries: Readonly<Record<string, SubqueryDef>>;
  readonly defaultSort: string;
}

export const scalar = (sql: SqlFragment, type: FieldType): ScalarField => ({ kind: 'scalar', sql, type });

/** A set from a SELECT returning one column, e.g. `a => \`select x.v from t_x x where x.owner = ${a}.id\``. */
export const set = (query: SqlFragment, type: FieldType): SetField => ({
  kind: 'set',
  source: 'query',
  sql: query,
  type,
});

/** A set from an array-valued expression, e.g. `arraySet('t.role_attributes', 'string')` (a `text[]`). */
export const arraySet = (array: SqlFragment, type: FieldType): SetField => ({
  kind: 'set',
  source: 'array',
  sql: array,
  type,
});

export const map = (jsonb: SqlFragment): MapField => ({ kind: 'map', sql: jsonb });

const SYMBOL_RE = /^[A-Za-z][A-Za-z_]*(?:\.[A-Za-z][A-Za-z_]*)*$/;
const ALIAS_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The symbols every extended entity has (ZITI-FACTS §3.5): id, createdAt, updatedAt, tags, isSystem. */
export const baseEntityFields = (alias: string) => ({
  id: scalar(`${alias}.id`, 'string'),
  createdAt: scalar(`${alias}.created_at`, 'datetime'),
  updatedAt: scalar(`${alias}.updated_at`, 'datetime'),
  tags: map(`${alias}.tags`),
  isSystem: scalar('false', 'boolean'),
});

/** Validates and freezes an entity declaration. Declaration mistakes throw plain `Error`s at startup. */
export function defineQueryEntity(input: QueryEntityInput): QueryEntity {
  if (!ALIAS_RE.test(input.alias)) throw new Error(`zitiql: invalid alias '${input.alias}' for ${input.table}`);
  const subqueries = input.subqueries ?? {};
  for (const name of [...Object.keys(input.fields), ...Object.keys(subqueries)]) {
    if (!SYMBOL_RE.test(name)) {
      throw new Error(
        `zitiql: symbol '${name}' of ${input.table} can not be written in ZitiQL (letters, _ and . only)`,
      );
    }
  }
  for (const name of Object.keys(subqueries)) {
    if (Object.hasOwn(input.fields, name)) throw new Error(`zitiql: '${name}' is both a field and a subquery`);
  }
  const defaultSort = input.defaultSort ?? 'id';
  if (input.fields[defaultSort]?.kind !== 'scalar') {
    throw new Error(`zitiql: default sort '${defaultSort}' of ${input.table} must be a scalar field`);
  }
  return Object.freeze({
    table: input.table,
    alias: input.alias,
    fields: Object.freeze({ ...input.fields }),
    subqueries: Object.freeze({ ...subqueries }),
    defaultSort,
  });
}

/** The public (filterable) symbols of an entity, for `meta.filterableFields`. */
export function filterableFields(entity: QueryEntity): string[] {
  return [...Object.keys(entity.fields), ...Object.keys(entity.subqueries)];
}

export function resolveEntity(def: SubqueryDef): QueryEntity {
  return typeof def.entity === 'function' ? def.entity() : def.entity;
}

export function sqlOf(fragment: SqlFragment, alias: string): string {
  return typeof fragment === 'function' ? fragment(alias) : fragment;
}
