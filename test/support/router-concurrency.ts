import { X509Certificate, createHash } from 'node:crypto';
import { expect } from 'vitest';
import { makeCsr } from '../../services/pki-enrollment/test/support.ts';
import type { Api } from './e2e.ts';
import type { HttpRequest, HttpResponse } from './http.ts';
import { uniqueName } from './infra.ts';

/**
 * Edge routers created, enrolled (erott, with CSRs made here), re-enrolled and deleted many at a
 * time, the way an operator's automation does it. inventory and pki-enrollment call each other
 * for all of these; a service that waited on the other while holding its own transaction would
 * deadlock here (under `npm start`: one connection per service), so every batch must finish
 * before its deadline, with no 5xx, and leave each router in the state its last change implies.
 */
export interface RouterConcurrencyTarget {
  call(api: Api, req: HttpRequest & { token?: string }): Promise<HttpResponse>;
  adminToken: string;
}

/** Rejects when `work` has not settled after `ms`: a deadlock shows as this, never as a hang. */
export async function within<T>(ms: number, what: string, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms (deadlock?)`)), ms);
  });
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

const sha1 = (pem: string) => createHash('sha1').update(new X509Certificate(pem).raw).digest('hex');
const leafOf = (chain: string) => `${chain.split('-----END CERTIFICATE-----')[0]}-----END CERTIFICATE-----\n`;

async function routerCsrs(routerId: string) {
  const [client, server] = await Promise.all([
    makeCsr(`CN=${routerId}`),
    makeCsr(`CN=${routerId}`, [{ type: 'dns', value: `${routerId.toLowerCase()}.router.example` }]),
  ]);
  return { certCsr: client.csrPem, serverCertCsr: server.csrPem };
}

export async function runRouterConcurrency(
  t: RouterConcurrencyTarget,
  options: { routers: number; batchDeadlineMs: number },
): Promise<void> {
  const n = options.routers;
  const admin = (req: HttpRequest) => t.call('management', { ...req, token: t.adminToken });
  const batch = <T>(what: string, work: Promise<T>[]) => within(options.batchDeadlineMs, what, Promise.all(work));
  const range = (k: number) => Array.from({ length: k }, (_, i) => i);

  const create = async (): Promise<string> => {
    const res = await admin({ method: 'POST', path: '/edge-routers', body: { name: uniqueName('cer') } });
    expect(res.status, `create: ${res.text}`).toBe(201);
    return res.json.data.id as string;
  };
  const detail = async (id: string) => {
    const res = await admin({ path: `/edge-routers/${id}` });
    expect(res.status, `detail of ${id}: ${res.text}`).toBe(200);
    return res.json.data as { isVerified: boolean; fingerprint?: string; enrollmentToken?: string };
  };
  const tokenOf = async (id: string): Promise<string> => {
    const d = await detail(id);
    expect(d.isVerified, `router ${id} awaits enrollment`).toBe(false);
    expect(d.enrollmentToken, `router ${id} shows its enrollment token`).toMatch(/^[0-9a-f-]{36}$/);
    return d.enrollmentToken!;
  };
  const enroll = (token: string, csrs: { certCsr: string; serverCertCsr: string }) =>
    t.call('client', {
      method: 'POST',
      path: '/enroll/erott',
      body: { token, clientCsr: csrs.certCsr, serverCsr: csrs.serverCertCsr },
    });
  const reEnroll = async (id: string) => {
    const res = await admin({ method: 'POST', path: `/edge-routers/${id}/re-enroll` });
    expect(res.status, `re-enroll of ${id}: ${res.text}`).toBe(200);
  };
  const enrollmentsOf = async (ids: string[]) => {
    const filter = `edgeRouter in [${ids.map((id) => `"${id}"`).join(', ')}] limit none`;
    const res = await admin({ path: `/enrollments?filter=${encodeURIComponent(filter)}` });
    expect(res.status, res.text).toBe(200);
    return res.json.data as { edgeRouterId: string; token: string; method: string }[];
  };
  /** The certificate each router was last enrolled with (its fingerprint is what inventory must show). */
  const enrolledWith = new Map<string, string>();
  const enrollOk = async (id: string, token: string, csrs: { certCsr: string; serverCertCsr: string }) => {
    const res = await enroll(token, csrs);
    expect(res.status, `enroll of ${id}: ${res.text}`).toBe(200);
    enrolledWith.set(id, sha1(leafOf(res.json.data.cert as string)));
  };

  // 1. Routers created at once: each asks pki-enrollment for its enrollment.
  const first = await batch('creating the first routers', range(n).map(create));

  // 2. Those enroll (pki-enrollment tells inventory) while as many again are created (inventory asks
  //    pki-enrollment): the two services call each other at the same time.
  const firstCsrs = await Promise.all(first.map(routerCsrs));
  const firstTokens = await Promise.all(first.map(tokenOf));
  const second = await batch('enrolling while creating', [
    ...first.map(async (id, i) => {
      await enrollOk(id, firstTokens[i]!, firstCsrs[i]!);
      return undefined;
    }),
    ...range(n).map(create),
  ]).then((ids) => ids.filter((id): id is string => id !== undefined));
  expect(second).toHaveLength(n);
  for (const id of first)
    expect(await detail(id)).toMatchObject({ isVerified: true, fingerprint: enrolledWith.get(id) });

  // 3. The new routers enroll while each is re-enrolled at the same moment (the same router and
  //    its enrollment from both sides), and the enrolled ones are re-enrolled too. Either order is
  //    fine for the enrollment (200, or 400 when the re-enrollment replaced its token first), but
  //    every router ends awaiting enrollment with exactly one enrollment, the one it shows.
  const secondCsrs = await Promise.all(second.map(routerCsrs));
  const secondTokens = await Promise.all(second.map(tokenOf));
  await batch('enrolling while re-enrolling', [
    ...second.map(async (id, i) => {
      const res = await enroll(secondTokens[i]!, secondCsrs[i]!);
      if (res.status !== 200) {
        expect(res.status, `enroll of ${id}: ${res.text}`).toBe(400);
        expect(res.json.error.code).toBe('INVALID_ENROLLMENT_TOKEN');
      }
    }),
    ...second.map(reEnroll),
    ...first.map(reEnroll),
  ]);
  const all = [...first, ...second];
  const pending = await enrollmentsOf(all);
  expect(pending.map((e) => e.edgeRouterId).sort()).toEqual([...all].sort());
  expect(pending.every((e) => e.method === 'erott')).toBe(true);
  const tokens = new Map<string, string>();
  for (const id of all) {
    const token = await tokenOf(id);
    expect(pending.find((e) => e.edgeRouterId === id)?.token).toBe(token);
    tokens.set(id, token);
  }
  // Whichever came first, the re-enrollment replaced the token each new router raced with: a 400
  // says it had already, a 200 that it came after the enrollment.
  for (const [i, id] of second.entries())
    expect(tokens.get(id), `router ${id} awaits a new enrollment, not the one it raced`).not.toBe(secondTokens[i]);

  // 4. Everything at once: every router enrolls with its current token (a few of them twice with
  //    the same token: exactly one use wins), a third batch is created, and those are deleted
  //    again right away together with some older ones.
  const csrs = new Map(await Promise.all(all.map(async (id) => [id, await routerCsrs(id)] as const)));
  const doubled = all.slice(0, Math.max(2, Math.floor(n / 4)));
  const doubledCsrs = new Map(await Promise.all(doubled.map(async (id) => [id, await routerCsrs(id)] as const)));
  const third = await batch('creating the third routers', range(Math.max(2, Math.floor(n / 2))).map(create));
  const doubleOutcomes = new Map<string, number[]>();
  await batch('enrolling, creating and deleting at once', [
    ...all.map(async (id) => {
      if (!doubled.includes(id)) return enrollOk(id, tokens.get(id)!, csrs.get(id)!);
      const [a, b] = await Promise.all([
        enroll(tokens.get(id)!, csrs.get(id)!),
        enroll(tokens.get(id)!, doubledCsrs.get(id)!),
      ]);
      doubleOutcomes.set(id, [a.status, b.status]);
      const winner = a.status === 200 ? a : b;
      if (winner.status === 200) enrolledWith.set(id, sha1(leafOf(winner.json.data.cert as string)));
      const loser = winner === a ? b : a;
      expect(loser.status, `second use of a token of ${id}: ${loser.text}`).toBe(400);
      expect(loser.json.error.code).toBe('INVALID_ENROLLMENT_TOKEN');
    }),
    ...third.map(async (id) => {
      const res = await admin({ method: 'DELETE', path: `/edge-routers/${id}` });
      expect(res.status, `delete of ${id}: ${res.text}`).toBe(200);
    }),
    ...range(2).map(async () => {
      const id = await create();
      const res = await admin({ method: 'DELETE', path: `/edge-routers/${id}` });
      expect(res.status, `delete of ${id}: ${res.text}`).toBe(200);
    }),
  ]);
  for (const [id, outcome] of doubleOutcomes)
    expect(outcome.sort(), `two uses of one token of ${id}`).toEqual([200, 400]);

  for (const id of all) expect(await detail(id)).toMatchObject({ isVerified: true, fingerprint: enrolledWith.get(id) });
  expect(await enrollmentsOf([...all, ...third])).toEqual([]);
  for (const id of third) expect((await admin({ path: `/edge-routers/${id}` })).status).toBe(404);
}
