import { Writable } from 'node:stream';
import { ApiError, statusOf } from '@ziti/contracts';
import { connect } from 'nats';
import { afterAll, describe, expect, it } from 'vitest';
import { infra, uniqueName, waitFor } from '../../../test/support/infra.ts';
import {
  BusUnavailableError,
  NatsBus,
  NoRespondersError,
  RequestTimeoutError,
  busFailureError,
  createLogger,
} from '../src/index.ts';
import { TcpProxy } from './support/tcp-proxy.ts';

/**
 * Issue 25 item 4: callers do not wait when the answer is known. While this process has no NATS
 * connection a request fails at once (503 SERVICE_UNAVAILABLE at the gateway), not after its
 * 10 s timeout; a request that is safe to repeat is sent again when its first send got no answer
 * (a replica killed with -9 mid-request), and one that is not is sent once. The machine's NATS is
 * never stopped: the tests cut their own connection through a loopback proxy.
 */
const silent = createLogger('test', 'silent');
const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

function capturedLogger() {
  let text = '';
  const sink = new Writable({
    write(chunk, _enc, done) {
      text += String(chunk);
      done();
    },
  });
  return { logger: createLogger('test', 'info', sink), lines: () => text.trim().split('\n').filter(Boolean) };
}

async function bus(url: string, namespace: string, logger = silent): Promise<NatsBus> {
  const b = await NatsBus.connect({ url, name: uniqueName('fast'), namespace, logger });
  cleanups.push(() => b.close());
  return b;
}

/**
 * Resolves once the server has processed what `bus` sent before (its subscriptions): a request
 * nobody serves is answered by the server after everything earlier on that connection.
 */
async function flushed(bus: NatsBus): Promise<void> {
  await bus.request('ziti.rpc.nobody.op.client.flush', {}).catch(() => undefined);
}

/** How long `run` took to settle (ms), and what it settled with. */
async function timed<T>(run: () => Promise<T>): Promise<{ ms: number; value?: T; error?: unknown }> {
  const started = performance.now();
  try {
    const value = await run();
    return { ms: performance.now() - started, value };
  } catch (error) {
    return { ms: performance.now() - started, error };
  }
}

describe('a request while the NATS connection is down', () => {
  it('fails at once with the unavailable error, and works again once the connection is back', async () => {
    const namespace = uniqueName('down');
    const proxy = await TcpProxy.to(infra.natsUrl);
    cleanups.push(() => proxy.close());
    const { logger, lines } = capturedLogger();
    const caller = await bus(proxy.url('nats:'), namespace, logger);
    const owner = await bus(infra.natsUrl, namespace);
    owner.serve('ziti.rpc.inventory.op.client.listThings', 'ziti-inventory', async () => ({ ok: 1 }));
    await waitFor(
      async () =>
        (await caller.request('ziti.rpc.inventory.op.client.listThings', {}, { timeoutMs: 1_000 })) !== undefined,
      'the owner to answer through the proxy',
    );

    await proxy.cut();
    await waitFor(() => !caller.available, 'the caller to see its connection gone', 5_000, 5);
    const failures = [];
    for (let i = 0; i < 5; i++)
      failures.push(await timed(() => caller.request('ziti.rpc.inventory.op.client.listThings', {})));
    for (const f of failures) {
      expect(f.error).toBeInstanceOf(BusUnavailableError);
      expect(f.ms).toBeLessThan(100);
      // The gateway's and callService's one mapping: 503 SERVICE_UNAVAILABLE, as a down owner.
      const mapped = busFailureError(f.error, 'inventory', 'listThings');
      expect(mapped).toBeInstanceOf(ApiError);
      expect(statusOf((mapped as ApiError).code)).toBe(503);
      expect((mapped as ApiError).code).toBe('SERVICE_UNAVAILABLE');
    }

    await proxy.restore();
    await waitFor(() => caller.available, 'the caller to reconnect', 15_000);
    expect(await caller.request('ziti.rpc.inventory.op.client.listThings', {})).toEqual({ ok: 1 });
    // One line when it went, one when it came back, however many requests failed between.
    const logged = lines().map((l) => JSON.parse(l) as { msg: string });
    expect(logged.filter((l) => l.msg.startsWith('lost the NATS connection'))).toHaveLength(1);
    expect(logged.filter((l) => l.msg === 'the NATS connection is back')).toHaveLength(1);
  }, 40_000);

  it('ends the requests in flight when the connection drops, instead of at their timeout', async () => {
    const namespace = uniqueName('drop');
    const proxy = await TcpProxy.to(infra.natsUrl);
    cleanups.push(() => proxy.close());
    const caller = await bus(proxy.url('nats:'), namespace);
    const owner = await bus(infra.natsUrl, namespace);
    let release: () => void = () => undefined;
    const held = new Promise<void>((r) => {
      release = r;
    });
    cleanups.push(async () => release());
    let received = 0;
    owner.serve('ziti.rpc.policy.op.client.slow', 'ziti-policy', async () => {
      received++;
      await held;
      return {};
    });
    await flushed(owner);
    const inFlight = timed(() => caller.request('ziti.rpc.policy.op.client.slow', {}, { timeoutMs: 10_000 }));
    await waitFor(() => received === 1, 'the owner to hold the request');
    const cutAt = performance.now();
    await proxy.cut();
    const result = await inFlight;
    expect(result.error).toBeInstanceOf(BusUnavailableError);
    // It ended with the connection, not after the 10 s timeout.
    expect(performance.now() - cutAt).toBeLessThan(500);
  });

  it('a closed bus fails its requests at once', async () => {
    const closed = await NatsBus.connect({
      url: infra.natsUrl,
      name: 'closed',
      namespace: uniqueName('c'),
      logger: silent,
    });
    await closed.close();
    const result = await timed(() => closed.request('ziti.rpc.auth.op.client.anything', {}));
    expect(result.error).toBeInstanceOf(NoRespondersError);
    expect(result.ms).toBeLessThan(100);
  });
});

describe('a request that is safe to repeat', () => {
  it('is answered by another replica when the one that took it died mid-request, within the first-attempt budget', async () => {
    const namespace = uniqueName('retry');
    const subject = 'ziti.rpc.inventory.op.client.listConfigs';
    const caller = await bus(infra.natsUrl, namespace);
    const survivor = await bus(infra.natsUrl, namespace);
    // A replica that takes the request and dies with it (kill -9 mid-request): it leaves the queue
    // group, so the next send goes to a live replica.
    const doomed = await connect({ servers: infra.natsUrl, name: 'doomed' });
    cleanups.push(() => doomed.close());
    let swallowed = 0;
    let served = 0;
    doomed.subscribe(`${namespace}.${subject}`, {
      queue: 'ziti-inventory',
      callback: () => {
        swallowed++;
        // The survivor joins only now, so the first send certainly went to the doomed replica.
        survivor.serve(subject, 'ziti-inventory', async () => {
          served++;
          return { items: [1, 2, 3] };
        });
        void doomed.close();
      },
    });
    await doomed.flush();
    const afterMs = 500;
    const result = await timed(() =>
      caller.request(subject, {}, { timeoutMs: 10_000, retry: { afterMs, attempts: 3 } }),
    );
    expect(result.value).toEqual({ items: [1, 2, 3] });
    expect(swallowed).toBe(1);
    expect(served).toBe(1);
    // The second send went out after `afterMs` and was answered at once: ~afterMs, not 10 s.
    expect(result.ms).toBeGreaterThanOrEqual(afterMs - 20);
    expect(result.ms).toBeLessThan(afterMs + 500);
  });

  it('takes the first reply of any send: a slow first replica still answers, and answers once', async () => {
    const namespace = uniqueName('slow');
    const subject = 'ziti.rpc.policy.op.client.listSlow';
    const caller = await bus(infra.natsUrl, namespace);
    const owner = await bus(infra.natsUrl, namespace);
    let calls = 0;
    owner.serve(subject, 'ziti-policy', async () => {
      const n = ++calls;
      await new Promise((r) => setTimeout(r, n === 1 ? 400 : 1_000));
      return { n };
    });
    await flushed(owner);
    const result = await timed(() =>
      caller.request(subject, {}, { timeoutMs: 5_000, retry: { afterMs: 150, attempts: 2 } }),
    );
    // The first send answered at ~400 ms, before the repeat (sent at 150 ms) could.
    expect(result.value).toEqual({ n: 1 });
    expect(calls).toBe(2);
    expect(result.ms).toBeLessThan(900);
  });

  it('still fails at once with no responders when nobody serves it', async () => {
    const caller = await bus(infra.natsUrl, uniqueName('none'));
    const result = await timed(() =>
      caller.request('ziti.rpc.audit.op.management.listNothing', {}, { retry: { afterMs: 200, attempts: 3 } }),
    );
    expect(result.error).toBeInstanceOf(NoRespondersError);
    expect(result.ms).toBeLessThan(150);
  });
});

describe('a request that is not safe to repeat (a write)', () => {
  it('is sent once: a handler slower than the read budget runs once', async () => {
    const namespace = uniqueName('write');
    const subject = 'ziti.rpc.auth.op.management.createThing';
    const caller = await bus(infra.natsUrl, namespace);
    const a = await bus(infra.natsUrl, namespace);
    const b = await bus(infra.natsUrl, namespace);
    let runs = 0;
    for (const replica of [a, b])
      replica.serve(subject, 'ziti-auth', async () => {
        runs++;
        await new Promise((r) => setTimeout(r, 1_200));
        return { created: true };
      });
    await Promise.all([flushed(a), flushed(b)]);
    const result = await timed(() => caller.request(subject, {}, { timeoutMs: 10_000 }));
    expect(result.value).toEqual({ created: true });
    expect(runs).toBe(1);
  });

  it('that nobody answers times out once, at its timeout', async () => {
    const namespace = uniqueName('lost');
    const subject = 'ziti.rpc.auth.op.management.createLost';
    const caller = await bus(infra.natsUrl, namespace);
    const hole = await connect({ servers: infra.natsUrl, name: 'hole' });
    cleanups.push(() => hole.close());
    let got = 0;
    hole.subscribe(`${namespace}.${subject}`, { queue: 'ziti-auth', callback: () => void got++ });
    await hole.flush();
    const result = await timed(() => caller.request(subject, {}, { timeoutMs: 600 }));
    expect(result.error).toBeInstanceOf(RequestTimeoutError);
    expect(result.ms).toBeGreaterThanOrEqual(590);
    expect(got).toBe(1);
  });
});
