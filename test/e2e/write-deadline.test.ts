import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type E2e, startE2e } from '../support/e2e.ts';
import { uniqueName, waitFor } from '../support/infra.ts';

/**
 * Issue 35 item 2 on the cluster: a write either happens and is answered, or the caller is told it
 * did not happen. auth is frozen (SIGSTOP: a starved or stalled owner whose connection stays up)
 * while 24 identity creates wait on it; the gateway answers each 503 TIMEOUT after
 * `ZITI_REQUEST_TIMEOUT_MS` (2 s). When auth runs again it reads the 24 requests, all past their
 * deadline, and refuses each before it starts (`ziti_bus_requests_refused_total`): none of those
 * identities exists afterwards. Creates sent while it catches up are created exactly once or
 * refused with 503 SERVICE_UNAVAILABLE (`NOT_CARRIED_OUT`, `Retry-After`) and then do not exist.
 */
const timeoutMs = 2_000;
let e: E2e;

beforeAll(async () => {
  e = await startE2e({ env: { ZITI_REQUEST_TIMEOUT_MS: String(timeoutMs) } });
});
afterAll(async () => {
  await e?.stop();
});

async function refusedByAuth(): Promise<number> {
  const p = e.cluster.processes().find((x) => x.service === 'auth')!;
  const text = await (await fetch(`http://127.0.0.1:${p.healthPort}/metrics`)).text();
  let n = 0;
  for (const line of text.split('\n'))
    if (line.startsWith('ziti_bus_requests_refused_total{') && line.includes('target="auth"'))
      n += Number(line.split(' ').at(-1));
  return n;
}

describe('identity creates against a frozen auth', () => {
  it('either happen once and answer 201, or answer 503 and never happen', async () => {
    const tag = uniqueName('deadline');
    const create = async (name: string) => {
      const res = await e.call('management', {
        method: 'POST',
        path: '/identities',
        token: e.adminToken,
        body: { name, type: 'User', isAdmin: false },
        skipValidation: true,
      });
      // A success is what the spec says; a refusal is the error envelope with its status.
      if (res.status === 201)
        e.validator.validate('management', 'POST', '/edge/management/v1/identities', 201, res.json, 'application/json');
      return {
        name,
        status: res.status,
        code: res.json?.error?.code as string | undefined,
        cause: res.json?.error?.cause?.code as string | undefined,
        retryAfter: res.headers['retry-after'],
      };
    };
    expect((await create(`${tag}-warm`)).status).toBe(201);
    const auth = e.cluster.processes().find((x) => x.service === 'auth')!;
    const refusedBefore = await refusedByAuth();

    process.kill(auth.pid!, 'SIGSTOP');
    let frozen: Awaited<ReturnType<typeof create>>[];
    try {
      frozen = await Promise.all(Array.from({ length: 24 }, (_, i) => create(`${tag}-frozen-${i}`)));
    } finally {
      process.kill(auth.pid!, 'SIGCONT');
    }
    // The gateway gave up on each: the outcome it could not know yet.
    expect(frozen.map((r) => `${r.status} ${r.code}`)).toEqual(frozen.map(() => '503 TIMEOUT'));
    // Sent while auth works off what waited for it.
    const during = await Promise.all(Array.from({ length: 24 }, (_, i) => create(`${tag}-during-${i}`)));
    // auth read every frozen request and refused it before starting (each was past its deadline).
    await waitFor(
      async () => (await refusedByAuth()) - refusedBefore >= frozen.length,
      'auth to refuse the requests that waited for it',
      30_000,
    );

    const exists = async (name: string) => {
      const res = await e.call('management', {
        path: `/identities?filter=${encodeURIComponent(`name = "${name}"`)}`,
        token: e.adminToken,
      });
      expect(res.status).toBe(200);
      return res.json.data.length as number;
    };
    for (const r of frozen) expect(await exists(r.name), r.name).toBe(0);
    for (const r of during) {
      if (r.status === 201) expect(await exists(r.name), r.name).toBe(1);
      else {
        expect({ status: r.status, code: r.code }).toEqual({ status: 503, code: 'SERVICE_UNAVAILABLE' });
        expect(r.retryAfter).toBe('1');
        expect(await exists(r.name), r.name).toBe(0);
      }
    }
    console.log(
      `frozen auth: ${frozen.length} creates answered 503 TIMEOUT and refused by auth afterwards; while it caught up ${
        during.filter((r) => r.status === 201).length
      } created, ${during.filter((r) => r.status !== 201).length} refused (${[
        ...new Set(during.filter((r) => r.status !== 201).map((r) => `${r.status} ${r.code}/${r.cause}`)),
      ].join(', ')})`,
    );
  });
});

describe('an identity create sent again with its Idempotency-Key', () => {
  it('is answered from the first outcome and creates one identity', async () => {
    const name = uniqueName('idem');
    const key = uniqueName('key');
    const send = (body: Record<string, unknown>, k = key) =>
      e.call('management', {
        method: 'POST',
        path: '/identities',
        token: e.adminToken,
        headers: { 'idempotency-key': k },
        body,
        skipValidation: true,
      });
    const first = await send({ name, type: 'User', isAdmin: false });
    const again = await send({ name, type: 'User', isAdmin: false });
    for (const res of [first, again])
      e.validator.validate(
        'management',
        'POST',
        '/edge/management/v1/identities',
        res.status,
        res.json,
        'application/json',
      );
    expect(again.json.data.id).toBe(first.json.data.id);
    expect(again.headers['idempotent-replayed']).toBe('true');
    const listed = await e.call('management', {
      path: `/identities?filter=${encodeURIComponent(`name = "${name}"`)}`,
      token: e.adminToken,
    });
    expect(listed.json.data.map((i: { id: string }) => i.id)).toEqual([first.json.data.id]);
    // The key with other input is refused; a malformed key is a 400; neither creates anything.
    const other = await send({ name: `${name}-other`, type: 'User', isAdmin: false });
    expect({ status: other.status, code: other.json.error.code }).toEqual({
      status: 422,
      code: 'IDEMPOTENCY_KEY_REUSED',
    });
    const malformed = await send({ name: `${name}-bad`, type: 'User', isAdmin: false }, 'has space');
    expect(malformed.status).toBe(400);
    const none = await e.call('management', {
      path: `/identities?filter=${encodeURIComponent(`name contains "${name}-"`)}`,
      token: e.adminToken,
    });
    expect(none.json.data).toEqual([]);
  });
});
