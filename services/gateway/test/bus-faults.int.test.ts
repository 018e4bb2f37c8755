import { type Server, createServer } from 'node:http';
import { type OperationReply, queueGroup, subjects } from '@ziti/contracts';
import { MemoryApiSessionStore, NatsBus, createLogger } from '@ziti/platform';
import { connect } from 'nats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TcpProxy } from '../../../packages/platform/test/support/tcp-proxy.ts';
import { infra, uniqueName, waitFor } from '../../../test/support/infra.ts';
import { createGatewayApp } from '../src/app.ts';
import { readGatewayConfig } from '../src/config.ts';

/**
 * Issue 25 item 4 at the gateway, on real NATS: a read whose replica died mid-request is sent
 * again and answered by a live one within the read budget (`ZITI_GATEWAY_READ_RETRY_MS`), a write
 * is sent once (its handler runs once, however slow), and while the gateway has no NATS
 * connection every request is answered 503 SERVICE_UNAVAILABLE at once, with the envelope. The
 * gateway's connection is cut through a loopback proxy; the machine's NATS keeps running.
 */
const logger = createLogger('gateway', 'silent');
const namespace = uniqueName('gwfault');
const readRetryMs = 300;
let proxy: TcpProxy;
let gatewayBus: NatsBus;
const owners: NatsBus[] = [];
let server: Server;
let base = '';

// A read (GET, no session needed) and a write (POST, no session needed) of the tables.
const readSubject = subjects.operation('pki-enrollment', 'client', 'listWellKnownCas');
const writeSubject = subjects.operation('auth', 'client', 'authenticate');

async function owner(): Promise<NatsBus> {
  const bus = await NatsBus.connect({ url: infra.natsUrl, name: uniqueName('owner'), namespace, logger });
  owners.push(bus);
  return bus;
}

/** A round trip on the connection: the server has then processed its subscriptions. */
async function flushed(bus: NatsBus): Promise<void> {
  await bus.request('ziti.rpc.nobody.op.client.flush', {}).catch(() => undefined);
}

beforeAll(async () => {
  proxy = await TcpProxy.to(infra.natsUrl);
  gatewayBus = await NatsBus.connect({ url: proxy.url('nats:'), name: 'gateway', namespace, logger });
  const app = createGatewayApp({
    config: readGatewayConfig({ ZITI_GATEWAY_READ_RETRY_MS: String(readRetryMs), ZITI_AUTH_RATE_LIMIT: '0' }),
    bus: gatewayBus,
    sessions: new MemoryApiSessionStore(),
    logger,
  });
  server = createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r));
  await gatewayBus?.close();
  for (const b of owners) await b.close();
  await proxy?.close();
});

const read = () => fetch(`${base}/edge/client/v1/.well-known/est/cacerts`, { headers: { accept: 'application/json' } });
const write = () =>
  fetch(`${base}/edge/client/v1/authenticate?method=password`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'someone', password: 'not-the-password' }),
  });

async function timed(run: () => Promise<Response>): Promise<{ ms: number; res: Response }> {
  const started = performance.now();
  const res = await run();
  await res.arrayBuffer().catch(() => undefined);
  return { ms: performance.now() - started, res };
}

describe('a read whose replica was killed mid-request', () => {
  it('is answered by the live replica after the read budget, not the 10 s timeout', async () => {
    const survivor = await owner();
    let served = 0;
    // The replica that takes the read and dies with it (kill -9): gone from the queue group at once.
    const doomed = await connect({ servers: infra.natsUrl, name: 'doomed' });
    doomed.subscribe(`${namespace}.${readSubject}`, {
      queue: queueGroup('pki-enrollment'),
      callback: () => {
        survivor.serve(readSubject, queueGroup('pki-enrollment'), async (): Promise<OperationReply> => {
          served++;
          return { status: 200, body: { served } };
        });
        void doomed.close();
      },
    });
    await doomed.flush();
    const { ms, res } = await timed(read);
    expect(res.status).toBe(200);
    expect(served).toBe(1);
    expect(ms).toBeGreaterThanOrEqual(readRetryMs - 20);
    expect(ms).toBeLessThan(readRetryMs + 700);
  });
});

describe('a write', () => {
  it('is sent once: a handler slower than the read budget runs once, on one of two replicas', async () => {
    let runs = 0;
    const replicas = [await owner(), await owner()];
    for (const r of replicas)
      r.serve(writeSubject, queueGroup('auth'), async (): Promise<OperationReply> => {
        runs++;
        await new Promise((done) => setTimeout(done, readRetryMs * 3));
        return { status: 200, body: { data: { token: 'x' } } };
      });
    await Promise.all(replicas.map(flushed));
    const { res } = await timed(write);
    expect(res.status).toBe(200);
    expect(runs).toBe(1);
  });
});

describe('while the gateway has no NATS connection', () => {
  it('answers every request 503 SERVICE_UNAVAILABLE at once, with the envelope, and serves again once it is back', async () => {
    await waitFor(async () => (await read()).status === 200, 'the read to be served');
    await proxy.cut();
    await waitFor(() => !gatewayBus.available, 'the gateway to see its NATS connection gone', 5_000, 5);
    for (const run of [read, write, read]) {
      const started = performance.now();
      const res = await run();
      const body = (await res.json()) as { error: { code: string }; meta: unknown };
      const ms = performance.now() - started;
      expect(res.status).toBe(503);
      expect(body.error.code).toBe('SERVICE_UNAVAILABLE');
      expect(body.meta).toEqual({ apiVersion: '0.0.1', apiEnrollmentVersion: '0.0.1' });
      expect(ms).toBeLessThan(100);
    }
    await proxy.restore();
    await waitFor(() => gatewayBus.available, 'the gateway to reconnect', 15_000);
    await waitFor(async () => (await read()).status === 200, 'the read to be served again');
  }, 40_000);
});
