/**
 * @ziti/zitiql — the one ZitiQL implementation of the product: lexer + parser (typed AST), translator
 * to parameterised PostgreSQL driven by per-entity field maps, and the list-query (paging/sort) rules.
 */
import type { QueryEntity } from './entity.ts';
import { parseQuery } from './parser.ts';
import { type CompiledQuery, type CompileOptions, compileQuery } from './translate.ts';

export type * from './ast.ts';
export {
  arraySet,
  baseEntityFields,
  defineQueryEntity,
  type FieldDef,
  type FieldType,
  filterableFields,
  type MapField,
  map,
  type QueryEntity,
  type QueryEntityInput,
  type ScalarField,
  type SetField,
  type SqlFragment,
  type SubqueryDef,
  scalar,
  set,
} from './entity.ts';
export { syntaxErrorMessage } from './errors.ts';
export {
  compareText,
  compileCondition,
  compilePredicate,
  type DocumentPredicate,
  evaluate,
  lookup,
} from './evaluate.ts';
export { type Token, type TokenType, tokenize } from './lexer.ts';
export {
  buildListQuery,
  DEFAULT_LIMIT,
  type ListQuery,
  type ListQueryInput,
  type ListQueryOptions,
  MAX_LIMIT,
  MAX_OFFSET,
  normalizePaging,
  parseSortParam,
  type SelectSql,
  selectSql,
} from './list-query.ts';
export { MAX_NESTING, parseQuery } from './parser.ts';
export { type CompiledQuery, type CompileOptions, compileQuery, MAX_PARAMS, MAX_SORT_FIELDS } from './translate.ts';

/** Parse + translate a filter string in one go (blank = `true`). */
export function compileFilter(
  entity: QueryEntity,
  filter: string | undefined,
  options?: CompileOptions,
): CompiledQuery {
  const query =
    filter === undefined || filter.trim() === ''
      ? { filter: { kind: 'const', value: true } as const, sort: [] }
      : parseQuery(filter);
  return compileQuery(entity, query, options);
}
export * from './literal.ts';
