// What the gateway writes back: the headers every answer carries, the owners' replies, and the error
// envelope (ZITI-FACTS §1.1; docs/adr/0013 for the hardening headers).

import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  ApiError,
  type OperationReply,
  UNLIMITED_LIST_LIMIT,
  errorEnvelope,
  isErrorReply,
  statusOf,
} from '@ziti/contracts';
import { type Logger, pooledRandomBytes } from '@ziti/platform';

const idAlphabet = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-';
/** Request ids are shortids like the reference's (ZITI-FACTS general conventions). */
export function newRequestId(): string {
  const bytes = pooledRandomBytes(9);
  let id = '';
  // 64 characters: every byte maps evenly.
  for (let i = 0; i < 9; i++) id += idAlphabet[bytes[i]! % idAlphabet.length];
  return id;
}

/**
 * Headers on every answer (ZITI-FACTS §1.1 plus transport hardening): HSTS, no MIME sniffing, and
 * no caching, since most answers carry a token, an enrollment JWT, a key or a secret.
 */
export const securityHeaders: Readonly<Record<string, string>> = {
  'strict-transport-security': 'max-age=31536000',
  'x-content-type-options': 'nosniff',
  'cache-control': 'no-store',
};

/** The headers the pipeline sets on every answer before it routes the request. */
export function setAnswerHeaders(res: ServerResponse, instanceId: string, requestId: string): void {
  res.setHeader('ziti-instance-id', instanceId);
  res.setHeader('server', 'ziti-controller/v1.1.9');
  res.setHeader('x-request-id', requestId);
  for (const [name, value] of Object.entries(securityHeaders)) res.setHeader(name, value);
}

function acceptsJson(req: IncomingMessage): boolean {
  const accept = req.headers.accept;
  return !accept || accept.includes('*/*') || accept.includes('application/json');
}

/**
 * The error envelope, or only the status when the client accepts no JSON (go-openapi's answer).
 * `envelope` forces the envelope: the streams answer their errors with it whatever the client
 * accepts (an EventSource asks for `text/event-stream` only).
 */
export function sendError(
  req: IncomingMessage,
  res: ServerResponse,
  error: ApiError,
  requestId: string,
  options: { envelope?: boolean } = {},
): void {
  const status = statusOf(error.code);
  // A body left unread (refused before reading it) is not drained on a kept-alive connection.
  if (!req.complete) res.setHeader('connection', 'close');
  // Nothing was done (the owner or a dependency is down, or the owner refused a write it could not
  // finish in time): the caller may send it again, in a second. A TIMEOUT says no such thing.
  if (error.code === 'SERVICE_UNAVAILABLE') res.setHeader('retry-after', '1');
  if (!options.envelope && !acceptsJson(req)) {
    res.statusCode = status;
    res.setHeader('content-type', contentTypeOf(String(req.headers.accept).split(',')[0]?.trim() ?? ''));
    res.end();
    return;
  }
  sendJson(res, status, JSON.stringify(errorEnvelope(error.code, requestId, error.cause, error.message)));
}

/**
 * A Content-Type header for a media type: as given, with `charset=utf-8` added to a text or JSON
 * type that names none; something that is no media type is `application/octet-stream`.
 */
export function contentTypeOf(type: string): string {
  const media = type.split(';')[0]!.trim().toLowerCase();
  if (!/^[\w.+-]+\/[\w.+*-]+$/.test(media)) return 'application/octet-stream';
  if (/;\s*charset=/i.test(type)) return type;
  return media.startsWith('text/') || media === 'application/json' || media.endsWith('+json')
    ? `${type}; charset=utf-8`
    : type;
}

/** Writes a JSON answer with Node's own response API. */
export function sendJson(res: ServerResponse, status: number, text: string, contentType = 'application/json'): void {
  res.statusCode = status;
  res.setHeader('content-type', contentType.includes('charset') ? contentType : `${contentType}; charset=utf-8`);
  res.setHeader('content-length', Buffer.byteLength(text));
  res.end(text);
}

/**
 * An answer written on the socket itself, for a request Node's HTTP parser refused before the
 * pipeline saw it (a head over `maxHeaderSize`, a malformed request line).
 */
export function rawErrorResponse(error: ApiError, requestId: string): string {
  const status = statusOf(error.code);
  const body = JSON.stringify(errorEnvelope(error.code, requestId, error.cause, error.message));
  const headers = {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(body)),
    connection: 'close',
    ...securityHeaders,
  };
  const head = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`);
  return `HTTP/1.1 ${status} ${statusText[status] ?? 'Error'}\r\n${head.join('')}\r\n${body}`;
}

const statusText: Record<number, string> = {
  400: 'Bad Request',
  413: 'Content Too Large',
  431: 'Request Header Fields Too Large',
};

/** Any error as the one the envelope answers: an ApiError as it is, anything else logged and UNHANDLED. */
export function toApiError(err: unknown, log: () => Logger): ApiError {
  if (err instanceof ApiError) return err;
  log().error({ err }, 'unhandled error');
  return new ApiError('UNHANDLED', { code: 'UNHANDLED', message: 'An unhandled error occurred' });
}

/** Writes an owner's reply: its headers, then the error envelope, raw bytes, no body or JSON. */
export function writeReply(req: IncomingMessage, res: ServerResponse, reply: OperationReply, requestId: string): void {
  if (isErrorReply(reply)) {
    for (const [k, v] of Object.entries(reply.headers ?? {})) res.setHeader(k, v);
    sendError(req, res, ApiError.fromJSON(reply.error), requestId);
    return;
  }
  if (reply.headers) for (const [k, v] of Object.entries(reply.headers)) res.setHeader(k, v);
  if (reply.rawBody !== undefined) {
    const bytes = Buffer.from(reply.rawBody, 'base64');
    res.statusCode = reply.status;
    res.setHeader('content-type', contentTypeOf(reply.contentType ?? 'application/octet-stream'));
    res.setHeader('content-length', bytes.length);
    res.end(bytes);
    return;
  }
  if (reply.body === undefined) {
    res.statusCode = reply.status;
    res.end();
    return;
  }
  sendJson(res, reply.status, answerText(reply.body), reply.contentType ?? 'application/json');
}

/** math.MaxInt64 as JSON text. */
const MAX_INT64 = '9223372036854775807';

/**
 * An owner's answer body as JSON text. An unlimited list reports `meta.pagination.limit` as
 * math.MaxInt64, which no JavaScript number holds: the list envelope carries the nearest double
 * (`UNLIMITED_LIST_LIMIT`, 2^63, which JSON.stringify writes as 9223372036854776000, out of a Go
 * int64's range), and the text gets the exact digits, as the reference writes them.
 */
export function answerText(body: unknown): string {
  const meta = (body as { meta?: { pagination?: { limit?: unknown } } | null } | null | undefined)?.meta;
  const pagination = meta?.pagination;
  if (pagination?.limit !== UNLIMITED_LIST_LIMIT) return JSON.stringify(body);
  const marker = `unlimited-${randomUUID()}`;
  const text = JSON.stringify({ ...(body as object), meta: { ...meta, pagination: { ...pagination, limit: marker } } });
  return text.replace(`"${marker}"`, MAX_INT64);
}
