import type { z } from 'zod';

export type ApiName = 'client' | 'management';
export type Owner = 'gateway' | 'auth' | 'pki-enrollment' | 'policy' | 'inventory' | 'audit';
/** Who may call: anyone, any API session, or an API session of an admin identity (ZITI-FACTS §1.4). */
export type Access = 'none' | 'authenticated' | 'admin';
export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export const apiBasePath: Record<ApiName, string> = {
  client: '/edge/client/v1',
  management: '/edge/management/v1',
};

/** Where an operation takes its input from and what it answers with, as zod schemas. */
export interface OperationSchemas {
  /** Path parameters, e.g. `{ id }`. */
  params?: z.ZodType;
  /** Query parameters, values as they arrive on the wire (string or string[]) and coerced by the schema. */
  query?: z.ZodType;
  /** Header parameters the spec declares (`mfa-validation-code`, `session-token`), names lower-cased. */
  headers?: z.ZodType;
  /** The body, when the operation takes a JSON body. */
  body?: z.ZodType;
  /** The spec's name of the body parameter, which go-openapi uses in "<name> in body is required". */
  bodyName?: string;
  bodyRequired?: boolean;
  /** The `data` of the success response, when it is JSON. */
  response?: z.ZodType;
  /** The success body is `response` itself, not an envelope (`/enroll/challenge`, `/enroll/jwks`). */
  bareResponse?: boolean;
}

/** One row of the operation table: one operation of one of the two official specs. */
export interface OperationDef extends OperationSchemas {
  api: ApiName;
  method: HttpMethod;
  /** The path as the spec writes it, relative to the API base, e.g. `/identities/{id}`. */
  path: string;
  /** The spec's operationId (the two logout operations, which have none, are `deleteCurrentApiSession`). */
  operationId: string;
  /** The spec's first tag. */
  tag: string;
  /** Every tag the spec gives the operation. */
  tags: string[];
  owner: Owner;
  access: Access;
  /** Whether a partially authenticated session (MFA pending, ZITI-FACTS §9.3) may call it. */
  mfaPendingOk: boolean;
  /** Success status codes declared by the spec, lowest first. */
  successStatuses: number[];
  consumes: string[];
  produces: string[];
}

/** A stable key for an operation: `<api>.<operationId>`. */
export function operationKey(op: Pick<OperationDef, 'api' | 'operationId'>): string {
  return `${op.api}.${op.operationId}`;
}
