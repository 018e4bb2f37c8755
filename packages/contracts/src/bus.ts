import { z } from 'zod';
import type { SerializedApiError } from './errors.ts';
import type { ApiName, Owner } from './operation.ts';

/**
 * Bus subjects. The gateway sends every operation to its owner on
 * `ziti.rpc.<owner>.op.<api>.<operationId>`; a service subscribes to `ziti.rpc.<owner>.op.>` with
 * a queue group and dispatches by operation, so an operation it does not implement yet answers
 * NOT_IMPLEMENTED while a service that is down shows as "no responders".
 * Service-to-service calls use `ziti.rpc.<owner>.call.<action>`.
 */
export const subjects = {
  operation: (owner: Owner, api: ApiName, operationId: string) => `ziti.rpc.${owner}.op.${api}.${operationId}`,
  operations: (owner: Owner) => `ziti.rpc.${owner}.op.>`,
  call: (owner: Owner, action: string) => `ziti.rpc.${owner}.call.${action}`,
  calls: (owner: Owner) => `ziti.rpc.${owner}.call.>`,
  /** Events: `ziti.evt.<owner>.<type>`, e.g. `ziti.evt.auth.identity.created`. */
  event: (owner: Owner, type: string) => `ziti.evt.${owner}.${type}`,
  events: 'ziti.evt.>',
} as const;

/** The JetStream stream that carries every event: the product's change feed. */
export const eventStream = { name: 'ZITI_EVENTS', subjects: ['ziti.evt.>'] } as const;

/** Queue group shared by the replicas of one service. */
export const queueGroup = (owner: Owner) => `ziti-${owner}`;

export const authQuerySchema = z.object({
  typeId: z.string(),
  provider: z.string(),
  httpMethod: z.string().optional(),
  httpUrl: z.string().optional(),
  format: z.string().optional(),
  minLength: z.number().optional(),
  maxLength: z.number().optional(),
  id: z.string().optional(),
});
export type AuthQuery = z.infer<typeof authQuerySchema>;

/** Who is calling, as the gateway established it from the API session. */
export const callerSchema = z.object({
  identityId: z.string(),
  apiSessionId: z.string(),
  token: z.string(),
  isAdmin: z.boolean(),
  /** Pending secondary factors; non-empty means partially authenticated. */
  authQueries: z.array(authQuerySchema),
});
export type Caller = z.infer<typeof callerSchema>;

/** One HTTP operation as it travels from the gateway to its owner. */
export const operationRequestSchema = z.object({
  requestId: z.string(),
  api: z.enum(['client', 'management']),
  operationId: z.string(),
  params: z.record(z.string(), z.string()),
  /** Query parameters as validated (and coerced) by the gateway against the operation's schema. */
  query: z.record(z.string(), z.unknown()),
  /** The parsed JSON body (validated by the gateway against the contract), if any. */
  body: z.unknown().optional(),
  /** A non-JSON body (PEM, CSR, text) as base64, with its content type. */
  rawBody: z.string().optional(),
  contentType: z.string().optional(),
  accept: z.string().optional(),
  /** The few request headers operations read (`authorization`, `mfa-validation-code`). */
  headers: z.record(z.string(), z.string()),
  caller: callerSchema.optional(),
  /** The TLS client certificate chain, leaf first, PEM. */
  clientCertChain: z.array(z.string()).optional(),
  remoteAddress: z.string(),
});
export type OperationRequest = z.infer<typeof operationRequestSchema>;

/** The owner's answer: a status with a JSON or binary body, or an API error with its code. */
export type OperationReply =
  | {
      status: number;
      body?: unknown;
      /** A binary or text body as base64 (PNG, PKCS#7, PEM, JWT) with its content type. */
      rawBody?: string;
      contentType?: string;
      headers?: Record<string, string>;
    }
  | { error: SerializedApiError; headers?: Record<string, string> };

export function isErrorReply(reply: OperationReply): reply is { error: SerializedApiError } {
  return 'error' in reply;
}

/**
 * `ziti.rpc.pki-enrollment.call.serverIdentity`: the edge API's TLS identity, shared by every
 * gateway replica because enrollment JWTs are signed with its key and verified by clients against
 * the certificate the listener presents (ZITI-FACTS §8.1).
 */
export const serverIdentitySchema = z.object({
  /** Leaf + intermediates. */
  certChainPem: z.string(),
  keyPem: z.string(),
  /** The controller CA bundle (root + intermediate) clients are told to trust. */
  caBundlePem: z.string(),
});
export type ServerIdentity = z.infer<typeof serverIdentitySchema>;

export const calls = {
  serverIdentity: 'serverIdentity',
} as const;
