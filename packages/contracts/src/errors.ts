/**
 * The OpenZiti error table (ZITI-FACTS §2.2): code, HTTP status and verbatim message.
 * Domain code raises `ApiError` with a code from here; only the gateway turns it into HTTP.
 */
export const errorTable = {
  NOT_FOUND: [404, 'The resource requested was not found or is no longer available'],
  UNHANDLED: [500, 'An unhandled error occurred'],
  INVALID_FIELD: [400, 'The field contains an invalid value'],
  ENTITY_CAN_NOT_BE_DELETED: [400, 'The entity requested for delete can not be deleted'],
  ENTITY_CAN_NOT_BE_UPDATED: [400, 'The entity requested for update can not be updated'],
  COULD_NOT_VALIDATE: [
    400,
    'The supplied request contains an invalid document or no valid accept content were available, see cause',
  ],
  UNAUTHORIZED: [
    401,
    'The request could not be completed. The session is not authorized or the credentials are invalid',
  ],
  INVALID_FILTER: [400, 'The filter query supplied is invalid'],
  INVALID_PAGINATION: [400, 'The pagination properties provided are invalid'],
  INVALID_SORT_IDENTIFIER: [400, 'The sort order supplied is invalid'],
  METHOD_NOT_ALLOWED: [405, 'The resource requested does not support this HTTP verb'],
  NOT_IMPLEMENTED: [501, 'The operation is not implemented by this controller yet'],
  SERVICE_UNAVAILABLE: [503, 'The service that owns this operation is not available'],
  COULD_NOT_PARSE_BODY: [400, 'The body of the request could not be parsed'],
  COULD_NOT_READ_BODY: [500, 'The body of the request could not be read'],
  // The reference's later releases answer a body over their limit so (controller/apierror/messages.go);
  // the two below answer a request line or head over the gateway's limits (packages/contracts/src/validation.ts).
  REQUEST_ENTITY_TOO_LARGE: [413, 'The request body exceeds the maximum accepted size'],
  URI_TOO_LONG: [414, 'The request URL exceeds the maximum accepted length'],
  REQUEST_HEADER_FIELDS_TOO_LARGE: [431, 'The request headers exceed the maximum accepted size'],
  INVALID_UUID: [400, 'The supplied value is not a valid UUID'],
  INVALID_CONTENT_TYPE: [400, 'The content type supplied is not acceptable'],
  INVALID_AUTH: [401, 'The authentication request failed'],
  INVALID_AUTH_METHOD: [400, 'The supplied authentication method is not valid'],
  ENROLLMENT_EXPIRED: [400, 'The enrollment has expired'],
  COULD_NOT_PROCESS_CSR: [400, 'The certificate signing request could not be processed'],
  ENROLLMENT_CA_NOT_VALID: [400, 'The CA of this enrollment no longer allows OTT-CA enrollment'],
  ENROLLMENT_NO_VALID_CAS: [400, 'No CA allows auto enrollment with the supplied certificate'],
  INVALID_ENROLLMENT_TOKEN: [400, 'The supplied enrollment token is not valid'],
  INVALID_ENROLL_METHOD: [400, 'The supplied enrollment method is not valid'],
  MISSING_OR_INVALID_CSR: [400, 'A certificate signing request is missing or invalid'],
  NO_EDGE_ROUTERS_AVAILABLE: [400, 'No edge routers are available for this service'],
  COULD_NOT_PARSE_x509_FROM_DER: [400, 'Could not parse an x509 certificate from the DER block'],
  CERT_FAILED_VALIDATION: [400, 'The certificate failed validation'],
  CERT_IN_USE: [409, 'The certificate is already in use'],
  CA_ALREADY_VERIFIED: [409, 'The CA has already been verified'],
  EXPECTED_PEM_CERTIFICATE: [400, 'Expected a PEM encoded CERTIFICATE block'],
  COULD_NOT_PARSE_DER_BLOCK: [400, 'Could not parse the DER block'],
  COULD_NOT_PARSE_PEM_BLOCK: [400, 'Could not parse the PEM block'],
  INVALID_COMMON_NAME: [400, 'The common name of the certificate does not match the verification token'],
  CERTIFICATE_FAILED_VALIDATION: [400, 'The certificate was not signed by the CA'],
  CERTIFICATE_IS_NOT_CA: [400, 'The certificate is not a CA'],
  INVALID_AUTHENTICATOR_PROPERTIES: [400, 'The authenticator properties are not valid'],
  CAN_NOT_UPDATE_AUTHENTICATOR: [409, 'The authenticator can not be updated'],
  CAN_NOT_UPDATE_ROUTER: [409, 'The router can not be updated'],
  MAX_AUTHENTICATOR_METHODS_REACHED: [409, 'The identity already has an authenticator of this method'],
  RATE_LIMITED: [429, 'The resource is rate limited, try again later'],
  IDEMPOTENCY_KEY_IN_USE: [409, 'A request with this Idempotency-Key is in progress, or its answer was not kept'],
  IDEMPOTENCY_KEY_REUSED: [422, 'The Idempotency-Key was already used for a different request'],
  TIMEOUT: [503, 'The request timed out'],
  INVALID_POSTURE: [409, 'The posture checks for this service are not passing'],
  MFA_EXISTS: [409, 'MFA is already enrolled for this identity'],
  MFA_ENROLLMENT_NOT_STARTED: [404, 'MFA enrollment has not been started'],
  MFA_INVALID_TOKEN: [400, 'The supplied MFA token is not valid'],
  MFA_NOT_ENROLLED: [409, 'The identity is not enrolled in MFA'],
  COULD_NOT_PARSE_PROXY_CERT: [500, 'Could not parse the proxied client certificate'],
  MISSING_CERT_CLAIM: [400, 'The certificate is missing the claim required by the CA'],
  FAILED_ER_REENROLLMENT: [500, 'The edge router could not be re-enrolled'],
  INVALID_CLIENT_CERT: [400, 'The client certificate is not valid'],
  INVALID_CERT_PEM: [400, 'The certificate PEM is not valid'],
  CAN_NOT_DELETE_REFERENCED_ENTITY: [
    409,
    'the entity cannot be deleted because it is referenced by another entity, see cause',
  ],
  REFERENCED_ENTITY_NOT_FOUND: [400, 'REFERENCED_ENTITY_NOT_FOUND'],
  ENROLLMENT_EXISTS: [409, 'ENROLLMENT_EXISTS'],
  SERVER_TOO_MANY_REQUESTS: [
    429,
    'Too many requests to alter state have been issued. Please slow your request rate or try again later.',
  ],
  SERVER_NOT_RUNNING_IN_HA_MODE: [400, 'The server is not running in HA mode'],
  TRANSFER_LEADERSHIP_ERROR: [500, 'Leadership could not be transferred'],
  EDGE_ROUTER_ENROLL_COMMON_NAME_INVALID: [400, 'The common name of the client CSR must equal the edge router id'],
} as const satisfies Record<string, readonly [number, string]>;

export type ErrorCode = keyof typeof errorTable;

export function statusOf(code: ErrorCode): number {
  return errorTable[code][0];
}

export function messageOf(code: ErrorCode): string {
  return errorTable[code][1];
}

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(errorTable, value);
}

/** A field error cause as the reference emits it: `{field, reason, value}`. */
export interface FieldCause {
  field: string;
  reason: string;
  value?: unknown;
}

/** A generic cause: `{code, message}` or `{message, data}` (ZITI-FACTS §2.1 rule 5 and 6). */
export interface GenericCause {
  code?: string;
  message?: string;
  data?: Record<string, unknown>;
  field?: string;
  reason?: string;
  value?: unknown;
}

/** A cause is the JSON union of a field error and a nested API error (ZITI-FACTS §2.1). */
export type ErrorCause = GenericCause;

/**
 * A business error that crosses every boundary with its code intact (bus included).
 * Carries no HTTP status: the edge derives it from the table.
 */
export class ApiError extends Error {
  readonly code: ErrorCode;
  override readonly cause?: ErrorCause;

  constructor(code: ErrorCode, cause?: ErrorCause | string, message?: string) {
    super(message ?? messageOf(code));
    this.name = 'ApiError';
    this.code = code;
    if (typeof cause === 'string') this.cause = { code: 'UNHANDLED', message: cause };
    else if (cause !== undefined) this.cause = cause;
  }

  static notFound(entity: string, id: string): ApiError {
    return new ApiError('NOT_FOUND', { code: 'UNHANDLED', message: `${entity} with id ${id} not found` });
  }

  /** A field validation error; INVALID_FIELD goes out as COULD_NOT_VALIDATE like the reference does. */
  static field(field: string, reason: string, value?: unknown): ApiError {
    return new ApiError('COULD_NOT_VALIDATE', { field, reason, value: stringifyValue(value) });
  }

  toJSON(): SerializedApiError {
    return { code: this.code, message: this.message, ...(this.cause ? { cause: this.cause } : {}) };
  }

  static fromJSON(value: SerializedApiError): ApiError {
    const code = isErrorCode(value.code) ? value.code : 'UNHANDLED';
    return new ApiError(code, value.cause, value.message);
  }
}

export interface SerializedApiError {
  code: string;
  message: string;
  cause?: ErrorCause;
}

/** Go's `%v` of a value, which is what the reference puts in `cause.value`. */
export function stringifyValue(value: unknown): string {
  if (value === undefined || value === null) return '<nil>';
  if (Array.isArray(value)) return `[${value.map(stringifyValue).join(' ')}]`;
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}
