import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Readable, Transform } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import {
  ApiError,
  type AuthQuery,
  type Caller,
  type OperationDef,
  type OperationReply,
  type OperationRequest,
  checkJsonDepth,
  errorEnvelope,
  inputLimits,
  isErrorReply,
  maxBodyBytes,
  readsRawBody,
  statusOf,
  subjects,
  validateOperationInput,
} from '@ziti/contracts';
import {
  type ApiSessionStore,
  type Bus,
  type LiveApiSession,
  type Logger,
  answerCacheMetrics,
  busFailureError,
  hasPositions,
  pendingAuthQueries,
  pooledRandomBytes,
  settleProduced,
} from '@ziti/platform';
import type { AnswerCache } from '../domain/answer-cache.ts';
import { cachedOperations } from './answer-cache-follower.ts';
import type { ExtJwtSecondaryCheck } from './ext-jwt-secondary.ts';
import type { TokenBucketLimiter } from './rate-limit.ts';
import { recordGatewayRequest } from './request-metrics.ts';
import { type RouteTable, canonicalPath } from './route-table.ts';
import { clientCertificateChain } from './tls.ts';

export type LocalHandler = (request: OperationRequest) => Promise<OperationReply>;

/**
 * The gateway answers on Node's own request and response: no web framework sits between the socket
 * and the pipeline (routing is the operation table's, bodies are read per operation below).
 */
export type Request = IncomingMessage;
export type Response = ServerResponse;

/** The path of a request target (`/a/b?c` → `/a/b`; an absolute-form target → its path). */
export function pathOf(url: string | undefined): string {
  const target = url ?? '/';
  const q = target.indexOf('?');
  const path = q < 0 ? target : target.slice(0, q);
  if (path.startsWith('/')) return path;
  try {
    return new URL(path).pathname;
  } catch {
    return path;
  }
}

export interface PipelineDeps {
  routes: RouteTable;
  bus: Bus;
  sessions: ApiSessionStore;
  sessionTimeoutSeconds: number;
  /** Operations the gateway answers itself (informational), keyed `<api>.<operationId>`. */
  local: Record<string, LocalHandler>;
  logger: Logger;
  instanceId: string;
  requestTimeoutMs?: number;
  /** Limits the authentication operations per client address (429 SERVER_TOO_MANY_REQUESTS). */
  authLimiter?: TokenBucketLimiter;
  /** Checks the bearer JWT of sessions whose auth policy requires an external JWT signer. */
  extJwt?: ExtJwtSecondaryCheck;
  /** Session-scoped answers kept until an owner's event changes them (docs/adr/0015). */
  answers?: AnswerCache;
}

/** The operations that try a credential: password/cert/JWT login and the MFA code. */
const rateLimitedOperations = new Set(['authenticate', 'authenticateMfa']);

const idAlphabet = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-';
/** Request ids are shortids like the reference's (ZITI-FACTS general conventions). */
export function newRequestId(): string {
  const bytes = pooledRandomBytes(9);
  let id = '';
  // 64 characters: every byte maps evenly.
  for (let i = 0; i < 9; i++) id += idAlphabet[bytes[i]! % idAlphabet.length];
  return id;
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Go's default `time.String()` layout, which the reference uses for `expires-at`. */
export function goTimeString(date: Date): string {
  const iso = date.toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 23)}000000 +0000 UTC`;
}

/** The secondary factors a request's session still lacks (MFA, and the external JWT of this request). */
export async function sessionAuthQueries(
  session: LiveApiSession,
  req: Request,
  extJwt: ExtJwtSecondaryCheck | undefined,
): Promise<AuthQuery[]> {
  const authorization = typeof req.headers.authorization === 'string' ? req.headers.authorization : undefined;
  const satisfied = session.requiredExtJwtSigner ? ((await extJwt?.satisfied(session, authorization)) ?? false) : true;
  return pendingAuthQueries(session, satisfied);
}

function acceptsJson(req: Request): boolean {
  const accept = req.headers.accept;
  return !accept || accept.includes('*/*') || accept.includes('application/json');
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

export function sendError(req: Request, res: Response, error: ApiError, requestId: string): void {
  const status = statusOf(error.code);
  // A body left unread (refused before reading it) is not drained on a kept-alive connection.
  if (!req.complete) res.setHeader('connection', 'close');
  if (!acceptsJson(req)) {
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
function sendJson(res: Response, status: number, text: string, contentType = 'application/json'): void {
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

function isJsonType(contentType: string | undefined): boolean {
  return !contentType || /^application\/(.+\+)?json\b/i.test(contentType);
}

/** The decompressor of a request's Content-Encoding (the encodings HTTP clients send). */
function decompressor(encoding: string): Transform | undefined {
  if (encoding === 'gzip') return createGunzip();
  if (encoding === 'deflate') return createInflate();
  if (encoding === 'br') return createBrotliDecompress();
  return undefined;
}

function tooLarge(limit: number): ApiError {
  return new ApiError('REQUEST_ENTITY_TOO_LARGE', {
    code: 'UNHANDLED',
    message: `the body of this operation may have at most ${limit} bytes`,
  });
}

/** Reads off what is left of a refused request, so its client gets the answer instead of a reset. */
function drainRequest(req: Request): Promise<void> {
  if (req.complete || req.destroyed) return Promise.resolve();
  return new Promise<void>((resolve) => {
    req.once('end', resolve);
    req.once('close', resolve);
    req.resume();
  });
}

/**
 * Reads the request body, at most `limit` bytes after any Content-Encoding (gzip, deflate, br). A
 * declared length over the limit is refused before reading (413); an unknown encoding is
 * INVALID_CONTENT_TYPE; a body that ends early or does not decompress is a 400. A refused body is
 * read off before the answer, so the client is not reset mid-upload.
 */
async function readBody(req: Request, limit: number): Promise<Buffer | undefined> {
  // No content-length and no transfer-encoding: HTTP/1.1 has no body to read (most GETs).
  const declared = req.headers['content-length'];
  if (declared === undefined && req.headers['transfer-encoding'] === undefined) return undefined;
  const encoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase();
  let source: Readable = req;
  if (encoding !== 'identity') {
    const inflate = decompressor(encoding);
    if (!inflate) {
      throw new ApiError('INVALID_CONTENT_TYPE', {
        code: 'UNHANDLED',
        message: `unsupported content encoding "${encoding}"`,
      });
    }
    source = req.pipe(inflate);
  } else if (declared !== undefined && Number(declared) > limit) {
    await drainRequest(req);
    throw tooLarge(limit);
  }
  const chunks: Buffer[] = [];
  let received = 0;
  const outcome = await new Promise<Buffer | ApiError>((resolve) => {
    const settle = (result: Buffer | ApiError) => {
      source.removeListener('data', onData);
      source.removeListener('end', onEnd);
      source.removeListener('error', onError);
      req.removeListener('aborted', onAborted);
      req.removeListener('close', onClose);
      resolve(result);
    };
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      if (received > limit) settle(tooLarge(limit));
      else chunks.push(chunk);
    };
    const onEnd = () => settle(Buffer.concat(chunks, received));
    const onError = (err: Error) =>
      settle(new ApiError('COULD_NOT_PARSE_BODY', { code: 'UNHANDLED', message: err.message }));
    const onAborted = () =>
      settle(new ApiError('COULD_NOT_PARSE_BODY', { code: 'UNHANDLED', message: 'request aborted' }));
    const onClose = () => {
      if (!req.complete) onAborted();
    };
    source.on('data', onData);
    source.once('end', onEnd);
    source.once('error', onError);
    req.once('aborted', onAborted);
    req.once('close', onClose);
  });
  if (outcome instanceof ApiError) {
    if (source !== req) {
      req.unpipe();
      source.on('error', () => undefined);
      source.destroy();
    }
    await drainRequest(req);
    throw outcome;
  }
  return outcome;
}

function queryOf(req: Request): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  if (q < 0) return out;
  for (const [k, v] of new URLSearchParams(url.slice(q + 1))) {
    const prev = out[k];
    out[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
  }
  return out;
}

/** The whole edge for one request: route, authenticate, authorise, validate, dispatch, answer. */
export function createPipeline(deps: PipelineDeps) {
  const timeoutMs = deps.requestTimeoutMs ?? 10_000;

  return async (req: Request, res: Response): Promise<void> => {
    const requestId = newRequestId();
    const url = req.url ?? '/';
    const reqPath = pathOf(url);
    const started = process.hrtime.bigint();
    res.setHeader('ziti-instance-id', deps.instanceId);
    res.setHeader('server', 'ziti-controller/v1.1.9');
    res.setHeader('x-request-id', requestId);
    for (const [name, value] of Object.entries(securityHeaders)) res.setHeader(name, value);
    // The request's logger is made only when something is logged (most requests log nothing at warn).
    let child: Logger | undefined;
    const log = (): Logger => (child ??= deps.logger.child({ requestId }));
    let matched: OperationDef | undefined;
    res.on('finish', () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      recordGatewayRequest(matched, res.statusCode, seconds);
      if (deps.logger.isLevelEnabled('info'))
        log().info({ method: req.method, path: reqPath, status: res.statusCode, ms: seconds * 1e3 }, 'request');
    });
    try {
      if (url.length > inputLimits.maxUrlLength) {
        throw new ApiError('URI_TOO_LONG', {
          code: 'UNHANDLED',
          message: `the URL has ${url.length} characters, at most ${inputLimits.maxUrlLength} are accepted`,
        });
      }
      const path = canonicalPath(reqPath);
      const found = deps.routes.lookup(req.method ?? 'GET', path);
      if (found.kind === 'not-found')
        throw new ApiError('NOT_FOUND', { code: 'UNHANDLED', message: `path ${reqPath} was not found` });
      if (found.kind === 'method-not-allowed') {
        res.setHeader('allow', found.allowed.join(', '));
        throw new ApiError('METHOD_NOT_ALLOWED', {
          code: 'UNHANDLED',
          message: `method ${req.method} is not allowed on ${reqPath}`,
        });
      }
      const { op, params } = found.match;
      matched = op;

      if (deps.authLimiter && rateLimitedOperations.has(op.operationId)) {
        const decision = deps.authLimiter.take((req.socket.remoteAddress ?? '').replace(/^::ffff:/, ''));
        if (!decision.allowed) {
          res.setHeader('retry-after', String(decision.retryAfterSeconds));
          throw new ApiError('SERVER_TOO_MANY_REQUESTS', {
            code: 'RATE_LIMITED',
            message: 'too many authentication attempts from this address, retry later',
          });
        }
      }

      const { caller, session } = await authenticate(req, res, op, deps);

      const read = await readBody(req, maxBodyBytes(op));
      const contentType = req.headers['content-type']?.split(';')[0]?.trim().toLowerCase();
      const raw = read && read.length > 0 ? read : undefined;
      let body: unknown;
      let rawBody: string | undefined;
      // GET and DELETE bodies are ignored (the console sends `{}` on GET) unless the operation
      // declares one (`GET /current-identity/mfa/recovery-codes`, `DELETE /identities/{id}/service-configs`).
      const takesBody = (op.method !== 'GET' && op.method !== 'DELETE') || op.body !== undefined;
      if (raw && takesBody) {
        if (isJsonType(contentType)) body = parseJson(raw);
        else if (readsRawBody(op)) rawBody = raw.toString('base64');
        else if (op.body !== undefined) {
          // A body the operation needs in a form it cannot read is refused, never dropped.
          throw new ApiError(
            'INVALID_CONTENT_TYPE',
            {
              code: 'UNHANDLED',
              message: `this operation reads ${op.consumes.join(', ')}, not ${contentType ?? 'an untyped body'}`,
            },
            `The content type supplied is not acceptable: ${contentType}`,
          );
        }
        // The console's habitual `{}` on a GET is no body (ZITI-FACTS §16).
        if (op.method === 'GET' && isEmptyObject(body)) body = undefined;
      }
      const input = validateOperationInput(op, {
        params,
        query: queryOf(req),
        body,
        bodyPresent: body !== undefined || rawBody !== undefined,
      });
      const headers: Record<string, string> = {};
      for (const name of ['authorization', 'mfa-validation-code', 'session-token']) {
        const v = req.headers[name];
        if (typeof v === 'string') headers[name] = v;
      }
      const request: OperationRequest = {
        requestId,
        api: op.api,
        operationId: op.operationId,
        params: input.params as Record<string, string>,
        query: input.query as Record<string, unknown>,
        ...(input.body !== undefined ? { body: input.body } : {}),
        ...(rawBody !== undefined ? { rawBody } : {}),
        ...(contentType ? { contentType } : {}),
        ...(req.headers.accept ? { accept: req.headers.accept } : {}),
        headers,
        ...(caller ? { caller } : {}),
        ...(session && hasPositions(session.positions) ? { after: session.positions } : {}),
        clientCertChain: clientCertificateChain(req.socket as TLSSocket),
        remoteAddress: (req.socket.remoteAddress ?? '').replace(/^::ffff:/, ''),
      };
      // A session-scoped read the gateway keeps: answered here unless the caller's own writes are
      // newer than the kept answer.
      let ticket: number | undefined;
      const label = `${op.api}.${op.operationId}`;
      if (deps.answers && caller && cachedOperations.has(label)) {
        const kept = deps.answers.get(caller.identityId, request.after);
        if (kept !== undefined) {
          answerCacheMetrics.lookup(label, 'hit');
          sendJson(res, 200, kept);
          return;
        }
        answerCacheMetrics.lookup(label, deps.answers.following ? 'miss' : 'bypass');
        ticket = deps.answers.ticket();
      }
      const settled = await settleProduced(() => dispatch(op, request, deps, timeoutMs));
      if (session && hasPositions(settled.produced)) {
        // Read-your-writes (docs/adr/0008): the session's next request, on any gateway replica,
        // carries these positions, and the services that consume them wait until applied. A
        // request that failed after a write committed counts too.
        await deps.sessions
          .recordPositions(session.id, settled.produced, deps.sessionTimeoutSeconds)
          .catch((err) => log().warn({ err }, 'could not record the positions of a write'));
      }
      if (!settled.ok) throw settled.error;
      const result = settled.result;
      if (
        ticket !== undefined &&
        caller &&
        !isErrorReply(result) &&
        result.status === 200 &&
        result.reflects &&
        result.body !== undefined &&
        result.rawBody === undefined &&
        !result.headers
      ) {
        const text = JSON.stringify(result.body);
        deps.answers?.fill(caller.identityId, text, result.reflects, ticket);
        sendJson(res, 200, text, result.contentType ?? 'application/json');
        return;
      }
      writeReply(req, res, result, requestId);
    } catch (err) {
      const apiError = toApiError(err, log);
      sendError(req, res, apiError, requestId);
    }
  };
}

function isEmptyObject(value: unknown): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && Object.keys(value).length === 0;
}

function parseJson(raw: Buffer): unknown {
  const text = raw.toString('utf8');
  if (text.trim() === '') return undefined;
  checkJsonDepth(text);
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new ApiError('COULD_NOT_PARSE_BODY', { code: 'UNHANDLED', message: (err as Error).message });
  }
}

type TouchedSession = NonNullable<Awaited<ReturnType<ApiSessionStore['touch']>>>;

async function authenticate(
  req: Request,
  res: Response,
  op: OperationDef,
  deps: PipelineDeps,
): Promise<{ caller?: Caller; session?: TouchedSession }> {
  // The reference ignores any session sent to /authenticate and always starts a new one.
  if (op.operationId === 'authenticate') return {};
  const token = req.headers['zt-session'];
  let session: TouchedSession | null = null;
  if (typeof token === 'string' && uuidPattern.test(token)) {
    session = await deps.sessions.touch(token, deps.sessionTimeoutSeconds);
  }
  const caller: Caller | undefined = session
    ? {
        identityId: session.identityId,
        apiSessionId: session.id,
        token: session.token,
        isAdmin: session.isAdmin,
        authQueries: await sessionAuthQueries(session, req, deps.extJwt),
        configTypes: session.configTypes,
      }
    : undefined;
  if (session) {
    res.setHeader('expiration-seconds', String(deps.sessionTimeoutSeconds));
    res.setHeader('expires-at', goTimeString(new Date(session.expiresAt)));
  }
  const found = { ...(caller ? { caller } : {}), ...(session ? { session } : {}) };
  if (op.access === 'none') return found;
  if (!caller) throw new ApiError('UNAUTHORIZED');
  if (caller.authQueries.length > 0 && !op.mfaPendingOk) throw new ApiError('UNAUTHORIZED');
  if (op.access === 'admin' && !caller.isAdmin) throw new ApiError('UNAUTHORIZED');
  return found;
}

async function dispatch(
  op: OperationDef,
  request: OperationRequest,
  deps: PipelineDeps,
  timeoutMs: number,
): Promise<OperationReply> {
  if (op.owner === 'gateway') {
    const local = deps.local[`${op.api}.${op.operationId}`];
    if (!local) throw new ApiError('NOT_IMPLEMENTED');
    return local(request);
  }
  try {
    return (await deps.bus.request(subjects.operation(op.owner, op.api, op.operationId), request, {
      timeoutMs,
    })) as OperationReply;
  } catch (err) {
    throw busFailureError(err, op.owner, op.operationId);
  }
}

function toApiError(err: unknown, log: () => Logger): ApiError {
  if (err instanceof ApiError) return err;
  log().error({ err }, 'unhandled error');
  return new ApiError('UNHANDLED', { code: 'UNHANDLED', message: 'An unhandled error occurred' });
}

function writeReply(req: Request, res: Response, reply: OperationReply, requestId: string): void {
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
  sendJson(res, reply.status, JSON.stringify(reply.body), reply.contentType ?? 'application/json');
}

export { randomUUID };
