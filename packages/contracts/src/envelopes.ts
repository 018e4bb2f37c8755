import { type ErrorCause, type ErrorCode, messageOf, statusOf } from './errors.ts';

/** `meta` of every error envelope (ZITI-FACTS §2.1). */
export const errorMeta = { apiVersion: '0.0.1', apiEnrollmentVersion: '0.0.1' } as const;

export interface Pagination {
  limit: number;
  offset: number;
  totalCount: number;
}

export interface Link {
  href: string;
}

export type Links = Record<string, Link>;

export function detailEnvelope<T>(data: T): { data: T; meta: Record<string, never> } {
  return { data, meta: {} };
}

/**
 * The `meta.pagination.limit` of an unlimited list (`limit=-1`, `limit none` in a filter, the
 * role-attribute lists): the reference reports math.MaxInt64 there. This is the nearest double (2^63);
 * the gateway writes it as the exact digits 9223372036854775807, which a Go int64 reads.
 */
export const UNLIMITED_LIST_LIMIT = 2 ** 63;

/** A list envelope; a page limit of -1 (unlimited) is reported as `UNLIMITED_LIST_LIMIT`. */
export function listEnvelope<T>(
  data: T[],
  pagination: Pagination,
  filterableFields?: readonly string[],
): { data: T[]; meta: { pagination: Pagination; filterableFields?: string[] } } {
  const meta: { pagination: Pagination; filterableFields?: string[] } = {
    pagination: pagination.limit === -1 ? { ...pagination, limit: UNLIMITED_LIST_LIMIT } : pagination,
  };
  if (filterableFields && filterableFields.length > 0) meta.filterableFields = [...filterableFields];
  return { data, meta };
}

export function createdEnvelope(
  id: string,
  collection: string,
): { data: { id: string; _links: Links }; meta: Record<string, never> } {
  return { data: { id, _links: { self: { href: `./${collection}/${id}` } } }, meta: {} };
}

export function emptyEnvelope(): { data: Record<string, never>; meta: Record<string, never> } {
  return { data: {}, meta: {} };
}

export interface ErrorEnvelope {
  error: { code: string; message: string; cause?: ErrorCause; requestId: string };
  meta: typeof errorMeta;
}

export function errorEnvelope(code: ErrorCode, requestId: string, cause?: ErrorCause, message?: string): ErrorEnvelope {
  return {
    error: { code, message: message ?? messageOf(code), ...(cause ? { cause } : {}), requestId },
    meta: errorMeta,
  };
}

export { statusOf };
