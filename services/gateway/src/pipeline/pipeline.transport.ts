import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import {
  ApiError,
  type OperationDef,
  type OperationReply,
  type OperationRequest,
  inputLimits,
  isErrorReply,
  maxBodyBytes,
  readsRawBody,
  subjects,
  validateOperationInput,
} from '@ziti/contracts';
import {
  type ApiSessionStore,
  type Bus,
  type BusReply,
  type Logger,
  type RequestOptions,
  answerCacheMetrics,
  busFailureError,
  enrollmentTokenOf,
  hasPositions,
  settleProduced,
} from '@ziti/platform';
import type { AnswerCaches } from '../answer-cache/answer-cache-follower.transport.ts';
import { keptAnswerOf } from '../answer-cache/answer-concerns.domain.ts';
import { ClientAddresses } from '../edge-auth/client-address.transport.ts';
import { authenticate, isRateLimited, limitAuthenticationAttempts } from '../edge-auth/edge-auth.transport.ts';
import type { ExtJwtSecondaryCheck } from '../edge-auth/ext-jwt-secondary.transport.ts';
import type { AuthRateLimiter } from '../edge-auth/rate-limit.domain.ts';
import { recordGatewayRequest } from '../metrics/request-metrics.transport.ts';
import { type RouteTable, canonicalPath } from '../routes/route-table.transport.ts';
import { clientCertificateChain } from '@ziti/platform/tls-peer';
import { isEmptyObject, isJsonType, parseJson, readBody, unreadableBody } from './body-reader.transport.ts';
import {
  answerText,
  newRequestId,
  sendError,
  sendJson,
  setAnswerHeaders,
  toApiError,
  writeReply,
} from './responses.transport.ts';

/** An operation the gateway answers itself with one reply (the informational operations). */
export type LocalHandler = (request: OperationRequest) => Promise<OperationReply>;

/**
 * An operation the gateway answers as a stream (Server-Sent Events, JSON lines): after
 * authentication, authorisation and validation the pipeline hands it the request and the response,
 * which it owns from then on. An error thrown before it wrote anything is answered with the error
 * envelope like any other; once it started writing, a failure ends the response. It resolves when
 * the answer is over (the client went away, the stream ended).
 */
export interface StreamingHandler {
  readonly kind: 'stream';
  serve(request: OperationRequest, exchange: { req: Request; res: Response }): Promise<void>;
}

/** How the gateway answers one of its own operations: with a reply, or as a stream. */
export type GatewayHandler = LocalHandler | StreamingHandler;

export function isStreamingHandler(handler: GatewayHandler): handler is StreamingHandler {
  return typeof handler === 'object' && handler.kind === 'stream';
}

/**
 * The gateway answers on Node's own request and response types: express sits in front with one
 * middleware (ADR 0019), and the pipeline routes by the operation table and reads bodies per
 * operation itself (below).
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
  /** Operations the gateway answers itself (informational, streams), keyed `<api>.<operationId>`. */
  local: Record<string, GatewayHandler>;
  logger: Logger;
  instanceId: string;
  requestTimeoutMs?: number;
  /** Limits the authentication operations per client address (429 SERVER_TOO_MANY_REQUESTS). */
  authLimiter?: AuthRateLimiter;
  /** The client's address of a request, through the trusted proxies; the socket's peer when absent. */
  clientAddresses?: ClientAddresses;
  /**
   * A read (GET) not answered after this long is sent again (up to `readAttempts` sends within the
   * request's timeout; the first reply wins): a replica killed mid-request costs about this, not
   * the whole timeout. 0 or absent: every request is sent once. A write is sent again so only when
   * its caller gave it an `Idempotency-Key`: the owner runs it once whatever the number of sends
   * (db/idempotency.ts), and a send answered that another send holds the key waits for that one's
   * answer. Other writes are always sent once: a repeat could apply them twice.
   */
  readRetryMs?: number;
  /** Checks the bearer JWT of sessions whose auth policy requires an external JWT signer. */
  extJwt?: ExtJwtSecondaryCheck;
  /** Session-scoped answers kept until an owner's event changes them (docs/adr/0015). */
  answers?: AnswerCaches;
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

/** Sends of a read at most: the first, and two more while no reply came (a dead replica, then a hung one). */
const readAttempts = 3;

/** The whole edge for one request: route, authenticate, authorise, validate, dispatch, answer. */
export function createPipeline(deps: PipelineDeps) {
  const timeoutMs = deps.requestTimeoutMs ?? 10_000;
  const addresses = deps.clientAddresses ?? new ClientAddresses();
  const sendOnce: RequestOptions = { timeoutMs };
  const readOptions: RequestOptions =
    deps.readRetryMs && deps.readRetryMs > 0
      ? { timeoutMs, retry: { afterMs: deps.readRetryMs, attempts: readAttempts } }
      : sendOnce;
  const keyedWriteOptions: RequestOptions =
    readOptions.retry !== undefined
      ? { timeoutMs, retry: { ...readOptions.retry, settles: settlesKeyedWrite } }
      : sendOnce;
  const busOptions = (op: OperationDef, request: OperationRequest): RequestOptions =>
    op.method === 'GET' ? readOptions : request.idempotencyKey !== undefined ? keyedWriteOptions : sendOnce;

  return async (req: Request, res: Response): Promise<void> => {
    const requestId = newRequestId();
    const url = req.url ?? '/';
    const reqPath = pathOf(url);
    const started = process.hrtime.bigint();
    setAnswerHeaders(res, deps.instanceId, requestId);
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
      const remoteAddress = addresses.of(req);

      if (deps.authLimiter && isRateLimited(op))
        await limitAuthenticationAttempts(res, op, deps.authLimiter, remoteAddress);

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
        else if (op.body !== undefined) throw unreadableBody(op, contentType);
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
        remoteAddress,
        ...idempotencyKeyOf(req, op, caller !== undefined, input),
      };
      if (op.owner === 'gateway') {
        const local = deps.local[`${op.api}.${op.operationId}`];
        if (local && isStreamingHandler(local)) {
          await local.serve(request, { req, res });
          return;
        }
      }
      // A session-scoped read the gateway keeps: answered here unless the caller's own writes are
      // newer than the kept answer.
      let ticket: number | undefined;
      const label = `${op.api}.${op.operationId}`;
      const keeping = deps.answers && caller ? keptAnswerOf(label, caller, url) : undefined;
      const answers = keeping ? deps.answers![keeping.cache] : undefined;
      if (answers && keeping && caller) {
        const kept = answers.get(caller.identityId, request.after, keeping.key);
        if (kept !== undefined) {
          answerCacheMetrics.lookup(label, 'hit');
          sendJson(res, 200, kept);
          return;
        }
        answerCacheMetrics.lookup(label, answers.following ? 'miss' : 'bypass');
        ticket = answers.ticket();
      }
      // The positions of the events this request's writes produced come back beside the answer,
      // not in it: `settleProduced` (platform causality.ts) opens an AsyncLocalStorage context
      // around the dispatch; on the owner, a commit calls `recordProduced` (db/outbox.ts,
      // `inEventTransaction`) into the handler's own context, `toBusReply` (bus/reply.ts) puts what
      // it collected in the bus reply's `positions`, and `fromBusReply` on this side records them
      // into this context. So `settled.produced` holds every position any owner's commit produced.
      const settled = await settleProduced(() => dispatch(op, request, deps, busOptions(op, request)));
      if (session && hasPositions(settled.produced)) {
        // Read-your-writes (docs/adr/0008): the session's next request, on any gateway replica,
        // carries these positions (edge-auth's `touch` returns them as `after`), and the services
        // that consume them wait until applied. A request that failed after a write committed
        // counts too.
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
        const text = answerText(result.body);
        answers?.fill(caller.identityId, text, result.reflects, ticket, keeping?.key);
        sendJson(res, 200, text, result.contentType ?? 'application/json');
        return;
      }
      writeReply(req, res, result, requestId);
    } catch (err) {
      const apiError = toApiError(err, log);
      // A stream that failed once it started writing cannot answer with the envelope any more.
      if (res.headersSent) {
        if (!res.writableEnded) res.destroy();
        return;
      }
      sendError(req, res, apiError, requestId, { envelope: matched !== undefined && answersAsStream(matched) });
    }
  };
}

/**
 * The writes a caller without a session may send with an `Idempotency-Key`: the enrollments that
 * spend a one-time token, keyed by that token (platform db/idempotency.ts `tokenScope`), so that
 * an enrollment whose answer was lost can be sent again and get its certificate rather than "token
 * already used". Not one without a token (`?method=ca`: nothing tells one caller from another),
 * nor a login (its answer is a session token, which is never kept).
 */
const tokenEnrollments = new Set(['enroll', 'enrollOtt', 'enrollOttCa', 'enrollUpdb', 'enrollErOtt']);

function keyedWithoutSession(op: OperationDef, input: { query: unknown; body?: unknown }): boolean {
  return op.api === 'client' && tokenEnrollments.has(op.operationId) && enrollmentTokenOf(input) !== undefined;
}

/**
 * The `Idempotency-Key` of a write (1 to 255 visible ASCII characters), which its owner answers a
 * repeat by (platform db/idempotency.ts); ignored on a read, and for a caller without a session
 * except on a token enrollment (keys are per identity, or per token).
 */
function idempotencyKeyOf(
  req: IncomingMessage,
  op: OperationDef,
  authenticated: boolean,
  input: { query: unknown; body?: unknown },
): { idempotencyKey?: string } {
  const raw = req.headers['idempotency-key'];
  if (raw === undefined || op.method === 'GET') return {};
  if (!authenticated && !keyedWithoutSession(op, input)) return {};
  const key = Array.isArray(raw) ? raw.join(',') : raw;
  if (!/^[\x21-\x7e]{1,255}$/.test(key))
    throw ApiError.field('Idempotency-Key', 'must be 1 to 255 visible ASCII characters', key.slice(0, 64));
  return { idempotencyKey: key };
}

/**
 * Whether a reply to one send of a keyed write is its outcome: every reply but "the key is held by
 * another send still running" (409 IDEMPOTENCY_KEY_IN_USE), which is the outcome only when no
 * other send answers.
 */
function settlesKeyedWrite(reply: BusReply): boolean {
  return reply.ok || reply.error.code !== 'IDEMPOTENCY_KEY_IN_USE';
}

/** Operations whose success is a stream (events, JSON lines): their errors are always the JSON envelope. */
function answersAsStream(op: OperationDef): boolean {
  return op.produces.some((type) => type === 'text/event-stream' || type === 'application/x-ndjson');
}

async function dispatch(
  op: OperationDef,
  request: OperationRequest,
  deps: PipelineDeps,
  options: RequestOptions,
): Promise<OperationReply> {
  if (op.owner === 'gateway') {
    const local = deps.local[`${op.api}.${op.operationId}`];
    if (!local || isStreamingHandler(local)) throw new ApiError('NOT_IMPLEMENTED');
    return local(request);
  }
  try {
    // The owner's handler of this subject: its entry in services/<owner>/src/operation-bindings.transport.ts
    // (generated: subject, route, and the transport slice that answers it).
    return (await deps.bus.request(
      subjects.operation(op.owner, op.api, op.operationId),
      request,
      options,
    )) as OperationReply;
  } catch (err) {
    throw busFailureError(err, op.owner, op.operationId);
  }
}
