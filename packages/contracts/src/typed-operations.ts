import type { OperationRequest } from './bus.ts';
import type { OperationKeysByOwner, OperationTypes } from './generated/operation-types.ts';
import type { Owner } from './operation.ts';

export type {
  AuthOperationKey,
  GatewayOperationKey,
  InventoryOperationKey,
  OperationKeysByOwner,
  OperationTypes,
  PkiEnrollmentOperationKey,
  PolicyOperationKey,
} from './generated/operation-types.ts';

/**
 * The types of the operation table (generated beside it by `npm run generate`, from the same
 * specs and schemas): every operation's key `<api>.<operationId>`, the keys each owner serves, and
 * what each operation's owner receives (body, query) and answers (`data`).
 */

/** The key of an operation of the table: `<api>.<operationId>`. */
export type OperationKey = keyof OperationTypes;

/** The operations an owner serves, e.g. `OperationKeyOf<'auth'>` = `'client.authenticate' | …`. */
export type OperationKeyOf<O extends Owner> = OperationKeysByOwner[O];

/** An operation's body as its schema decodes it; `undefined` when the operation declares none. */
export type OperationBody<K extends OperationKey> = OperationTypes[K]['body'];

/** An operation's query as its schema validates and coerces it (undeclared parameters pass as they came). */
export type OperationQuery<K extends OperationKey> = OperationTypes[K]['query'];

/** The `data` of an operation's success answer (the body itself for a bare answer); `undefined`: not JSON. */
export type OperationReplyData<K extends OperationKey> = OperationTypes[K]['reply'];

/**
 * The body an owner receives for operation `K`. The gateway validated it against the operation's
 * schema (`validateOperationInput`), so it is the schema's type; it may be absent when the body is
 * optional or may come as raw text instead (`rawBody`). An operation that declares no body gets any
 * JSON body as it came, unread by the gateway: `unknown`.
 */
export type OperationRequestBody<K extends OperationKey> = OperationTypes[K] extends { body: undefined }
  ? unknown
  : OperationTypes[K] extends { bodyRequired: true }
    ? OperationBody<K>
    : OperationBody<K> | undefined;

/**
 * An operation request as the owner of `K` receives it: `body` and `query` typed as the gateway
 * decoded them. A union of keys gives the union of their requests, so one handler can serve
 * several operations (both APIs' `authenticate`). Assignable to `OperationRequest`.
 */
export type OperationRequestOf<K extends OperationKey> = K extends OperationKey
  ? Omit<OperationRequest, 'body' | 'query'> & { body: OperationRequestBody<K>; query: OperationQuery<K> }
  : never;
