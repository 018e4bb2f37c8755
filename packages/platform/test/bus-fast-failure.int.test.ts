import { Writable } from 'node:stream';
import {
  ApiError,
  inventoryCallContracts,
  maintenanceCallContracts,
  queueGroup,
  statusOf,
  subjects,
} from '@ziti/contracts';
import { connect } from 'nats';
import { afterAll, describe, expect, it } from 'vitest';
import { infra, uniqueName, waitFor } from '../../../test/support/infra.ts';
import {
  BusUnavailableError,
  NatsBus,
  NoRespondersError,
  RequestTimeoutError,
  busFailureError,
  callHandlers,
  callService,
  createLogger,
  serveCalls,
} from '../src/index.ts';
import { maxRepeatsToAll } from '../src/bus/nats-bus.ts';
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

  it('reaches a live replica when a hung one keeps its connection: the repeat goes to every replica', async () => {
    const namespace = uniqueName('hung');
    const subject = 'ziti.rpc.inventory.op.client.listHung';
    const caller = await bus(infra.natsUrl, namespace);
    const hung = await bus(infra.natsUrl, namespace);
    const live = await bus(infra.natsUrl, namespace);
    let hungTook = 0;
    const liveSaw: string[] = [];
    // Hung: takes its share of requests (first sends and repeats) and never answers any.
    hung.serve(subject, 'ziti-inventory', () => {
      hungTook++;
      return new Promise(() => undefined);
    });
    live.serve(subject, 'ziti-inventory', async (_payload, seen) => {
      liveSaw.push(seen);
      return { ok: true };
    });
    await Promise.all([flushed(hung), flushed(live)]);
    // Twenty reads, two sends each at most: had the repeat gone to the queue group too, NATS's
    // random pick would send both of some read's sends to the hung replica (each read: 1 in 4).
    const afterMs = 200;
    const results = await Promise.all(
      Array.from({ length: 20 }, () =>
        timed(() => caller.request(subject, {}, { timeoutMs: 3_000, retry: { afterMs, attempts: 2 } })),
      ),
    );
    for (const r of results) {
      expect(r.error).toBeUndefined();
      expect(r.value).toEqual({ ok: true });
      expect(r.ms).toBeLessThan(afterMs + 1_000);
    }
    expect(hungTook).toBeGreaterThan(0);
    // The handler sees the request's own subject, whichever way it came.
    expect(new Set(liveSaw)).toEqual(new Set([subject]));
  });

  it('sends at most maxRepeatsToAll repeats to every replica at once: a slow cluster is not multiplied', async () => {
    const namespace = uniqueName('slow-all');
    const subject = 'ziti.rpc.policy.op.client.listAllSlow';
    const caller = await bus(infra.natsUrl, namespace);
    const replicas = [await bus(infra.natsUrl, namespace), await bus(infra.natsUrl, namespace)];
    let runs = 0;
    for (const replica of replicas)
      replica.serve(subject, 'ziti-policy', async () => {
        runs++;
        await new Promise((r) => setTimeout(r, 600));
        return { ok: true };
      });
    await Promise.all(replicas.map(flushed));
    const requests = maxRepeatsToAll + 18;
    const results = await Promise.all(
      Array.from({ length: requests }, () =>
        timed(() => caller.request(subject, {}, { timeoutMs: 5_000, retry: { afterMs: 100, attempts: 2 } })),
      ),
    );
    for (const r of results) expect(r.value).toEqual({ ok: true });
    // Every request was repeated (each answer took 600 ms): the first maxRepeatsToAll repeats ran on
    // both replicas, the rest on one, as a first send does.
    await waitFor(() => runs >= requests + 2 * maxRepeatsToAll + (requests - maxRepeatsToAll), 'every send handled');
    expect(runs).toBe(requests + 2 * maxRepeatsToAll + (requests - maxRepeatsToAll));
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

describe('a write sent with an idempotency key (retry.settles)', () => {
  /** The gateway's rule: every reply is the outcome but "another send holds the key". */
  const settles = (reply: { ok: boolean; error?: { code: string } }) =>
    reply.ok || reply.error?.code !== 'IDEMPOTENCY_KEY_IN_USE';

  /**
   * Two replicas of a keyed write: the first send runs `first` (it holds the key), every later one
   * finds the key held. Answers the caller bus, the subject and how many sends ran.
   */
  async function keyedReplicas(name: string, first: () => Promise<unknown>) {
    const namespace = uniqueName(name);
    const subject = `ziti.rpc.auth.op.management.${name}`;
    const caller = await bus(infra.natsUrl, namespace);
    const replicas = [await bus(infra.natsUrl, namespace), await bus(infra.natsUrl, namespace)];
    const runs = { n: 0 };
    for (const replica of replicas)
      replica.serve(subject, 'ziti-auth', async () => {
        if (++runs.n > 1) throw new ApiError('IDEMPOTENCY_KEY_IN_USE');
        return first();
      });
    await Promise.all(replicas.map(flushed));
    return { caller, subject, runs };
  }

  it('waits for the send that holds the key when a repeat answers that it is held', async () => {
    // The first send runs the write slowly.
    const { caller, subject, runs } = await keyedReplicas('createKeyed', async () => {
      await new Promise((r) => setTimeout(r, 800));
      return { created: 1 };
    });
    const keyed = await timed(() =>
      caller.request(subject, {}, { timeoutMs: 5_000, retry: { afterMs: 200, attempts: 3, settles } }),
    );
    expect(keyed.error).toBeUndefined();
    expect(keyed.value).toEqual({ created: 1 });
    expect(keyed.ms).toBeGreaterThanOrEqual(780);
    expect(runs.n).toBeGreaterThan(1);
    // Without `settles` the first reply wins, whatever it says: the caller would be told 409.
    runs.n = 0;
    const plain = await timed(() =>
      caller.request(subject, {}, { timeoutMs: 5_000, retry: { afterMs: 200, attempts: 3 } }),
    );
    expect((plain.error as ApiError).code).toBe('IDEMPOTENCY_KEY_IN_USE');
  });

  it('answers that the key is held once no other send can answer, not a timeout', async () => {
    // The first send hangs (its replica died after claiming the key).
    const { caller, subject } = await keyedReplicas('createHeld', () => new Promise(() => undefined));
    const result = await timed(() =>
      caller.request(subject, {}, { timeoutMs: 1_500, retry: { afterMs: 200, attempts: 3, settles } }),
    );
    expect((result.error as ApiError).code).toBe('IDEMPOTENCY_KEY_IN_USE');
    expect(result.ms).toBeGreaterThanOrEqual(1_480);
  });
});

describe('a service-to-service call (callService)', () => {
  /** A replica that takes every call sent to it and never answers (frozen, its NATS connection still up). */
  async function frozenReplica(namespace: string, owner: 'inventory', action: string) {
    const frozen = await connect({ servers: infra.natsUrl, name: 'frozen' });
    cleanups.push(() => frozen.close());
    let taken = 0;
    frozen.subscribe(`${namespace}.${subjects.call(owner, action)}`, {
      queue: queueGroup(owner),
      callback: () => void taken++,
    });
    await frozen.flush();
    return { taken: () => taken };
  }

  it('that only reads is sent again while unanswered, and a live replica answers it', async () => {
    const namespace = uniqueName('call-read');
    const contract = maintenanceCallContracts.eventPosition;
    expect(contract.repeatable).toBe(true);
    const caller = await bus(infra.natsUrl, namespace);
    const frozen = await frozenReplica(namespace, 'inventory', contract.action);
    // The frozen replica is the only one at first, so the first send certainly reaches it; the live
    // replica joins once it has.
    const live = await bus(infra.natsUrl, namespace);
    let served = 0;
    const joined = waitFor(() => frozen.taken() === 1, 'the first send at the frozen replica').then(async () => {
      serveCalls(
        live,
        'inventory',
        callHandlers({ eventPosition: contract }, { eventPosition: async () => ({ position: ++served }) }),
      );
      await flushed(live);
    });
    const repeatAfterMs = 400;
    const result = await timed(() =>
      callService(caller, 'inventory', contract, {}, { timeoutMs: 8_000, repeatAfterMs }),
    );
    await joined;
    expect(result.error).toBeUndefined();
    expect(result.value).toEqual({ position: 1 });
    expect(served).toBe(1);
    // About one repeat interval (a second send may reach the frozen one again: then two), never the timeout.
    expect(result.ms).toBeGreaterThanOrEqual(repeatAfterMs - 20);
    expect(result.ms).toBeLessThan(3 * repeatAfterMs + 1_000);
  });

  it('that writes is sent once: a frozen replica holding it costs the timeout, and nothing runs twice', async () => {
    const namespace = uniqueName('call-write');
    const contract = inventoryCallContracts.routerEnrolled;
    expect(contract.repeatable).toBe(false);
    const caller = await bus(infra.natsUrl, namespace);
    const frozen = await frozenReplica(namespace, 'inventory', contract.action);
    const live = await bus(infra.natsUrl, namespace);
    let runs = 0;
    const result = await timed(async () => {
      const call = callService(
        caller,
        'inventory',
        contract,
        { routerId: 'r1', kind: 'edge', fingerprint: 'ab', certPem: 'pem' },
        { timeoutMs: 1_500, repeatAfterMs: 200 },
      );
      await waitFor(() => frozen.taken() === 1, 'the send at the frozen replica');
      serveCalls(
        live,
        'inventory',
        callHandlers({ routerEnrolled: contract }, { routerEnrolled: async () => (runs++, {}) }),
      );
      await flushed(live);
      return call;
    });
    expect(result.error).toBeInstanceOf(ApiError);
    expect((result.error as ApiError).code).toBe('TIMEOUT');
    expect(result.ms).toBeGreaterThanOrEqual(1_480);
    expect(frozen.taken()).toBe(1);
    expect(runs).toBe(0);
  });
});
