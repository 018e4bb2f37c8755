import { afterAll, beforeAll, expect, it } from 'vitest';
import { type E2e, startE2e } from '../support/e2e.ts';
import { waitFor } from '../support/infra.ts';
import { type TcpBalancer, startTcpBalancer } from '../support/tcp-balancer.ts';
import {
  type EdgeAdmin,
  type ZitiPeers,
  adminLogin,
  createZitiPeers,
  describeWithZiti,
} from '../support/ziti-peers.ts';

/**
 * The router edge over two fabric replicas behind a TCP load balancer (as a Kubernetes Service
 * passes TLS through): a real router connects to one of them; that replica is killed; the router
 * reconnects through the balancer to the other, and nothing is lost: every terminator and API
 * session is still there (compared with a listing taken before), and the host's existing
 * terminator carries new dials without the host binding again.
 */
describeWithZiti('real routers over two fabric replicas', (ziti) => {
  let e: E2e;
  let peers: ZitiPeers;
  let admin: EdgeAdmin;
  let balancer: TcpBalancer;

  beforeAll(async () => {
    e = await startE2e({ replicas: { fabric: 2 } });
    peers = createZitiPeers({ ziti: ziti.path, prefix: 'routers-replicas' });
    admin = await adminLogin(e.cluster.baseUrl, e.cluster.adminUsername, e.cluster.adminPassword, {
      ca: e.caPems.join(''),
    });
    balancer = await startTcpBalancer(() => e.cluster.ctrlPorts().map((p) => p.port));
  });

  afterAll(async () => {
    await peers?.cleanup();
    await balancer?.close();
    await e?.stop();
  });

  const mgmt = (path: string) => e.call('management', { path, token: e.adminToken });
  const ids = (rows: { id: string }[]) => rows.map((r) => r.id).sort();

  it('the replica holding the router is killed: the router reconnects to the other, no terminator or API session is lost', async () => {
    const router = await peers.startRouter(admin, {
      ctrlEndpoint: `tls:127.0.0.1:${balancer.port}`,
      onlineTimeoutMs: 30_000,
    });
    const [host, client] = await Promise.all([
      admin.createIdentity({ name: `replicas-host-${Date.now()}` }),
      admin.createIdentity({ name: `replicas-client-${Date.now()}` }),
    ]);
    const [hostFile, clientFile] = await Promise.all([
      peers.enrollIdentity(host.enrollmentJwt, { name: 'host', keyAlg: 'EC' }),
      peers.enrollIdentity(client.enrollmentJwt, { name: 'client', keyAlg: 'EC' }),
    ]);
    const echo = await peers.startEchoServer();
    const service = await admin.createHostedService({
      name: `replicas-echo-${Date.now()}`,
      target: { address: echo.host, port: echo.port },
      hostIdentityIds: [host.id],
      clientIdentityIds: [client.id],
      edgeRouterIds: [router.id],
    });
    const tunnel = peers.runTunnelHost(hostFile, { name: 'tunnel-host' });
    await admin.waitForTerminator(service.serviceId, { processes: [tunnel, router.process], timeoutMs: 30_000 });
    const dial = async (name: string) => {
      const line = `${name} ${Date.now()}\n`;
      const r = await peers.zcat(clientFile, service.serviceName, line, { name });
      return r.code === 0 && r.stdout.toString('utf8') === line;
    };
    expect(await dial('zcat-before')).toBe(true);

    const terminatorsBefore = ids((await mgmt('/terminators?limit=500')).json.data);
    const apiSessionsBefore = ids((await mgmt('/api-sessions?limit=500')).json.data);
    expect(terminatorsBefore.length).toBeGreaterThan(0);
    // The replica the router's control channel goes to now.
    const [heldOn] = balancer.open();
    expect(heldOn).toBeDefined();
    const holder = e.cluster.ctrlPorts().find((p) => p.port === heldOn)!;
    const connectionsBefore = balancer.connections.length;
    await e.cluster.killReplica('fabric', holder.replica);

    // The router reconnects through the balancer, to the replica left.
    await waitFor(() => balancer.connections.length > connectionsBefore, 'the router to reconnect', 30_000, 100);
    expect(balancer.connections.at(-1)!.backend).not.toBe(heldOn);
    const online = await waitFor(
      async () => {
        const r = (await mgmt(`/edge-routers/${router.id}`)).json.data;
        return r.isOnline && r.syncStatus === 'SYNC_DONE' ? r : null;
      },
      'the router to be online and synchronised on the other replica',
      30_000,
      100,
    );
    expect(online.isOnline).toBe(true);
    // Dials resume through the terminator the host made before: nothing had to bind again.
    const resumedAt = Date.now();
    await waitFor(() => dial('zcat-after'), 'dials to resume', 10_000, 250);
    expect(Date.now() - resumedAt).toBeLessThan(10_000);
    expect(ids((await mgmt('/terminators?limit=500')).json.data)).toEqual(terminatorsBefore);
    expect(ids((await mgmt('/api-sessions?limit=500')).json.data)).toEqual(expect.arrayContaining(apiSessionsBefore));
  }, 240_000);
});
