import { randomBytes } from 'node:crypto';
import { IncomingMessage, ServerResponse } from 'node:http';
import { type Server, createServer } from 'node:https';
import type { Duplex } from 'node:stream';
import { ApiError, type OperationDef, inputLimits, operations } from '@ziti/contracts';
import {
  type ApiSessionStore,
  type Bus,
  type Logger,
  type RunnableService,
  fetchServerIdentity,
  httpDrain,
} from '@ziti/platform';
import express from 'express';
import type { GatewayConfig } from './config.ts';
import type { AnswerCaches } from './answer-cache/answer-cache-follower.transport.ts';
import { answerCacheWiring } from './answer-cache/answer-cache.wiring.ts';
import { edgeAuthWiring } from './edge-auth/edge-auth.wiring.ts';
import type { AuthRateLimiter } from './edge-auth/rate-limit.domain.ts';
import type { EventStreams } from './event-stream/event-stream.transport.ts';
import { eventStreamsWiring } from './event-stream/event-stream.wiring.ts';
import { localHandlersWiring } from './pipeline/local-handlers.wiring.ts';
import { createPipeline } from './pipeline/pipeline.transport.ts';
import { corsStep } from './pipeline/cors.transport.ts';
import { newRequestId, rawErrorResponse, sendError } from './pipeline/responses.transport.ts';
import { RouteTable } from './routes/route-table.transport.ts';
import { tlsCiphers } from './tls/tls.transport.ts';
import {
  type ControlChannelHandoff,
  apiPortAlpn,
  handControlChannelOver,
} from './tls/control-passthrough.transport.ts';

export interface GatewayDeps {
  config: GatewayConfig;
  bus: Bus;
  sessions: ApiSessionStore;
  logger: Logger;
  /** Defaults to the contracts' table; tests may narrow it. */
  operations?: readonly OperationDef[];
  /** Session-scoped answers the pipeline keeps (docs/adr/0015); none when absent. */
  answers?: AnswerCaches;
  /** The event stream's subscribers (ended when the gateway stops); made here when absent. */
  eventStreams?: EventStreams;
  /**
   * The authentication rate limit: the cluster's is shared by the gateway replicas through Redis
   * (`SharedRateLimiter`); absent, this process counts alone (`npm start`'s one process).
   */
  authLimiter?: AuthRateLimiter;
  /**
   * Where routers that ask the API port for the control channel (ALPN `ziti-ctrl`) go: the router
   * edge in this process (`npm start`). Absent (the cluster, whose routers use the router edge's own
   * port): the API port serves HTTPS only.
   */
  controlChannel?: ControlChannelHandoff;
}

/**
 * The gateway's express app: one middleware, CORS then the pipeline, which routes by the operation
 * table, reads each body within its operation's limit and answers every error with the envelope.
 */
export function createGatewayApp(deps: GatewayDeps): express.Express {
  const cors = corsStep(deps.config.corsOrigins);
  const pipeline = createPipeline({
    routes: new RouteTable(deps.operations ?? operations),
    bus: deps.bus,
    sessions: deps.sessions,
    sessionTimeoutSeconds: deps.config.sessionTimeoutSeconds,
    local: localHandlersWiring(deps, deps.eventStreams ?? eventStreamsWiring(deps)),
    logger: deps.logger,
    instanceId: `c${randomBytes(12).toString('hex')}`,
    ...edgeAuthWiring(deps),
    readRetryMs: deps.config.readRetryMs,
    requestTimeoutMs: deps.config.requestTimeoutMs,
    ...(deps.answers ? { answers: deps.answers } : {}),
  });
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.use((req, res) => {
    if (cors(req, res) === 'answered') return;
    // The pipeline answers its own errors; anything that still escapes answers with the envelope.
    pipeline(req, res).catch((err: unknown) => {
      deps.logger.error({ err }, 'unhandled error outside the pipeline');
      if (res.headersSent) res.destroy();
      else sendError(req, res, err instanceof ApiError ? err : new ApiError('UNHANDLED'), newRequestId());
    });
  });
  return app;
}

/**
 * Request and response classes for Node's HTTP server whose instances carry the app's express
 * prototypes from birth. Express otherwise swaps the prototype of every request and response as it
 * takes them (`app.handle`), and V8 then deoptimises every later property access on both: measured,
 * that was over a fifth of the gateway's CPU per login (docs/adr/0019).
 */
export function expressMessageClasses(app: express.Express): {
  IncomingMessage: typeof IncomingMessage;
  ServerResponse: typeof ServerResponse;
} {
  function GatewayRequest(this: unknown, ...args: unknown[]) {
    Reflect.apply(IncomingMessage, this, args);
  }
  GatewayRequest.prototype = app.request;
  function GatewayResponse(this: unknown, ...args: unknown[]) {
    Reflect.apply(ServerResponse, this, args);
  }
  GatewayResponse.prototype = app.response;
  return {
    IncomingMessage: GatewayRequest as unknown as typeof IncomingMessage,
    ServerResponse: GatewayResponse as unknown as typeof ServerResponse,
  };
}

/**
 * Requests Node's HTTP parser refuses before the app sees them: a head over `maxHeaderSize` is a
 * 431, anything else malformed a 400, both with the error envelope (Node would answer a bare
 * status). The rest of the request is read and dropped for a moment so the client gets the answer
 * instead of a reset; then the connection closes.
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  const answering = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent;
  // A client gone, too slow (Node's headers and request timeouts) or already answered is only closed.
  if (err.code === 'ECONNRESET' || err.code === 'ERR_HTTP_REQUEST_TIMEOUT' || !socket.writable || answering) {
    socket.destroy();
    return;
  }
  const error =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? new ApiError('REQUEST_HEADER_FIELDS_TOO_LARGE', {
          code: 'UNHANDLED',
          message: `the request line and headers may have at most ${inputLimits.maxHeaderBytes} bytes`,
        })
      : err.code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW'
        ? new ApiError('REQUEST_ENTITY_TOO_LARGE', { code: 'UNHANDLED', message: 'chunk extensions too large' })
        : new ApiError('COULD_NOT_VALIDATE', { code: 'UNHANDLED', message: 'malformed HTTP request' });
  // The parser is done with this connection: stop feeding it, drain what the client still sends.
  socket.removeAllListeners('data');
  let drained = 0;
  socket.on('data', (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > inputLimits.maxBodyBytes) socket.destroy();
  });
  socket.end(rawErrorResponse(error, newRequestId()));
  setTimeout(() => socket.destroy(), 2_000).unref();
}

/** The gateway process: HTTPS on the configured address with the controller-issued certificate. */
export function createGateway(
  deps: GatewayDeps & { onListening?: (port: number) => void },
): RunnableService & { port(): number } {
  let server: Server | undefined;
  let drain: (() => Promise<void>) | undefined;
  let passthrough: { closeAll(): void } | undefined;
  let started = false;
  const follower = answerCacheWiring(deps);
  const eventStreams = deps.eventStreams ?? eventStreamsWiring(deps);
  return {
    name: 'gateway',
    port: () => {
      const address = server?.address();
      return typeof address === 'object' && address ? address.port : deps.config.port;
    },
    async start() {
      const identity = await fetchServerIdentity(deps.bus, deps.logger);
      // Kept answers are served only once the events that change them are followed.
      await follower.start();
      const app = createGatewayApp({ ...deps, answers: follower.caches, eventStreams });
      server = createServer(
        {
          ...expressMessageClasses(app),
          cert: identity.certChainPem,
          key: identity.keyPem,
          // No CA list in the certificate request: a Go client (the ziti CLI, the SDKs) sends only a
          // certificate whose issuer is listed, and a third-party CA's identities must be able to log in
          // and enroll. Whoever the chain belongs to is decided after TLS (pki-enrollment, auth).
          requestCert: true,
          rejectUnauthorized: false,
          minVersion: 'TLSv1.2',
          ciphers: tlsCiphers,
          honorCipherOrder: true,
          maxHeaderSize: inputLimits.maxHeaderBytes,
          ...(deps.controlChannel ? { ALPNCallback: apiPortAlpn } : {}),
        },
        app,
      );
      server.keepAliveTimeout = 65_000;
      if (deps.controlChannel) passthrough = handControlChannelOver(server, deps.controlChannel, deps.logger);
      server.on('clientError', answerClientError);
      // SIGTERM under keep-alive traffic: stop accepting, answer what is in flight with
      // `Connection: close`, close idle connections, then stop.
      drain = httpDrain(server).drain;
      await new Promise<void>((resolve, reject) => {
        server!.once('error', reject);
        server!.listen(deps.config.port, deps.config.bind, () => resolve());
      });
      started = true;
      deps.logger.info({ url: `https://${deps.config.advertisedAddress}`, port: this.port() }, 'gateway listening');
      deps.onListening?.(this.port());
    },
    async ready() {
      return started;
    },
    async stop() {
      // Event-stream subscribers never finish by themselves: ended first, they reconnect elsewhere.
      await eventStreams.closeAll();
      // Routers handed to the router edge on this port reconnect once it is back.
      passthrough?.closeAll();
      await drain?.();
      await new Promise<void>((resolve) => {
        if (!server) return resolve();
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await follower.stop();
      await deps.bus.close();
      await deps.sessions.close();
      await deps.authLimiter?.close?.();
    },
  };
}
